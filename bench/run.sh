#!/usr/bin/env bash
# bench/run.sh: how close a linear volume comes to its raw backing file,
# over each of the daemon's two transports, side by side in one run.
#
# Two pools, each with one raw file in /dev/shm (a ramdisk, like the dm
# benchmarks, so the backing costs nothing and the overhead shows) and a
# linear volume filling it; one daemon serves each, one over io_uring, one
# over /dev/fuse.  The targets:
#
#   raw          the raw file itself (its data area, after the label)
#   io_uring     the volume file of the io_uring daemon
#   dev-fuse     the volume file of the /dev/fuse daemon
#   loop:raw     a direct-I/O loop device on the raw file's data area: the
#                "raw block device" baseline of the loop rows
#   loop:io_uring, loop:dev-fuse
#                a direct-I/O loop device on each volume file
#   qsd          qemu-storage-daemon's FUSE export of the raw file, if
#                installed (a weak bar, for reference)
#
# Loop devices have 512-byte sectors so that the 512-byte workload runs
# through them too.  Four fio workloads, time-based:
#
#   seq1M      sequential 1 MiB reads, QD1, O_DIRECT, psync        MiB/s
#   rand64K    random 64 KiB reads, 4 jobs x QD32, libaio, O_DIRECT MiB/s
#   rw512      random 512 B read/write, 8 jobs, O_DIRECT, psync    kIOPS
#   lat4K      random 4 KiB reads, QD1, O_DIRECT: p50 / p99 clat   usec
#
# Every workload runs BENCH_REPS times on every target, interleaved (rep 1
# of each target, then rep 2 ...), so load from the rest of the machine
# spreads over all targets alike; the table shows medians, each with its
# ratio to raw (loop rows also to loop:raw), and the spread of the ratios.
# The machine's load average is printed before and after.
#
# Output: the table on stdout, and in BENCH_OUT (default docs/):
# bench-transports.tsv (every sample), bench-transports.txt (the table)
# and bench-transports.png, a chart of the median ratios (gnuplot), which
# docs/performance.md shows.
#
# Environment: BENCH_SECONDS (default 5) per sample, BENCH_SIZE (default
# 1G), BENCH_REPS (default 3), BENCH_DIR (default a new dir in /dev/shm),
# BENCH_OUT (empty: the table only).  Needs root (loop devices, FUSE,
# enable_uring).  Not run by CI.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
bin=$src/build/bin
secs=${BENCH_SECONDS:-5}
size=${BENCH_SIZE:-1G}
reps=${BENCH_REPS:-3}
out=${BENCH_OUT-$src/docs}

. "$src/bench/lib.sh"
bench_setup
serve u io_uring
vol_u=$vol
serve d dev-fuse
vol_d=$vol
raw=$dir/u.img

raw_direct=1
if ! dd if="$raw" of=/dev/null bs=4096 count=1 iflag=direct status=none 2>/dev/null; then
	raw_direct=0
	notes+=("$raw does not support O_DIRECT (tmpfs before Linux 6.6): the raw row is buffered")
fi

targets=(raw io_uring dev-fuse loop:raw loop:io_uring loop:dev-fuse)
declare -A file=([raw]=$raw [io_uring]=$vol_u [dev-fuse]=$vol_d)
declare -A offset=([raw]=$MiB)
declare -A direct=([raw]=$raw_direct)
attach "$raw" --offset "$MiB" --sizelimit "$bytes"
file[loop:raw]=$dev
attach "$vol_u"
file[loop:io_uring]=$dev
attach "$vol_d"
file[loop:dev-fuse]=$dev

if command -v qemu-storage-daemon >/dev/null; then
	: >"$dir/qsd.export"
	qemu-storage-daemon --daemonize --pidfile "$dir/qsd.pid" \
		--blockdev "driver=file,node-name=f,filename=$raw,cache.direct=$([ $raw_direct = 1 ] && echo on || echo off)" \
		--blockdev "driver=raw,node-name=r,file=f,offset=$MiB,size=$bytes" \
		--export "type=fuse,id=e,node-name=r,mountpoint=$dir/qsd.export,writable=on"
	qsd_pid=$(cat "$dir/qsd.pid")
	targets+=(qsd)
	file[qsd]=$dir/qsd.export
else
	notes+=("qemu-storage-daemon is not installed: no qsd row")
fi

# sample WORKLOAD TARGET: prints the workload's figure(s) on the target.
sample()
{
	local j

	# shellcheck disable=SC2046 # workload_args is a list of arguments
	j=$(fio_json "$1" "${file[$2]}" "${offset[$2]:-0}" "${direct[$2]:-1}" $(workload_args "$1"))
	case $1 in
	seq1M | rand64K) jq '.jobs[0].read.bw / 1024' <<<"$j" ;;
	rw512) jq '(.jobs[0].read.iops + .jobs[0].write.iops) / 1000' <<<"$j" ;;
	lat4K) jq -r '.jobs[0].read.clat_ns.percentile |
		"\(.["50.000000"] / 1000) \(.["99.000000"] / 1000)"' <<<"$j" ;;
	esac
}

load() { cut -d' ' -f1-3 /proc/loadavg; }

workloads=(seq1M rand64K rw512 lat4K)
tsv=$dir/bench.tsv
printf 'rep\tworkload\ttarget\tvalue\tp99\n' >"$tsv"
load_before=$(load)
for ((rep = 1; rep <= reps; rep++)); do
	for w in "${workloads[@]}"; do
		for t in "${targets[@]}"; do
			echo "rep $rep/$reps: $w on $t ..." >&2
			read -r v p99 <<<"$(sample "$w" "$t")"
			printf '%s\t%s\t%s\t%s\t%s\n' "$rep" "$w" "$t" "$v" "${p99:-}" >>"$tsv"
		done
	done
done
load_after=$(load)

# The table: per workload and target, the median value and its ratio to
# raw (to loop:raw as well on loop rows), ratios taken per rep (so both
# sides of a ratio ran side by side) and then the median; throughput
# ratios > 1 are faster than raw, latency ratios > 1 slower.
table=$dir/bench.txt
python3 - "$tsv" "$reps" "${targets[*]}" >"$table" <<'PY'
import statistics, sys
tsv, reps, targets = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
val, p99 = {}, {}
for line in open(tsv).read().splitlines()[1:]:
    rep, w, t, v, q = (line.split("\t") + [""])[:5]
    if v not in ("", "null"):
        val[int(rep), w, t] = float(v)
    if q not in ("", "null"):
        p99[int(rep), w, t] = float(q)
works = ["seq1M", "rand64K", "rw512", "lat4K"]
def med(xs):
    return statistics.median(xs) if xs else None
def ratios(w, t, base):
    return [val[r, w, t] / val[r, w, base] for r in range(1, reps + 1)
            if (r, w, t) in val and (r, w, base) in val and val[r, w, base]]
def cell(w, t):
    v = med([val[r, w, t] for r in range(1, reps + 1) if (r, w, t) in val])
    if v is None:
        return "n/a"
    s = "%.1f" % v if w != "lat4K" else "%.1f / %.0f" % (
        v, med([p99[r, w, t] for r in range(1, reps + 1) if (r, w, t) in p99]) or 0)
    rs = ratios(w, t, "raw")
    if t != "raw" and rs:
        s += " (%.2f" % med(rs)
        if len(rs) > 1:
            s += " %.2f-%.2f" % (min(rs), max(rs))
        s += ")"
    lr = ratios(w, t, "loop:raw")
    if t.startswith("loop:") and t != "loop:raw" and lr:
        s += " [%.2f of loop:raw]" % med(lr)
    return s
head = ["seq 1 MiB read MiB/s", "4 x QD32 64 KiB randread MiB/s",
        "8 x 512 B randrw kIOPS", "4 KiB QD1 read p50 / p99 us"]
print("| target | " + " | ".join(head) + " |")
print("|---" * (len(head) + 1) + "|")
for t in targets:
    print("| %s | %s |" % (t, " | ".join(cell(w, t) for w in works)))
PY

printf '\nmapperfs bench: %s per sample, %s reps, %s on %s, kernel %s, %s CPUs\n' \
	"${secs}s" "$reps" "$size" "$dir" "$(uname -r)" "$(nproc)"
printf 'load average before: %s, after: %s\n' "$load_before" "$load_after"
printf 'medians; (ratio to raw, median and range over reps); latency ratios > 1 are slower\n\n'
cat "$table"
for n in "${notes[@]}"; do
	printf 'note: %s\n' "$n"
done

[ -n "$out" ] || exit 0
mkdir -p "$out"
cp "$tsv" "$out/bench-transports.tsv"
{
	printf 'bench/run.sh: %s per sample, %s reps, %s, kernel %s, %s CPUs, %s\n' \
		"${secs}s" "$reps" "$size" "$(uname -r)" "$(nproc)" "$(date -u '+%Y-%m-%d %H:%M UTC')"
	printf 'load average before: %s, after: %s\n\n' "$load_before" "$load_after"
	cat "$table"
} >"$out/bench-transports.txt"
# The chart: median speed relative to raw per workload (throughput ratio,
# or raw latency / latency), one bar per target; 1.0 is the raw file.
python3 - "$tsv" "$reps" >"$dir/chart.dat" <<'PY'
import statistics, sys
tsv, reps = sys.argv[1], int(sys.argv[2])
val = {}
for line in open(tsv).read().splitlines()[1:]:
    rep, w, t, v = line.split("\t")[:4]
    if v not in ("", "null"):
        val[int(rep), w, t] = float(v)
targets = ["io_uring", "dev-fuse", "loop:io_uring", "loop:dev-fuse"]
works = [("seq1M", "seq 1M read"), ("rand64K", "4x QD32 64K randread"),
         ("rw512", "8x 512B randrw"), ("lat4K", "4K QD1 read p50")]
for w, label in works:
    row = []
    for t in targets:
        base = "loop:raw" if t.startswith("loop:") else "raw"
        rs = [(val[r, w, base] / val[r, w, t]) if w == "lat4K" else (val[r, w, t] / val[r, w, base])
              for r in range(1, reps + 1) if (r, w, t) in val and (r, w, base) in val and val[r, w, t]]
        row.append("%.3f" % statistics.median(rs) if rs else "NaN")
    print('"%s" %s' % (label, " ".join(row)))
PY
gnuplot <<EOF
set terminal pngcairo size 900,480 font "DejaVu Sans,10" noenhanced
set output "$out/bench-transports.png"
set title "mapperfs linear volume vs raw file in /dev/shm ($(uname -r), $(nproc) vCPUs, median of $reps)"
set ylabel "speed relative to the raw file (1.0 = raw; loop rows: to loop on raw)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set yrange [0:*]
set grid ytics
set key outside bottom center horizontal
set xrange [-0.6:3.6]
set xtics nomirror
plot "$dir/chart.dat" using 2:xtic(1) title "io_uring", \
     "" using 3 title "/dev/fuse", \
     "" using 4 title "loop on io_uring", \
     "" using 5 title "loop on /dev/fuse"
EOF
echo "bench: wrote $out/bench-transports.{tsv,txt,png}" >&2
