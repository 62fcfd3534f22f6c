#!/usr/bin/env bash
# bench/fresh.sh: mapperfs as a user first meets it, against the raw file
# and against a naive libfuse daemon, with every daemon started fresh for
# every case (issue 24).
#
# Our other benches start one daemon and keep it for the whole run, so
# whatever a daemon pays once (mapping a device, faulting its pages in,
# growing its threads and buffers) is paid before the first sample.  An
# outside harness started each peer afresh for each case and saw far
# worse ratios.  Here a case is (rep, workload, target): the daemon
# serving the target is started (it returns once mounted), the workload
# runs, and the daemon is stopped (unmounted, then waited for by its pid).
# With BENCH_MODE=warm every daemon is started once before the first case
# and stopped after the last, as in bench/run.sh, so both can be reported.
#
# The raw backing is BENCH_SIZE (1 GiB) of random data, never zeros (a
# file system may answer zeros for free), in /dev/shm (a ramdisk: the
# mapping layer's cost shows) or, with BENCH_BACKING=disk, in a directory
# under /var/tmp (the root file system's disk).  The targets:
#
#   raw      the raw file's data area (after its 1 MiB label), O_DIRECT
#   naive    bench/naive.c (mapperfs-naive-bench) serving that same area:
#            libfuse's high-level API, its default multi-threaded loop,
#            one buffered pread/pwrite per request, direct_io opens.  On
#            disk its reads and writes go through the page cache, as a
#            naive author's do, so there it is not a like-for-like floor;
#            in fresh mode the raw files' cached pages are dropped before
#            every case, so that it starts each cold, as a new daemon on
#            a host that has not read the disk yet would (within a case
#            it gains from what it cached)
#   lin      a mapperfs linear volume that is exactly that area, over
#            io_uring (pool u, which holds thin, snap and switch too)
#   lin-d    a linear volume over /dev/fuse: pool d, its own raw file
#            holding a copy of the data (one pool has one daemon, and the
#            warm mode needs both transports up at once)
#   thin     a fully provisioned thin volume of pool u (its thin pool on
#            the same raw file), written once with the random data
#   snap     a snapshot of thin taken just before each of its cases and
#            removed after, so every case meets a snapshot that shares
#            every block with its origin: reads through shared blocks,
#            and in rw512 and loop512 the copy-on-write of first writes.
#            thin itself is never measured with a snapshot beside it
#   switch   a switch volume of pool u: two paths placed on the same
#            extent (the multipath layout of bench/switch.sh), 64 KiB
#            regions alternating between them, filled with the data
#   qsd      qemu-storage-daemon's FUSE export of the raw area, if
#            installed (package qemu-system-common)
#
# thin, snap and switch are served over io_uring.  The workloads (fio,
# time-based, 1 s ramp, as bench/run.sh):
#
#   seq1M    sequential 1 MiB reads, QD1, O_DIRECT, psync         MiB/s
#   first1M  the same, one pass over the whole target, neither timed
#            nor ramped: in fresh mode a new daemon's first pass over
#            the data, which the ramp and the time limit of seq1M
#            mostly hide (in warm mode the daemon has read it before)
#   rand64K  random 64 KiB reads, 4 jobs x QD32, libaio, O_DIRECT  MiB/s
#   rw512    random 512 B read/write, 8 jobs, O_DIRECT, psync     kIOPS
#   lat4K    random 4 KiB reads, QD1, O_DIRECT: p50 / p99 clat     usec
#   loop64K  rand64K on a direct-I/O loop device (512-byte sectors) on
#            the target, attached once its daemon runs and detached
#            before it stops; for raw, a loop device on the data area
#            (losetup --offset --sizelimit), the loop rows' baseline
#   loop512  rw512 on such a loop device
#
# Interleaved: rep 1 of every workload on every target, then rep 2, so the
# rest of a shared machine's load falls on every target alike; every
# ratio is taken within one rep (both sides measured minutes apart at
# most) and the table gives the median over reps.
#
# Output: the table on stdout, and in BENCH_OUT (default docs/; empty: the
# table only) bench-MODE-BACKING.tsv (every sample), .txt (the tables)
# and .png (a chart of the speeds relative to raw, gnuplot).
#
# Environment: BENCH_MODE (fresh or warm, default fresh), BENCH_BACKING
# (shm or disk, default shm), BENCH_SECONDS (default 5) per sample,
# BENCH_REPS (default 3), BENCH_SIZE (default 1G, a multiple of 1 MiB),
# BENCH_OUT, and BENCH_WORKLOADS and BENCH_TARGETS (space-separated
# subsets of the lists above; raw is the base of every ratio).
# BENCH_SECONDS=2 BENCH_REPS=1 runs in a few minutes.
# Needs root (FUSE, loop devices).  Not run by CI.  Everything it made
# (loop devices, mounts, daemons, scratch files) is undone on any exit,
# Ctrl-C included.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
bin=$src/build/bin
secs=${BENCH_SECONDS:-5}
size=${BENCH_SIZE:-1G}
reps=${BENCH_REPS:-3}
mode=${BENCH_MODE:-fresh}
backing=${BENCH_BACKING:-shm}
out=${BENCH_OUT-$src/docs}
name=bench-$mode-$backing

case $mode in
fresh | warm) ;;
*) echo "bench/fresh.sh: BENCH_MODE is fresh or warm, not '$mode'" >&2; exit 2 ;;
esac

. "$src/bench/lib.sh"
bench_setup
[ -x "$bin/mapperfs-naive-bench" ] || deps_build build >/dev/null
if ((bytes % MiB)); then
	echo "bench/fresh.sh: BENCH_SIZE ($size) is not a multiple of 1 MiB" >&2
	exit 2
fi
started=$SECONDS
read -ra workloads <<<"${BENCH_WORKLOADS:-seq1M first1M rand64K rw512 lat4K loop64K loop512}"
read -ra targets <<<"${BENCH_TARGETS:-raw naive lin lin-d thin snap switch qsd}"
for t in "${targets[@]}"; do
	case $t in
	raw | naive | lin | lin-d | thin | snap | switch | qsd) ;;
	*) echo "bench/fresh.sh: BENCH_TARGETS: no target '$t'" >&2; exit 2 ;;
	esac
done
for w in "${workloads[@]}"; do
	case $w in
	seq1M | first1M | rand64K | rw512 | lat4K | loop64K | loop512) ;;
	*) echo "bench/fresh.sh: BENCH_WORKLOADS: no workload '$w'" >&2; exit 2 ;;
	esac
done
if [[ " ${targets[*]} " == *" qsd "* ]] && ! command -v qemu-storage-daemon >/dev/null; then
	read -ra targets <<<"${targets[*]/qsd/}"
	notes+=("qemu-storage-daemon is not installed (qemu-system-common): no qsd column")
fi
cases=$((reps * ${#workloads[@]} * ${#targets[@]}))
# Per case, besides the sample and its ramp: fio's start and, in fresh
# mode, a daemon's start and stop: about a second in all on the 2-CPU VM.
printf 'bench/fresh.sh: %s mode, %s backing in %s: %d cases of %ss, about %d min, after a setup of\n' \
	"$mode" "$backing" "$dir" "$cases" "$secs" $(((cases * (secs + 2) + 59) / 60)) >&2
printf 'about %d s (random data, copies, thin written)\n' $((bytes / MiB / 64 + 5)) >&2

ctl() { MAPPERFS_POOL=$dir/$1.pool "$bin/mapperctl" "${@:2}" >/dev/null; }
raw=$dir/raw.img
mb=$((bytes / MiB))

# The raw file: the data area is [0, size) random (raw, naive, qsd and
# lin), then the switch's extent [size, 2 size), a copy of it, then the
# thin pool's data area: room for thin's blocks and for as many again
# that the snapshot's first writes copy.  All of it is written (the thin
# pool's area with zeros), as a disk's or a partition's blocks all exist,
# and the thin pool passes no discard down, so that it stays so when
# snap is removed: a sparse raw file would add the host file system's
# cost of filling a hole (tmpfs: a page allocated and cleared) to every
# first write of thin and snap, a cost mapperfs does not add.
ctl u init
ctl u device add "$raw" --create $((MiB + 4 * bytes + 64 * MiB)) --name raw
ctl u create linear lin --segment "raw:0:$bytes"
ctl u create switch sw --size "$bytes" --region-size 64K --path "raw:$bytes" --path "raw:$bytes"
ctl u create thin-pool tp --size $((2 * bytes + 64 * MiB)) --on raw --no-discard-passdown
ctl u create thin th --pool tp --size "$bytes"
# The copies go direct, so that on disk no dirty page cache is left to
# flush under the first cases.
raw_direct=1
iflag=(iflag=direct)
oflag=(oflag=direct)
if ! dd if="$raw" of=/dev/null bs=4096 count=1 iflag=direct status=none 2>/dev/null; then
	raw_direct=0
	iflag=()
	oflag=()
	notes+=("$raw does not take O_DIRECT: the raw column and the copies are buffered")
fi
# copy FILE SEEK_MIB: the raw area into FILE at SEEK_MIB.
copy() { dd if="$raw" of="$1" bs=1M skip=1 seek="$2" count="$mb" conv=notrunc \
	"${iflag[@]}" "${oflag[@]}" status=none; }
dd if=/dev/urandom of="$raw" bs=1M seek=1 count="$mb" iflag=fullblock conv=notrunc \
	"${oflag[@]}" status=none
copy "$raw" $((1 + mb))
dd if=/dev/zero of="$raw" bs=1M seek=$((1 + 2 * mb)) count=$((2 * mb + 64)) conv=notrunc \
	"${oflag[@]}" status=none
ctl d init
ctl d device add "$dir/raw-d.img" --create $((MiB + bytes)) --name raw
ctl d create linear lin --segment "raw:0:$bytes"
copy "$dir/raw-d.img" 1

declare -A server=([naive]=naive [lin]=u [lin-d]=d [thin]=u [snap]=u [switch]=u [qsd]=qsd)
declare -A transport=([u]=io_uring [d]=dev-fuse)
declare -A via=([u]=io_uring [d]=/dev/fuse)
declare -A pidfile=([u]=$dir/u.pool/mapperfs.pid [d]=$dir/d.pool/mapperfs.pid
	[naive]=$dir/naive.pid)
declare -A file=([raw]=$raw [naive]=$dir/naive.mnt/vol [lin]=$dir/u.mnt/lin
	[lin-d]=$dir/d.mnt/lin [thin]=$dir/u.mnt/th [snap]=$dir/u.mnt/snap
	[switch]=$dir/u.mnt/sw [qsd]=$dir/qsd.export)
declare -A offset=([raw]=$MiB)
declare -A fio_direct=([raw]=$raw_direct)
declare -A up=()
for s in u d naive; do
	mkdir -p "$dir/$s.mnt"
	mnts+=("$dir/$s.mnt")
	pidfiles+=("${pidfile[$s]}")
done
qsd_pidfile=$dir/qsd.pid
: >"$dir/qsd.export"

# server_start SERVER: mounts what serves u, d, naive or qsd; each
# returns once its mount is ready.
server_start()
{
	local s=$1 line

	case $s in
	u | d)
		"$bin/mapperfs" --pool "$dir/$s.pool" "$dir/$s.mnt" -o "transport=${transport[$s]}"
		line=$(grep 'serving pool' "$dir/$s.pool/mapperfs.log" | tail -n 1)
		if [[ $line != *" over ${via[$s]}"* ]]; then
			echo "bench/fresh.sh: pool $s is not served over ${via[$s]}: $line" >&2
			exit 1
		fi
		;;
	naive)
		"$bin/mapperfs-naive-bench" -o "backing=$raw,offset=$MiB,size=$bytes,name=vol" \
			-o "pidfile=${pidfile[naive]}" "$dir/naive.mnt" >>"$dir/naive.log" 2>&1
		;;
	qsd)
		qemu-storage-daemon --daemonize --pidfile "$qsd_pidfile" \
			--blockdev "driver=file,node-name=f,filename=$raw,cache.direct=$([ "$raw_direct" = 1 ] && echo on || echo off)" \
			--blockdev "driver=raw,node-name=r,file=f,offset=$MiB,size=$bytes" \
			--export "type=fuse,id=e,node-name=r,mountpoint=$dir/qsd.export,writable=on" \
			>>"$dir/qsd.log" 2>&1
		qsd_pid=$(cat "$qsd_pidfile")
		;;
	esac
	up[$s]=1
}

# server_stop SERVER: unmounts (qsd: kills) and waits for the daemon to
# have exited, so the next start finds the pool and the files let go.
server_stop()
{
	local s=$1 pid

	if [ "$s" = qsd ]; then
		pid=$qsd_pid
		kill "$pid"
	else
		pid=$(cat "${pidfile[$s]}")
		fusermount3 -u "$dir/$s.mnt"
	fi
	wait_gone "$pid" || { echo "bench/fresh.sh: $s (pid $pid) did not exit within 30 s" >&2; exit 1; }
	[ "$s" = qsd ] && qsd_pid=
	rm -f "${pidfile[$s]:-$qsd_pidfile}"
	unset 'up[$s]'
}

# thin: written once, whole, with the random data, through the daemon.
server_start u
dd if="$raw" of="${file[thin]}" bs=1M skip=1 count="$mb" conv=notrunc oflag=direct \
	"${iflag[@]}" status=none
if [ "$mode" = warm ]; then
	server_start d
	server_start naive
	[[ " ${targets[*]} " != *" qsd "* ]] || server_start qsd
else
	server_stop u
fi

# wait_closed VOLUME: returns once the warm daemon counts no open file on
# VOLUME of pool u, or fails after 30 s.  close(2) returns before the
# daemon hears of it (the kernel sends FUSE's RELEASE in the background),
# so a `remove` right after a case may find the volume still open; the
# daemon's own count is the only signal, so this asks it every 10 ms.
wait_closed()
{
	local i

	for ((i = 0; i < 3000; i++)); do
		[ "$(MAPPERFS_POOL=$dir/u.pool "$bin/mapperctl" status "$1" --json | jq .open)" = 0 ] &&
			return 0
		sleep 0.01
	done
	echo "bench/fresh.sh: volume $1 is still open 30 s after its case" >&2
	return 1
}

# run_case WORKLOAD TARGET: one sample; sets $value (and $p99 for lat4K),
# "null" if fio failed.
run_case()
{
	local w=$1 t=$2 s=${server[$2]:-} f=${file[$2]} off=${offset[$2]:-0} d=${fio_direct[$2]:-1}
	local loop='' fw=$1 j

	[ "$t" = snap ] && ctl u snapshot th snap --active
	if [ "$backing" = disk ] && [ "$mode" = fresh ]; then
		dd if="$raw" iflag=nocache count=0 status=none
		dd if="$dir/raw-d.img" iflag=nocache count=0 status=none
	fi
	[ -z "$s" ] || [ -n "${up[$s]:-}" ] || server_start "$s"
	case $w in
	loop64K | loop512)
		if [ "$t" = raw ]; then
			attach "$raw" --offset "$MiB" --sizelimit "$bytes"
		else
			attach "$f"
		fi
		loop=$dev f=$dev off=0 d=1
		fw=$([ "$w" = loop64K ] && echo rand64K || echo rw512)
		;;
	esac
	# shellcheck disable=SC2046 # workload_args is a list of arguments
	j=$(fio_json "$w" "$f" "$off" "$d" $(workload_args "$fw"))
	[ -z "$loop" ] || detach "$loop"
	[ "$mode" = warm ] || [ -z "$s" ] || server_stop "$s"
	if [ "$t" = snap ]; then
		[ "$mode" = fresh ] || wait_closed snap
		ctl u remove snap
	fi
	p99=
	case $fw in
	seq1M | first1M | rand64K) value=$(jq '.jobs[0].read.bw / 1024' <<<"$j") ;;
	rw512) value=$(jq '(.jobs[0].read.iops + .jobs[0].write.iops) / 1000' <<<"$j") ;;
	lat4K) read -r value p99 < <(jq -r '.jobs[0].read.clat_ns.percentile |
		"\(.["50.000000"] / 1000) \(.["99.000000"] / 1000)"' <<<"$j") ;;
	esac
	if [ "$value" = null ]; then
		notes+=("rep $rep: $w on $t failed: $(head -c 200 "$dir/fio.err" | tr '\n' ' ')")
	fi
	return 0
}

load() { cut -d' ' -f1-3 /proc/loadavg; }

tsv=$dir/bench.tsv
printf 'rep\tworkload\ttarget\tvalue\tp99\tload1\n' >"$tsv"
load_before=$(load)
measuring=$SECONDS
for ((rep = 1; rep <= reps; rep++)); do
	for w in "${workloads[@]}"; do
		for t in "${targets[@]}"; do
			echo "rep $rep/$reps: $w on $t ..." >&2
			run_case "$w" "$t"
			printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$w" "$t" "$value" "$p99" \
				"$(cut -d' ' -f1 /proc/loadavg)" >>"$tsv"
		done
	done
done
load_after=$(load)
elapsed=$((SECONDS - started))
measured=$((SECONDS - measuring))

# The tables: per workload and target, the median over reps of the
# target's speed relative to raw in the same rep (throughput / raw's, or
# raw's latency / the latency: below 1 is slower, for every row), and of
# each mapperfs volume's speed relative to naive and to linear; then the
# range of the per-rep ratios to raw.
table=$dir/bench.txt
python3 - "$tsv" "$reps" "${targets[*]}" "${workloads[*]}" >"$table" <<'PY'
import statistics, sys
tsv, reps, present, measured = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
val, p99 = {}, {}
for line in open(tsv).read().splitlines()[1:]:
    rep, w, t, v, q = line.split("\t")[:5]
    if v not in ("", "null"):
        val[int(rep), w, t] = float(v)
    if q not in ("", "null"):
        p99[int(rep), w, t] = float(q)
works = [("seq1M", "seq 1 MiB read, MiB/s"), ("first1M", "first pass, seq 1 MiB read, MiB/s"),
         ("rand64K", "4 x QD32 64 KiB randread, MiB/s"),
         ("rw512", "8 x 512 B randrw, kIOPS"), ("lat4K", "4 KiB QD1 read p50 / p99, us"),
         ("loop64K", "loop: 4 x QD32 64 KiB randread, MiB/s"),
         ("loop512", "loop: 8 x 512 B randrw, kIOPS")]
works = [(w, label) for w, label in works if w in measured]
cols = [("raw", "raw"), ("naive", "naive"), ("lin", "linear io_uring"),
        ("lin-d", "linear /dev/fuse"), ("thin", "thin"), ("snap", "snapshot"),
        ("switch", "switch"), ("qsd", "qsd")]
mapperfs = ("lin", "lin-d", "thin", "snap", "switch")
reps_ = range(1, reps + 1)

def speeds(w, t, base):
    rs = []
    for r in reps_:
        a, b = val.get((r, w, t)), val.get((r, w, base))
        if a and b:
            rs.append(b / a if w == "lat4K" else a / b)
    return rs

def med(xs):
    return statistics.median(xs) if xs else None

def absolute(w, t):
    v = med([val[r, w, t] for r in reps_ if (r, w, t) in val])
    if v is None:
        return None
    if w == "lat4K":
        q = med([p99[r, w, t] for r in reps_ if (r, w, t) in p99])
        return "%.1f / %.0f" % (v, q or 0)
    return "%.1f" % v if w in ("rw512", "loop512") else "%.0f" % v

def cell(w, t):
    if t not in present:
        return "n/a"
    a = absolute(w, t)
    if a is None:
        return "failed"
    if t == "raw":
        return a
    s = "%.2f" % med(speeds(w, t, "raw")) if speeds(w, t, "raw") else "-"
    if w in ("rw512", "loop512", "lat4K"):
        s = a + ": " + s
    more = []
    if t in mapperfs and speeds(w, t, "naive"):
        more.append("n %.2f" % med(speeds(w, t, "naive")))
    if t in ("thin", "snap", "switch") and speeds(w, t, "lin"):
        more.append("l %.2f" % med(speeds(w, t, "lin")))
    return s + (" (%s)" % ", ".join(more) if more else "")

def spread(w, t):
    rs = speeds(w, t, "raw")
    return "%.2f-%.2f" % (min(rs), max(rs)) if rs else "n/a"

print("| workload | " + " | ".join(c for _, c in cols) + " |")
print("|---" * (len(cols) + 1) + "|")
for w, label in works:
    print("| %s | %s |" % (label, " | ".join(cell(w, t) for t, _ in cols)))
print()
print("Range over reps of the speed relative to raw:")
print()
print("| workload | " + " | ".join(c for _, c in cols[1:]) + " |")
print("|---" * len(cols) + "|")
for w, label in works:
    print("| %s | %s |" % (w, " | ".join(spread(w, t) for t, _ in cols[1:])))
PY

legend()
{
	printf 'Cells: the median over %s reps of the speed relative to raw in the same rep\n' "$reps"
	printf '(throughput ratio, or raw latency / latency: below 1 is slower; loop rows:\n'
	printf 'relative to a loop device on the raw area, whose figures the raw column gives);\n'
	printf 'n: relative to naive, l: relative to linear io_uring, likewise; rw512 and loop\n'
	printf 'rows also give kIOPS, lat4K p50 / p99 in us.  snapshot: a snapshot of thin taken\n'
	printf 'just before each case, so rw512 and loop512 on it are first writes (copy-on-write).\n'
}

# report_body: the tables, their legend and the notes, as stdout and the
# .txt file both show them under their own headers.
report_body()
{
	cat "$table"
	printf '\n'
	legend
	for n in "${notes[@]}"; do
		printf 'note: %s\n' "$n"
	done
}

printf '\nmapperfs fresh bench: %s mode, %s backing; %s per sample, %s reps, %s on %s,\n' \
	"$mode" "$backing" "${secs}s" "$reps" "$size" "$dir"
printf 'kernel %s, %s CPUs; %d s in all, %d s measuring\n' "$(uname -r)" "$(nproc)" "$elapsed" "$measured"
printf 'load average before: %s, after: %s\n\n' "$load_before" "$load_after"
report_body

[ -n "$out" ] || exit 0
mkdir -p "$out"
cp "$tsv" "$out/$name.tsv"
{
	printf 'bench/fresh.sh: BENCH_MODE=%s BENCH_BACKING=%s, %s per sample, %s reps, %s,\n' \
		"$mode" "$backing" "${secs}s" "$reps" "$size"
	printf 'kernel %s, %s CPUs, %s; %d s in all\n' "$(uname -r)" "$(nproc)" \
		"$(date -u '+%Y-%m-%d %H:%M UTC')" "$elapsed"
	printf 'load average before: %s, after: %s\n\n' "$load_before" "$load_after"
	report_body
} >"$out/$name.txt"
# The chart: per workload, each target's median speed relative to raw;
# only what this run measured (gnuplot refuses a column with no point),
# each column headed by its target's title.
python3 - "$tsv" "$reps" "${targets[*]}" "${workloads[*]}" >"$dir/chart.dat" <<'PY'
import statistics, sys
tsv, reps, present, measured = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
val = {}
for line in open(tsv).read().splitlines()[1:]:
    rep, w, t, v = line.split("\t")[:4]
    if v not in ("", "null"):
        val[int(rep), w, t] = float(v)
titles = [("naive", "naive"), ("lin", "linear io_uring"), ("lin-d", "linear /dev/fuse"),
          ("thin", "thin"), ("snap", "snapshot"), ("switch", "switch"), ("qsd", "qsd")]
charted = [(t, title) for t, title in titles if t in present]
print('"workload" ' + " ".join('"%s"' % title for _, title in charted))
for w in ("seq1M", "first1M", "rand64K", "rw512", "lat4K", "loop64K", "loop512"):
    if w not in measured:
        continue
    row = []
    for t, _ in charted:
        rs = [(val[r, w, "raw"] / val[r, w, t]) if w == "lat4K" else (val[r, w, t] / val[r, w, "raw"])
              for r in range(1, reps + 1)
              if val.get((r, w, t)) and val.get((r, w, "raw"))]
        row.append("%.3f" % statistics.median(rs) if rs else "NaN")
    print('"%s" %s' % (w, " ".join(row)))
PY
gnuplot <<EOF
set terminal pngcairo size 1000,500 font "DejaVu Sans,10" noenhanced
set output "$out/$name.png"
set title "speed relative to raw, $mode daemons, $backing backing ($(uname -r), $(nproc) vCPUs, median of $reps)"
set ylabel "speed relative to raw (1.0 = raw; loop rows: loop on raw)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set yrange [0:*]
set grid ytics
set key outside bottom center horizontal
set xtics nomirror
plot for [c=2:*] "$dir/chart.dat" using c:xtic(1) title columnheader(c)
EOF
echo "bench: wrote $out/$name.{tsv,txt,png}" >&2
