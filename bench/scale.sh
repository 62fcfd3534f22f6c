#!/usr/bin/env bash
# bench/scale.sh: how a thin pool's costs grow with its mapped blocks
# (issue 22), and what 1e4 snapshots of one volume cost.
#
# For each count of BENCH_BLOCKS (default "1e5 1e6 1e7 1e8"), one thin
# volume mapping that many 64 KiB blocks is built without writing data:
# thin_dump XML is generated (range_mappings of 4096 blocks, virtual block
# = data block, so the XML stays ~2 MiB even at 1e8) and
# `mapperctl restore --force` takes it offline into an empty thin pool
# whose data area is a sparse raw file (as bench/restore.sh does; every
# mapped block is a hole and reads zeros).  Then, per count:
#
#   restore     offline `mapperctl restore` wall time, and its peak RSS
#   db          pool.db bytes after it (and per mapped block)
#   mount       `mapperfs` wall time: it daemonises once the mount serves,
#               so this is start-up until ready (pool.db warm in the page
#               cache, as restore left it); RSS: the daemon's VmRSS then
#   lat4K       fio random 4 KiB reads of the volume's file, QD1, psync,
#               O_DIRECT, BENCH_SECONDS (5) + 1 s ramp: p50 / p99 clat,
#               twice: the first pass right after the mount, when a leaf
#               loads at its first read (a miss, from pool.db in the page
#               cache), the second after it; and the daemon's RSS after
#               both.  The blocks are holes of the raw file: this measures
#               the map and FUSE, not a disk
#   snapshot    `mapperctl snapshot vol snap` (online, CLI round trip)
#   list        `mapperctl list`
#   diff        `mapperctl diff vol snap` after 16 scattered 64 KiB
#               direct writes to vol (each a copy-on-write)
#   remove      `mapperctl remove snap` (after those writes)
#               These four: BENCH_REPS (3) rounds, the median in the
#               table, every sample in the TSV
#   check       `mapperctl check` (first round, with the snapshot), and
#               the daemon's peak RSS during it (VmHWM, reset before
#               through /proc/PID/clear_refs)
#   dump        `mapperctl dump tp -o FILE` (likewise), the daemon's peak
#   stop        unmount until the daemon has exited (its closing commit)
#   cold mount  the mount again after pool.db's cached pages were dropped
#               (dd iflag=nocache: that file only), and the RSS then
#   budget      the daemon again with a budget of a tenth of the map
#               (-o cache_size: 2 KiB a leaf, so 0.4 B/block), and three
#               fio runs of BENCH_SECONDS, 4 KiB random reads at QD1 of
#               two regions of a quarter of the budget each, both loaded
#               first: "hits" over the first alone; then BENCH_BUDGET_REPS
#               (5) rounds, each of two runs side by side, in turn first:
#               hits beside the same reads of the second region (all
#               resident: the same load, no miss), and hits beside
#               "misses", the same reads over the whole volume (nine in
#               ten leaves not loaded).  A round's ratio is its hits' p99
#               beside misses over their p99 beside resident reads: a p99
#               on a shared machine of 2 CPUs moves by 2x from run to run
#               (a run that meets another job's burst), so a pair measured
#               seconds apart, and the median of the rounds, is the
#               figure.  p50 / p99 of each (the median over the rounds),
#               every round's ratio, the misses' IOPS, the evictions and
#               the RSS after
#
# mapperctl's own peak RSS (GNU time) is kept in the TSV for each command;
# online commands run in the daemon, so it stays small for them.
#
# Then, on the pool of BENCH_SNAP_BLOCKS (default 1e6) mapped blocks, while
# it is mounted: BENCH_SNAPSHOTS (default 10000) snapshots of the volume,
# one `mapperctl snapshot` each (`snapshot --group` refuses one origin
# twice), timed per batch of a tenth, with `list` and the daemon's RSS after
# each batch; then `remove` of each, likewise.  A per-op time that grows
# from batch to batch is what a quadratic step looks like.  BENCH_SNAPSHOTS=0
# skips it.
#
# A count is skipped, saying so, if the disk under BENCH_DIR has not 32
# bytes per block + 256 MiB free (pool.db is ~9 B/block; restore's journal
# and the dump come on top) or the machine's MemAvailable is under 40 bytes
# per block + 512 MiB (what the daemon held when the whole map was resident:
# ~9 B/block, ~28 during check; now under 1 B/block and its budget).
#
# Output: the tables on stdout, and in BENCH_OUT (default docs/; empty:
# stdout only) scale.tsv (a row per count), scale-snapshots.tsv (a row per
# batch), scale.txt (the tables) and scale.png (gnuplot: time and memory
# against mapped blocks, log scales; per-op snapshot times against the
# number of snapshots).
#
# The daemon's log warnings and errors (each distinct one, counted) are
# reported as notes.
#
# Environment: BENCH_BLOCKS, BENCH_REPS, BENCH_DIR (default /var/tmp: the
# disk's file system, not /dev/shm: pool.db at 1e8 is ~0.8 GB; a scratch
# directory is made in it and removed), BENCH_SECONDS, BENCH_SNAPSHOTS,
# BENCH_SNAP_BLOCKS, BENCH_BUDGET_REPS, BENCH_OUT.  BENCH_BLOCKS="1e5 1e6" BENCH_SNAPSHOTS=300
# runs in half a minute; the defaults in ~12 minutes (2 CPUs, ext4), 1e8
# taking ~1 min of it and the 1e4 snapshots ~8.  Needs root (FUSE), fio,
# jq, gnuplot, GNU time.  Not run by CI.  Everything it made (the mount,
# the daemon, scratch files) is undone on any exit, Ctrl-C included; the
# daemon is stopped by unmounting and, if it has not gone 30 s later,
# killed by its pid.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
bin=$src/build/bin
counts=${BENCH_BLOCKS:-1e5 1e6 1e7 1e8}
base=${BENCH_DIR:-/var/tmp}
secs=${BENCH_SECONDS:-5}
nsnaps=${BENCH_SNAPSHOTS:-10000}
snap_blocks=${BENCH_SNAP_BLOCKS:-1e6}
out=${BENCH_OUT-$src/docs}
run=4096	# blocks per range_mapping
spare=4096	# data blocks past the mapped ones: the copy-on-writes
reps=${BENCH_REPS:-3}	# rounds of snapshot, list, diff, remove
budget_reps=${BENCH_BUDGET_REPS:-5}	# rounds of hits beside resident reads and beside misses

for t in fio jq gnuplot /usr/bin/time fusermount3; do
	command -v "$t" >/dev/null ||
		{ echo "bench/scale.sh: needs $t (tests/lib/deps.sh: deps_install gnuplot-nox time)" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "bench/scale.sh: needs root (FUSE mounts)" >&2; exit 1; }
if [ ! -x "$bin/mapperfs" ] || [ ! -x "$bin/mapperctl" ]; then
	. "$src/tests/lib/deps.sh"
	deps_build build >/dev/null
fi
. "$src/bench/lib.sh"	# wait_gone, fio_json, workload_args

mkdir -p "$base"
dir=$(mktemp -d "$base/mapperfs-scale.XXXXXX")
pool='' mnt='' pid=''
notes=()

# stop_daemon: unmounts $mnt and waits for the daemon ($pid) to exit; kills
# it by its pid if it has not within 30 s.
stop_daemon()
{
	if [ -n "$mnt" ] && mountpoint -q "$mnt" 2>/dev/null; then
		fusermount3 -u "$mnt" || umount -l "$mnt"
	fi
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		if ! wait_gone "$pid"; then
			kill "$pid" 2>/dev/null
			wait_gone "$pid" || kill -9 "$pid" 2>/dev/null
		fi
	fi
	pid=
}

cleanup()
{
	set +e
	stop_daemon
	rm -rf --one-file-system "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

ctl() { "$bin/mapperctl" --pool "$pool" "$@"; }
now() { date +%s%N; }
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1e6 }'; }
num() { awk -v x="$1" 'BEGIN { printf "%.0f", x }'; }
load1() { cut -d' ' -f1 /proc/loadavg; }
note() { notes+=("$*"); echo "bench: $*" >&2; }
join() { local IFS=,; echo "$*"; }
# pair "P50 P99": two words, each "-" if missing.
pair() { set -- $1; echo "${1:--} ${2:--}"; }
# median X...: of the samples that are numbers; "" if none.
median() { printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
# log_notes N LOG: each distinct warning or error of the daemon's log, once,
# with its count (the scratch path cut out), as a note.
log_notes()
{
	local line

	while read -r line; do
		note "$1 blocks: the daemon logged $line"
	done < <(grep -E '^[^ ]+ (warning|error|critical): ' "$2" 2>/dev/null |
		cut -d' ' -f2- | sed "s|$dir/||g" | sort | uniq -c |
		awk '{ c = $1; $1 = ""; printf "%dx:%s\n", c, $0 }' | head -n 5)
}

# timed NAME CMD...: runs CMD under GNU time; sets $t_ms (wall, from
# date, to 0.1 ms) and $t_kib (its peak RSS).  Output in $dir/NAME.out
# and .err.  Returns CMD's status.
timed()
{
	local name=$1 t0 t1 rc=0

	shift
	[ "$1" = ctl ] && set -- "$bin/mapperctl" --pool "$pool" "${@:2}"
	t0=$(now)
	/usr/bin/time -f %M -o "$dir/$name.time" "$@" >"$dir/$name.out" 2>"$dir/$name.err" || rc=$?
	t1=$(now)
	t_ms=$(ms "$t0" "$t1")
	t_kib=$(tail -n 1 "$dir/$name.time")
	[[ $t_kib =~ ^[0-9]+$ ]] || t_kib=
	return "$rc"
}

# step NAME CMD...: timed, and on failure a note naming the error; the
# figures are then "fail".
step()
{
	local name=$1

	if ! timed "$@"; then
		note "$n blocks: $name failed: $(grep -v '^mapperctl: warning' "$dir/$name.err" | head -n 2 | tr '\n' ' ')"
		t_ms=fail t_kib=
		return 1
	fi
}

# daemon_kib FIELD: VmRSS or VmHWM of the daemon, KiB.
daemon_kib() { awk -v f="$1:" '$1 == f { print $2 }' "/proc/$pid/status" 2>/dev/null || true; }
# hwm_reset: the daemon's VmHWM starts again from its VmRSS.
hwm_reset() { echo 5 >"/proc/$pid/clear_refs" 2>/dev/null || true; }

# mount_pool: starts the daemon on $pool; sets $t_ms, $pid.
mount_pool()
{
	mkdir -p "$mnt"
	step mount "$bin/mapperfs" --pool "$pool" "$mnt" || return 1
	pid=$(cat "$pool/mapperfs.pid")
}

# gen_xml N: one device of N blocks, virtual block b on data block b, in
# range_mappings of $run.
gen_xml()
{
	awk -v n="$1" -v r="$run" -v spare="$spare" 'BEGIN {
		printf "<superblock uuid=\"\" time=\"0\" transaction=\"1\" flags=\"0\" version=\"2\" data_block_size=\"128\" nr_data_blocks=\"%d\">\n", n + spare
		printf "  <device dev_id=\"1\" mapped_blocks=\"%d\" transaction=\"0\" creation_time=\"0\" snap_time=\"0\">\n", n
		for (b = 0; b < n; b += r)
			printf "    <range_mapping origin_begin=\"%d\" data_begin=\"%d\" length=\"%d\" time=\"0\"/>\n", b, b, (n - b < r ? n - b : r)
		print "  </device>"
		print "</superblock>"
	}'
}

tsv=$dir/scale.tsv
stsv=$dir/scale-snapshots.tsv
printf 'blocks\txml_bytes\trestore_ms\trestore_cli_kib\tdb_bytes\tmount_ms\trss_kib\tfirst_p50_us\tfirst_p99_us\tsecond_p50_us\tsecond_p99_us\trss_after_kib\tsnapshot_ms\tlist_ms\tdiff_ms\tcheck_ms\tcheck_daemon_peak_kib\tcheck_cli_kib\tdump_ms\tdump_daemon_peak_kib\tdump_cli_kib\tdump_bytes\tremove_ms\tstop_ms\tcold_mount_ms\tcold_rss_kib\tload1\tsize_s\tsnapshot_samples\tlist_samples\tdiff_samples\tremove_samples\tbudget_bytes\thit_alone_p50_us\thit_alone_p99_us\thit_resident_p50_us\thit_resident_p99_us\thit_miss_p50_us\thit_miss_p99_us\tmiss_p50_us\tmiss_p99_us\tmiss_iops\tbudget_evictions\tbudget_rss_kib\tp99_ratios\n' >"$tsv"
printf 'phase\tsnapshots\tbatch\tms_per_op\tlist_ms\trss_kib\n' >"$stsv"

# batch_row PHASE SNAPSHOTS K T0: a batch of K calls that began at T0 is
# done, SNAPSHOTS now there: its time per call, then list's and the
# daemon's RSS, as a row of $stsv.
batch_row()
{
	local t1 per list rss

	t1=$(now)
	per=$(awk -v a="$4" -v b="$t1" -v k="$3" 'BEGIN { printf "%.2f", (b - a) / 1e6 / k }')
	step slist ctl list || return 1
	list=$t_ms
	rss=$(daemon_kib VmRSS)
	printf '%s\t%d\t%d\t%s\t%s\t%s\n' "$1" "$2" "$3" "$per" "$list" "$rss" >>"$stsv"
	echo "bench:   $2 snapshots after $1: $per ms per call, list $list ms, RSS $((rss / 1024)) MiB" >&2
}

# reads NAME OFF SIZE: fio's arguments for one job of 4 KiB random reads,
# QD1, of SIZE bytes of vol from OFF, BENCH_SECONDS after a second's ramp.
reads()
{
	echo --name="$1" --filename="$mnt/vol" --offset="$2" --size="$3" --rw=randread \
		--bs=4K --ioengine=psync --iodepth=1 --direct=1 --time_based --runtime="$secs" \
		--ramp_time=1
}

# latencies JSON JOB: "p50 p99" (us) of JOB in fio's JSON output.
latencies()
{
	jq -r --arg j "$2" '.jobs[] | select(.jobname == $j) | .read.clat_ns.percentile |
		"\(.["50.000000"] / 1000) \(.["99.000000"] / 1000)"' <<<"$1"
}

# medians "P50 P99"...: the median of each column of the pairs (or of
# single numbers); "-" for none.
medians()
{
	printf '%s\n' "$@" | python3 -c '
import statistics, sys
rows = [l.split() for l in sys.stdin.read().splitlines() if l.strip()]
cols = list(zip(*[r for r in rows if "null" not in r]))
print(" ".join("%g" % statistics.median(float(x) for x in c) for c in cols) or "-")'
}

# budget_reads N: the budget step (the header) on the pool of N blocks, not
# mounted; sets budget, hit_alone, hit_resident, hit_miss, miss (each "p50
# p99", the median over the rounds), miss_iops, evictions, budget_rss and
# p99_ratios (each round's, comma separated).
budget_reads()
{
	local leaves=$(( ($1 + 511) / 512 )) region j i k
	local -a fio_hits fio_other fio_misses resident=() beside=() misses=() iops=() ratios=()

	budget=$(( leaves * 2048 / 10 ))
	[ "$budget" -ge 2048 ] || budget=2048
	region=$(( budget / 2048 / 4 * 512 * 65536 ))
	[ "$region" -gt 0 ] || region=$((512 * 65536))
	mkdir -p "$mnt"
	step budget-mount "$bin/mapperfs" --pool "$pool" "$mnt" -o cache_size=$((budget / 1024))K ||
		return 1
	pid=$(cat "$pool/mapperfs.pid")
	# shellcheck disable=SC2207 # reads prints words without spaces
	fio_hits=($(reads hits 0 "$region")) fio_other=($(reads resident "$region" "$region"))
	# shellcheck disable=SC2207
	fio_misses=($(reads misses 0 $(( $1 * 65536 ))))
	fio "${fio_hits[@]}" "${fio_other[@]}" --runtime=2 --ramp_time=0 >/dev/null 2>&1	# loads both
	j=$(fio --output-format=json "${fio_hits[@]}" 2>"$dir/fio.err") || j=null
	hit_alone=$(latencies "$j" hits)
	for ((i = 0; i < budget_reps; i++)); do
		for k in $((i % 2)) $((1 - i % 2)); do
			if [ "$k" = 0 ]; then
				j=$(fio --output-format=json "${fio_hits[@]}" "${fio_other[@]}" \
					2>"$dir/fio.err") || j=null
				resident+=("$(latencies "$j" hits)")
			else
				j=$(fio --output-format=json "${fio_hits[@]}" "${fio_misses[@]}" \
					2>"$dir/fio.err") || j=null
				beside+=("$(latencies "$j" hits)") misses+=("$(latencies "$j" misses)")
				iops+=("$(jq -r '.jobs[] | select(.jobname == "misses") | .read.iops | floor' <<<"$j")")
			fi
			[ "$j" != null ] || break 2
		done
		ratios+=("$(awk -v a="${resident[i]#* }" -v b="${beside[i]#* }" 'BEGIN { printf "%.2f", b / a }')")
	done
	hit_resident=$(medians "${resident[@]}") hit_miss=$(medians "${beside[@]}")
	miss=$(medians "${misses[@]}") miss_iops=$(medians "${iops[@]}")
	p99_ratios=$(join "${ratios[@]}")
	evictions=$(ctl status tp --json | jq -r .cache_evictions)
	budget_rss=$(daemon_kib VmRSS)
	stop_daemon
	[ "$j" != null ] || note "$1 blocks: fio failed: $(head -c 200 "$dir/fio.err" | tr '\n' ' ')"
}

# snapshots N: $nsnaps snapshots of vol on the mounted pool, then removed.
snapshots()
{
	local batch=$(( (nsnaps + 9) / 10 )) i=0 done=0 k t0

	echo "bench: $1 blocks: $nsnaps snapshots of vol, in batches of $batch" >&2
	while [ "$done" -lt "$nsnaps" ]; do
		k=$(( nsnaps - done < batch ? nsnaps - done : batch ))
		t0=$(now)
		for ((i = done + 1; i <= done + k; i++)); do
			ctl snapshot vol "s$i" >/dev/null 2>"$dir/snap.err" ||
				{ note "$1 blocks: snapshot s$i failed: $(head -n 2 "$dir/snap.err" | tr '\n' ' ')"; return 1; }
		done
		done=$((done + k))
		batch_row create "$done" "$k" "$t0" || return 1
	done
	note "$1 blocks, $nsnaps snapshots: the pool's layout archive holds $(ls "$pool/archive" | wc -l) files, $(du -sk "$pool/archive" | cut -f1) KiB; the newest is $(stat -c %s "$(ls -d "$pool"/archive/* | tail -n 1)") bytes (the whole layout, written at every change)"
	while [ "$done" -gt 0 ]; do
		k=$(( done < batch ? done : batch ))
		t0=$(now)
		for ((i = done; i > done - k; i--)); do
			ctl remove "s$i" >/dev/null 2>"$dir/snap.err" ||
				{ note "$1 blocks: remove s$i failed: $(head -n 2 "$dir/snap.err" | tr '\n' ' ')"; return 1; }
		done
		done=$((done - k))
		batch_row remove "$done" "$k" "$t0" || return 1
	done
}

# one N: every figure of a pool of N mapped blocks, a row of $tsv.
one()
{
	local n=$1 need_disk need_mem avail_disk avail_mem xml t_start
	local restore restore_kib db mount rss p50='' p99='' p50b='' p99b='' rss_after='' snap='' list='' diff='' check='' check_peak='' check_kib=
	local dump='' dump_peak='' dump_kib='' dump_bytes='' remove='' stop='' cold='' cold_rss='' j b load r
	local budget='' hit_alone='' hit_resident='' hit_miss='' miss='' miss_iops='' evictions='' budget_rss=
	local p99_ratios=
	local snaps=() lists=() diffs=() removes=()

	need_disk=$(( (32 * n + 256 * 1048576) / 1024 ))
	avail_disk=$(df -Pk "$dir" | awk 'NR == 2 { print $4 }')
	need_mem=$(( (40 * n + 512 * 1048576) / 1024 ))
	avail_mem=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
	if [ "$avail_disk" -lt "$need_disk" ]; then
		note "$n blocks skipped: $((avail_disk / 1024)) MiB free under $dir, $((need_disk / 1024)) MiB needed"
		return 0
	fi
	if [ "$avail_mem" -lt "$need_mem" ]; then
		note "$n blocks skipped: $((avail_mem / 1024)) MiB of memory available, $((need_mem / 1024)) MiB needed"
		return 0
	fi
	t_start=$(now)
	load=$(load1)
	pool=$dir/pool-$n mnt=$dir/mnt-$n xml=$dir/in-$n.xml
	ctl init >/dev/null
	ctl device add "$dir/raw-$n" --create $(( (n + spare + 32) * 64 ))K --name r >/dev/null
	# metadata limit: a 4 KiB page per 512 blocks is 8 B/block; twice that
	ctl create thin-pool tp --size $(( (n + spare) * 64 ))K --low-water 0 \
		--metadata-limit $(( n * 16 / 1024 + 65536 ))K >/dev/null
	gen_xml "$n" >"$xml"

	echo "bench: $n blocks: restore ($(du -k "$xml" | cut -f1) KiB of XML)" >&2
	step restore ctl restore tp --from "$xml" --force --volume "1:vol:$((n * 64))K" || return 0
	restore=$t_ms restore_kib=$t_kib
	db=$(( $(stat -c %s "$pool/pool.db") + $(stat -c %s "$pool/pool.db-wal" 2>/dev/null || echo 0) ))

	mount_pool || return 0
	mount=$t_ms
	rss=$(daemon_kib VmRSS)
	echo "bench: $n blocks: restore $restore ms, pool.db $db B, mount $mount ms, RSS $rss KiB" >&2

	b=$((n * 65536))
	bytes=$b	# fio_json's --size
	# shellcheck disable=SC2046 # workload_args is a list of arguments
	j=$(fio_json lat4K "$mnt/vol" 0 1 $(workload_args lat4K))
	if [ "$j" = null ]; then
		note "$n blocks: fio failed: $(head -c 200 "$dir/fio.err" | tr '\n' ' ')"
	else
		read -r p50 p99 < <(jq -r '.jobs[0].read.clat_ns.percentile |
			"\(.["50.000000"] / 1000) \(.["99.000000"] / 1000)"' <<<"$j")
	fi
	# shellcheck disable=SC2046
	j=$(fio_json lat4K "$mnt/vol" 0 1 $(workload_args lat4K))
	[ "$j" = null ] || read -r p50b p99b < <(jq -r '.jobs[0].read.clat_ns.percentile |
		"\(.["50.000000"] / 1000) \(.["99.000000"] / 1000)"' <<<"$j")
	rss_after=$(daemon_kib VmRSS)

	# $reps rounds of: snapshot, list, 16 copy-on-writes scattered over
	# vol, diff, remove; check and dump in the first, with the snapshot
	# there.  The medians go in the table, every sample in the TSV.
	for ((r = 1; r <= reps; r++)); do
		step snapshot ctl snapshot vol snap && snaps+=("$t_ms")
		step list ctl list && lists+=("$t_ms")
		for i in $(seq 0 15); do
			dd if=/dev/urandom of="$mnt/vol" bs=64K count=1 seek=$(( i * (n / 16) + 7 )) \
				oflag=direct conv=notrunc status=none
		done
		step diff ctl diff vol snap && diffs+=("$t_ms")
		grep -q '^16 ranges' "$dir/diff.out" ||
			note "$n blocks: diff after 16 scattered writes said: $(tail -n 1 "$dir/diff.out")"
		if [ "$r" -eq 1 ]; then
			hwm_reset
			step check ctl check && check=$t_ms check_kib=$t_kib
			check_peak=$(daemon_kib VmHWM)
			hwm_reset
			step dump ctl dump tp -o "$dir/dump.xml" && dump=$t_ms dump_kib=$t_kib
			dump_peak=$(daemon_kib VmHWM)
			dump_bytes=$(stat -c %s "$dir/dump.xml" 2>/dev/null || echo 0)
			rm -f "$dir/dump.xml"
		fi
		step remove ctl remove snap && removes+=("$t_ms")
	done
	snap=$(median "${snaps[@]}") list=$(median "${lists[@]}")
	diff=$(median "${diffs[@]}") remove=$(median "${removes[@]}")

	[ "$(num "$snap_blocks")" = "$n" ] && [ "$nsnaps" -gt 0 ] && { snapshots "$n" || true; }

	t0=$(now)
	stop_daemon
	stop=$(ms "$t0" "$(now)")
	sync -f "$pool/pool.db"
	dd if="$pool/pool.db" iflag=nocache count=0 status=none
	if mount_pool; then
		cold=$t_ms
		cold_rss=$(daemon_kib VmRSS)
		stop_daemon
	fi
	echo "bench: $n blocks: a budget of a tenth of the map, hits and misses" >&2
	budget_reads "$n" || true
	log_notes "$n" "$pool/mapperfs.log"
	# shellcheck disable=SC2086,SC2183 # each latency pair is two columns
	printf '%d\t%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
		"$n" "$(stat -c %s "$xml")" "$restore" "$restore_kib" "$db" "$mount" "$rss" \
		"$p50" "$p99" "$p50b" "$p99b" "$rss_after" "$snap" "$list" "$diff" "$check" "$check_peak" "$check_kib" \
		"$dump" "$dump_peak" "$dump_kib" "$dump_bytes" "$remove" "$stop" "$cold" "$cold_rss" \
		"$load" "$(awk -v a="$t_start" -v b="$(now)" 'BEGIN { printf "%.0f", (b - a) / 1e9 }')" \
		"$(join "${snaps[@]}")" "$(join "${lists[@]}")" "$(join "${diffs[@]}")" \
		"$(join "${removes[@]}")" "$budget" $(pair "$hit_alone") $(pair "$hit_resident") \
		$(pair "$hit_miss") $(pair "$miss") "$miss_iops" "$evictions" "$budget_rss" \
		"${p99_ratios:--}" >>"$tsv"
	rm -rf --one-file-system "$pool" "$mnt" "$dir/raw-$n" "$xml"
	pool='' mnt=''
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
t_all=$(now)
for c in $counts; do
	one "$(num "$c")"
done
elapsed=$(awk -v a="$t_all" -v b="$(now)" 'BEGIN { printf "%.0f", (b - a) / 1e9 }')
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# The tables, from the TSVs.
table=$dir/table.txt
python3 - "$tsv" "$stsv" >"$table" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
head, rows = rows[0], rows[1:]
rows = [dict(zip(head, r)) for r in rows]

def f(v, scale=1.0, fmt="%.0f"):
    if v in ("", "fail", "-"):
        return v or "-"
    return fmt % (float(v) / scale)

def ms(v):
    if v in ("", "fail", "-"):
        return v or "-"
    x = float(v)
    return "%.0f" % x if x >= 100 else "%.1f" % x

def blocks(n):
    n = int(n)
    e = len(str(n)) - 1
    return "1e%d" % e if n == 10 ** e else str(n)

print("Time, ms (wall, CLI round trip included; mount: until it serves):")
print()
cols = [("restore", "restore_ms"), ("mount", "mount_ms"), ("cold mount", "cold_mount_ms"),
        ("snapshot", "snapshot_ms"), ("remove snap", "remove_ms"), ("list", "list_ms"),
        ("diff", "diff_ms"), ("check", "check_ms"), ("dump", "dump_ms"), ("stop", "stop_ms")]
print("| blocks | " + " | ".join(c for c, _ in cols) + " |")
print("|---" * (len(cols) + 1) + "|")
for r in rows:
    print("| %s | %s |" % (blocks(r["blocks"]), " | ".join(ms(r[k]) for _, k in cols)))
print()
print("Size and memory (RSS: after the mount; after: after the two read passes),")
print("and 4 KiB QD1 random read latency, us: the first pass after the mount")
print("(each leaf loads at its first read) and the second:")
print()
print("| blocks | pool.db MiB | B/block | RSS MiB | B/block | RSS after MiB | cold RSS MiB | check peak MiB | dump peak MiB | restore CLI peak MiB | first p50 / p99 | second p50 / p99 |")
print("|---" * 12 + "|")
for r in rows:
    n = float(r["blocks"])
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s |" % (
        blocks(r["blocks"]), f(r["db_bytes"], 2**20, "%.1f"), f(r["db_bytes"], n, "%.1f"),
        f(r["rss_kib"], 1024, "%.1f"), f(r["rss_kib"], n / 1024, "%.1f"),
        f(r["rss_after_kib"], 1024, "%.1f"),
        f(r["cold_rss_kib"], 1024, "%.1f"), f(r["check_daemon_peak_kib"], 1024, "%.1f"),
        f(r["dump_daemon_peak_kib"], 1024, "%.1f"), f(r["restore_cli_kib"], 1024, "%.1f"),
        f(r["first_p50_us"], 1, "%.1f"), f(r["first_p99_us"], 1, "%.1f"),
        f(r["second_p50_us"], 1, "%.1f"), f(r["second_p99_us"], 1, "%.1f")))

print()
print("A budget of a tenth of the map (-o cache_size), 4 KiB QD1 random reads, p50 / p99 us:")
print("hits over a resident region alone; beside the same reads of a second resident")
print("region (the same load, no miss); beside misses over the whole volume; the misses;")
print("each the median over the rounds; ratio: the hits' p99 beside misses over their")
print("p99 beside resident reads in the same round, the median of the rounds (their range):")
print()
print("| blocks | budget MiB | hits alone | hits beside resident | hits beside misses | p99 ratio | misses | miss IOPS | evictions | RSS after MiB |")
print("|---" * 10 + "|")
for r in rows:
    ratio = "-"
    ratios = [float(x) for x in r.get("p99_ratios", "-").split(",") if x not in ("", "-")]
    if ratios:
        ratio = "%.2f (%.2f-%.2f)" % (statistics.median(ratios), min(ratios), max(ratios))
    lat = lambda k: "%s / %s" % (f(r[k + "_p50_us"], 1, "%.1f"), f(r[k + "_p99_us"], 1, "%.1f"))
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        blocks(r["blocks"]), f(r["budget_bytes"], 2**20, "%.2f"), lat("hit_alone"),
        lat("hit_resident"), lat("hit_miss"), ratio, lat("miss"), f(r["miss_iops"]),
        f(r["budget_evictions"]), f(r["budget_rss_kib"], 1024, "%.1f")))

srows = [l.split("\t") for l in open(sys.argv[2]).read().splitlines()][1:]
if srows:
    print()
    print("Snapshots of one volume, one mapperctl call each (ms per call in each batch;")
    print("list and the daemon's RSS after the batch):")
    print()
    print("| phase | snapshots after | ms per call | list ms | RSS MiB |")
    print("|---|---|---|---|---|")
    for p, s, b, per, l, rss in srows:
        print("| %s | %s | %s | %s | %.1f |" % (p, s, per, ms(l), float(rss) / 1024))
    for p in ("create", "remove"):
        ps = [r for r in srows if r[0] == p]
        if ps:
            tot = sum(float(r[2]) * float(r[3]) for r in ps) / 1000
            print()
            print("%s: %d calls, %.1f s in all; first batch %s ms per call, last %s" % (
                p, sum(int(r[2]) for r in ps), tot, ps[0][3], ps[-1][3]))
PY

report()
{
	cat "$table"
	for m in "${notes[@]}"; do
		printf '\nnote: %s' "$m"
	done
	[ "${#notes[@]}" -eq 0 ] || printf '\n'
}

printf '\nmapperfs scale bench: BENCH_BLOCKS="%s", scratch in %s (%s),\n' "$counts" "$base" \
	"$(df -PT "$base" | awk 'NR == 2 { print $2 }')"
printf 'kernel %s, %s CPUs, %s GiB of memory; %s s in all\n' "$(uname -r)" "$(nproc)" \
	"$(awk '/^MemTotal:/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo)" "$elapsed"
printf 'load average before: %s, after: %s\n\n' "$load_before" "$load_after"
report

[ -n "$out" ] || exit 0
mkdir -p "$out"
cp "$tsv" "$out/scale.tsv"
cp "$stsv" "$out/scale-snapshots.tsv"
{
	printf 'bench/scale.sh: BENCH_BLOCKS="%s" BENCH_SNAPSHOTS=%s BENCH_SNAP_BLOCKS=%s, %s s per fio run,\n' \
		"$counts" "$nsnaps" "$snap_blocks" "$secs"
	printf 'scratch in %s (%s); kernel %s, %s CPUs, %s GiB; %s; %s s in all\n' "$base" \
		"$(df -PT "$base" | awk 'NR == 2 { print $2 }')" "$(uname -r)" "$(nproc)" \
		"$(awk '/^MemTotal:/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo)" \
		"$(date -u '+%Y-%m-%d %H:%M UTC')" "$elapsed"
	printf 'load average before: %s, after: %s\n\n' "$load_before" "$load_after"
	report
} >"$out/scale.txt"

# The chart: time of each step and memory against mapped blocks (log-log),
# and the per-call snapshot times against the number of snapshots.
awk -F'\t' 'NR > 1 { for (i = 1; i <= NF; i++) if ($i == "" || $i == "fail" || $i == "-") $i = "NaN"; print }' \
	OFS='\t' "$tsv" >"$dir/chart.dat"
awk -F'\t' 'NR > 1' "$stsv" >"$dir/snap.dat"
have_snaps=$([ -s "$dir/snap.dat" ] && echo 1 || echo 0)
[ -s "$dir/chart.dat" ] || { echo "bench: no figures, no chart" >&2; exit 1; }
gnuplot <<EOF
set terminal pngcairo size $((have_snaps ? 1500 : 1000)),500 font "DejaVu Sans,10" noenhanced
set output "$out/scale.png"
set multiplot layout 1,$((have_snaps ? 3 : 2)) title "mapperfs thin pool at scale: one volume of N mapped 64 KiB blocks ($(uname -r), $(nproc) vCPUs, $(df -PT "$base" | awk 'NR == 2 { print $2 }'))"
set datafile separator "\t"
set datafile missing "NaN"
set logscale x
set logscale y
set grid
set key below
set xlabel "mapped blocks"
set format x "10^{%L}"
set format x "1e%L"
set title "time"
set ylabel "ms"
plot "$dir/chart.dat" using 1:3 with linespoints title "restore (offline)", \
     "" using 1:6 with linespoints title "mount (warm)", \
     "" using 1:25 with linespoints title "mount (cold pool.db)", \
     "" using 1:13 with linespoints title "snapshot", \
     "" using 1:23 with linespoints title "remove snapshot", \
     "" using 1:14 with linespoints title "list", \
     "" using 1:15 with linespoints title "diff", \
     "" using 1:16 with linespoints title "check", \
     "" using 1:19 with linespoints title "dump"
set title "memory and size"
set ylabel "MiB"
plot "$dir/chart.dat" using 1:(\$7 / 1024) with linespoints title "daemon RSS after mount", \
     "" using 1:(\$12 / 1024) with linespoints title "daemon RSS after two read passes", \
     "" using 1:(\$17 / 1024) with linespoints title "daemon peak during check", \
     "" using 1:(\$20 / 1024) with linespoints title "daemon peak during dump", \
     "" using 1:(\$5 / 1048576) with linespoints title "pool.db", \
     "" using 1:(\$4 / 1024) with linespoints title "restore (mapperctl) peak"
if ($have_snaps) {
	unset logscale
	set format x "%g"
	set xlabel "snapshots existing after the batch"
	set title "$nsnaps snapshots of one volume of $snap_blocks blocks"
	set ylabel "ms per mapperctl call"
	set y2label "list, s"
	set yrange [0:*]
	set y2range [0:*]
	set ytics nomirror
	set y2tics
	set key inside top left
	plot "$dir/snap.dat" using (strcol(1) eq "create" ? \$2 : NaN):4 with linespoints title "snapshot, per call", \
	     "" using (strcol(1) eq "remove" ? \$2 : NaN):4 with linespoints title "remove, per call", \
	     "" using (strcol(1) eq "create" ? \$2 : NaN):(\$5 / 1000) axes x1y2 with linespoints title "list after a create batch (right)", \
	     "" using (strcol(1) eq "remove" ? \$2 : NaN):(\$5 / 1000) axes x1y2 with linespoints title "list after a remove batch (right)"
}
unset multiplot
EOF
echo "bench: wrote $out/scale.{tsv,txt,png} and scale-snapshots.tsv" >&2
