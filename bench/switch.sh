#!/usr/bin/env bash
# bench/switch.sh: what the switch target costs next to linear, and what a
# table change costs.
#
# One run, side by side, on one raw file in /dev/shm.  A linear volume
# "lin" and a switch volume "sw" reach the same bytes: sw has three paths
# that all point at lin's extent (the multipath layout), 64 KiB regions,
# round-robin table, so the two differ only in their map().  Each workload
# runs on lin, sw, sw, lin (time-based) and the two runs of each are
# averaged, which cancels a steady drift of a shared machine:
#
#   rw512      8 jobs of 512-byte random read/write, O_DIRECT, psync  kIOPS
#   rand64K    4 jobs x QD32 random 64 KiB reads, libaio, O_DIRECT    MiB/s
#
# Then the admin side:
#
#   apply1M    switch-map --file with a million regions (4 GiB volume in
#              4 KiB regions), through the daemon, wall clock        ms
#   dump1M     switch-map --dump of that table                         ms
#   remap      rand64K on sw while a loop replaces its whole table
#              (8192 explicit arguments per message) back to back, and
#              the number of tables applied                            MiB/s
#   remap10    the same with about 10 tables a second                  MiB/s
#
# Environment: BENCH_SECONDS (default 5) per run.  Needs root (FUSE).
# Not run by CI.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
bin=$src/build/bin
secs=${BENCH_SECONDS:-5}
MiB=$((1024 * 1024))
size=$((512 * MiB))

[ -x "$bin/mapperfs" ] && [ -x "$bin/mapperctl" ] ||
	{ echo "bench/switch.sh: build first (cmake --build build)" >&2; exit 1; }
dir=$(mktemp -d /dev/shm/mapperfs-switch-bench.XXXXXX)
pool=$dir/pool
mnt=$dir/mnt
raw=$dir/raw.img
pid=
loop_pid=

cleanup()
{
	set +e
	[ -n "$loop_pid" ] && kill "$loop_pid" 2>/dev/null && wait "$loop_pid"
	if mountpoint -q "$mnt" 2>/dev/null; then
		fusermount3 -u "$mnt" || umount -l "$mnt"
	fi
	[ -n "$pid" ] && timeout 30 tail --pid="$pid" -f /dev/null
	rm -rf --one-file-system "$dir"
}
trap cleanup EXIT

ctl() { "$bin/mapperctl" "$@"; }
export MAPPERFS_POOL=$pool
ctl init >/dev/null
ctl device add "$raw" --create $((5 * 1024 * MiB)) --name raw >/dev/null
ctl create linear lin --size $size --on raw >/dev/null
ctl create switch sw --size $size --region-size 64K \
	--path raw:0 --path raw:0 --path raw:0 >/dev/null
ctl create switch sw1m --size 4G --region-size 4K \
	--path raw:0 --path raw:0 --path raw:0 >/dev/null
# Fill lin's extent, so that no run reads holes that tmpfs answers for free.
dd if=/dev/zero of="$raw" bs=1M seek=1 count=$((size / MiB)) conv=notrunc status=none
mkdir -p "$mnt"
"$bin/mapperfs" --pool "$pool" "$mnt" -o "transport=${BENCH_TRANSPORT:-auto}" 2>"$dir/mapperfs.err"
pid=$(cat "$pool/mapperfs.pid")

# fio_run NAME VOLUME ARGS...: one time-based workload, JSON on stdout.
fio_run()
{
	local name=$1 vol=$2

	shift 2
	fio --output-format=json --name="$name" --filename="$mnt/$vol" --size=$size \
		--direct=1 --time_based --runtime="$secs" --ramp_time=1 \
		--group_reporting "$@" 2>"$dir/fio.err"
}

rw512() { fio_run rw512 "$1" --rw=randrw --bs=512 --ioengine=psync --numjobs=8 |
	jq '(.jobs[0].read.iops + .jobs[0].write.iops) / 1000'; }
rand64K() { fio_run rand64K "$1" --rw=randread --bs=64K --ioengine=libaio \
	--iodepth=32 --numjobs=4 | jq '.jobs[0].read.bw / 1024'; }

mean() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (a + b) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

declare -A res
for w in rw512 rand64K; do
	echo "running $w ..." >&2
	l1=$($w lin); s1=$($w sw); s2=$($w sw); l2=$($w lin)
	res[$w,lin]=$(mean "$l1" "$l2")
	res[$w,sw]=$(mean "$s1" "$s2")
	res[$w,runs]=$(awk -v a="$l1" -v b="$l2" -v c="$s1" -v d="$s2" \
		'BEGIN { printf "lin %.1f %.1f, sw %.1f %.1f", a, b, c, d }')
done

echo "running apply1M and dump1M ..." >&2
# random paths: the worst case for the dump, which finds no repeats
awk -v n=$((1 << 20)) 'BEGIN { srand(1); print "0:2"; for (r = 1; r < n; r++) printf ":%x\n", int(rand() * 3) }' \
	>"$dir/million.map"
t0=$(date +%s%N)
ctl switch-map sw1m --file "$dir/million.map" >/dev/null
t1=$(date +%s%N)
ctl switch-map sw1m --dump >"$dir/dump"
t2=$(date +%s%N)
apply_ms=$(((t1 - t0) / 1000000))
dump_ms=$(((t2 - t1) / 1000000))
dump_args=$(wc -l <"$dir/dump")

echo "running remap ..." >&2
regions=$((size / (64 * 1024)))
for p in 0 1 2; do
	awk -v n=$regions -v p=$p 'BEGIN { for (r = 0; r < n; r++) printf "%x:%x\n", r, (r + p) % 3 }' \
		>"$dir/table$p"
done
# remap_loop PAUSE: applies the three tables in turn until killed,
# sleeping PAUSE seconds between two, counting in $dir/remaps.
remap_loop()
{
	local i=0

	while :; do
		ctl switch-map sw --file "$dir/table$((i % 3))" >/dev/null
		i=$((i + 1))
		echo "$i" >"$dir/remaps"
		sleep "$1"
	done
}

# remap_run PAUSE: rand64K on sw with remap_loop PAUSE beside it; prints
# "MiB/s tables".
remap_run()
{
	local bw

	echo 0 >"$dir/remaps"
	remap_loop "$1" &
	loop_pid=$!
	bw=$(rand64K sw)
	kill "$loop_pid"
	wait "$loop_pid" 2>/dev/null || true
	loop_pid=
	echo "$bw $(cat "$dir/remaps")"
}
read -r remap_bw remaps < <(remap_run 0)
read -r paced_bw paced < <(remap_run 0.1)

printf '\nswitch bench: %ss per run, %s, kernel %s, %s cores\n' "$secs" "$dir" "$(uname -r)" "$(nproc)"
printf '%-10s %12s %12s %8s   %s\n' workload linear switch ratio 'runs'
for w in rw512 rand64K; do
	printf '%-10s %12s %12s %8s   %s\n' "$w" "${res[$w,lin]}" "${res[$w,sw]}" \
		"$(ratio "${res[$w,sw]}" "${res[$w,lin]}")" "${res[$w,runs]}"
done
printf 'apply1M    %d ms (a million explicit arguments, %s)\n' "$apply_ms" \
	"$(numfmt --to=iec "$(stat -c %s "$dir/million.map")")"
printf 'dump1M     %d ms (%d arguments)\n' "$dump_ms" "$dump_args"
printf 'remap      %.1f MiB/s rand64K on sw while %d whole tables (%d regions each) were applied back to back in %ss (%.2f of sw alone)\n' \
	"$remap_bw" "$remaps" "$regions" "$((secs + 1))" "$(ratio "$remap_bw" "${res[rand64K,sw]}")"
printf 'remap10    %.1f MiB/s rand64K on sw while %d whole tables were applied, ~10 a second (%.2f of sw alone)\n' \
	"$paced_bw" "$paced" "$(ratio "$paced_bw" "${res[rand64K,sw]}")"
