#!/usr/bin/env bash
# bench/ab.sh OLD_BUILD [NEW_BUILD]: two builds of mapperfs side by side in
# one run, so that a change is judged by a ratio measured under the same
# load, not by figures from two runs on a shared, noisy machine.
#
# Each build serves its own pool (one raw file in /dev/shm, over
# io_uring), with a linear volume and a fully written thin volume of
# BENCH_SIZE each.  The workloads of bench/run.sh (seq1M, rand64K, rw512,
# lat4K) run on the raw file, then on each volume of each build; and
# `first`: 64 KiB random writes that each provision a block of a thin
# volume just emptied (truncate to 0 discards every block), each block
# once.  Every rep runs every target in turn, alternating which build goes
# first, so load spreads over both alike.  The table gives, per workload
# and volume kind, both builds' medians, and NEW/OLD per rep (median and
# range): a change costs nothing where that range holds 1.  Latency
# ratios > 1 are slower.
#
# OLD_BUILD and NEW_BUILD are build directories (with bin/mapperfs and
# bin/mapperctl); NEW_BUILD defaults to this tree's build/.  Environment:
# BENCH_SECONDS (default 5) per sample, BENCH_SIZE (default 1G),
# BENCH_REPS (default 3), BENCH_DIR (default a new dir in /dev/shm),
# BENCH_WORKLOADS (default "seq1M rand64K rw512 lat4K first").
# Needs root (FUSE, enable_uring), fio and jq.  Not run by CI.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: bench/ab.sh OLD_BUILD [NEW_BUILD]" >&2; exit 2; }
old=$(cd "$1" && pwd)
new=$(cd "${2:-$src/build}" && pwd)
for b in "$old" "$new"; do
	[ -x "$b/bin/mapperfs" ] && [ -x "$b/bin/mapperctl" ] ||
		{ echo "bench/ab.sh: no bin/mapperfs and bin/mapperctl in $b (build it first)" >&2; exit 1; }
done
bin=$new/bin
secs=${BENCH_SECONDS:-5}
size=${BENCH_SIZE:-1G}
reps=${BENCH_REPS:-3}
read -ra workloads <<<"${BENCH_WORKLOADS:-seq1M rand64K rw512 lat4K first}"

. "$src/bench/lib.sh"
bench_setup

# serve_ab NAME BUILD: pool NAME served by BUILD's daemon, with linear
# volume lin and thin volume th (in thin pool tp) of $bytes each, both
# written whole, so that no row reads holes that cost nothing.
serve_ab()
{
	local name=$1 b=$2/bin pool=$dir/$1.pool raw=$dir/$1.img mnt=$dir/$1.mnt

	MAPPERFS_POOL=$pool "$b/mapperctl" init >/dev/null
	MAPPERFS_POOL=$pool "$b/mapperctl" device add "$raw" --create $((2 * bytes + 64 * MiB)) \
		--name raw >/dev/null
	MAPPERFS_POOL=$pool "$b/mapperctl" create linear lin --size "$bytes" --on raw >/dev/null
	MAPPERFS_POOL=$pool "$b/mapperctl" create thin-pool tp --size "$bytes" --on raw >/dev/null
	MAPPERFS_POOL=$pool "$b/mapperctl" create thin th --pool tp --size "$bytes" >/dev/null
	mkdir -p "$mnt"
	mnts+=("$mnt")
	"$b/mapperfs" --pool "$pool" "$mnt" -o transport=io_uring
	pids+=("$(cat "$pool/mapperfs.pid")")
	dd if=/dev/zero of="$mnt/lin" bs=1M count=$((bytes / MiB)) oflag=direct status=none
	dd if=/dev/zero of="$mnt/th" bs=1M count=$((bytes / MiB)) oflag=direct status=none
}

# first_write FILE: MiB/s of 64 KiB random direct writes over FILE, each
# block once, after emptying it (every write provisions a block).
first_write()
{
	truncate -s 0 "$1"
	fio --output-format=json --name=first --filename="$1" --size="$bytes" --direct=1 \
		--rw=randwrite --bs=64K --ioengine=libaio --iodepth=8 --end_fsync=1 \
		2>"$dir/fio.err" | jq '.jobs[0].write.bw / 1024' || echo null
}

serve_ab old "$old"
serve_ab new "$new"
raw=$dir/new.img

declare -A file=([raw]=$raw [old:lin]=$dir/old.mnt/lin [new:lin]=$dir/new.mnt/lin
	[old:th]=$dir/old.mnt/th [new:th]=$dir/new.mnt/th)
declare -A offset=([raw]=$MiB)

# sample WORKLOAD TARGET: the workload's figure on the target.
sample()
{
	local j

	if [ "$1" = first ]; then
		first_write "${file[$2]}"
		return
	fi
	# shellcheck disable=SC2046 # workload_args is a list of arguments
	j=$(fio_json "$1" "${file[$2]}" "${offset[$2]:-0}" 1 $(workload_args "$1"))
	case $1 in
	seq1M | rand64K) jq '.jobs[0].read.bw / 1024' <<<"$j" ;;
	rw512) jq '(.jobs[0].read.iops + .jobs[0].write.iops) / 1000' <<<"$j" ;;
	lat4K) jq -r '.jobs[0].read.clat_ns.percentile["50.000000"] / 1000' <<<"$j" ;;
	esac
}

load() { cut -d' ' -f1-3 /proc/loadavg; }

tsv=$dir/ab.tsv
printf 'rep\tworkload\ttarget\tvalue\n' >"$tsv"
load_before=$(load)
for ((rep = 1; rep <= reps; rep++)); do
	if ((rep % 2)); then order=(old new); else order=(new old); fi
	for w in "${workloads[@]}"; do
		targets=()
		[ "$w" = first ] || targets+=(raw)
		for k in lin th; do
			[ "$w" = first ] && [ "$k" = lin ] && continue
			for b in "${order[@]}"; do
				targets+=("$b:$k")
			done
		done
		for t in "${targets[@]}"; do
			echo "rep $rep/$reps: $w on $t ..." >&2
			printf '%s\t%s\t%s\t%s\n' "$rep" "$w" "$t" "$(sample "$w" "$t")" >>"$tsv"
		done
	done
done
load_after=$(load)

printf '\nmapperfs ab: old %s, new %s\n%s per sample, %s reps, %s on %s, kernel %s, %s CPUs\n' \
	"$old" "$new" "${secs}s" "$reps" "$size" "$dir" "$(uname -r)" "$(nproc)"
printf 'load average before: %s, after: %s\n' "$load_before" "$load_after"
printf 'medians (and ratio to raw); NEW/OLD per rep: median and range; latency > 1 is slower\n\n'
python3 - "$tsv" "$reps" <<'PY'
import statistics, sys
tsv, reps = sys.argv[1], int(sys.argv[2])
val = {}
for line in open(tsv).read().splitlines()[1:]:
    rep, w, t, v = line.split("\t")
    if v not in ("", "null"):
        val[int(rep), w, t] = float(v)
def med(t, w):
    xs = [val[r, w, t] for r in range(1, reps + 1) if (r, w, t) in val]
    return statistics.median(xs) if xs else None
def fmt(t, w):
    v, raw = med(t, w), med("raw", w)
    if v is None:
        return "n/a"
    return "%.1f" % v + (" (%.2f)" % (v / raw if w != "lat4K" else raw / v) if raw else "")
rows = [("seq1M", "seq 1 MiB read MiB/s"), ("rand64K", "4 x QD32 64 KiB randread MiB/s"),
        ("rw512", "8 x 512 B randrw kIOPS"), ("lat4K", "4 KiB QD1 read p50 us"),
        ("first", "thin first writes 64 KiB MiB/s")]
print("| workload | volume | raw | old | new | new/old (range) |")
print("|---|---|---|---|---|---|")
for w, label in rows:
    for k in ("lin", "th"):
        if w == "first" and k == "lin":
            continue
        rs = [val[r, w, "new:" + k] / val[r, w, "old:" + k] for r in range(1, reps + 1)
              if (r, w, "new:" + k) in val and (r, w, "old:" + k) in val and val[r, w, "old:" + k]]
        ratio = "%.2f (%.2f-%.2f)" % (statistics.median(rs), min(rs), max(rs)) if rs else "n/a"
        raw = med("raw", w)
        print("| %s | %s | %s | %s | %s | %s |" % (label, {"lin": "linear", "th": "thin"}[k],
              "%.1f" % raw if raw else "-", fmt("old:" + k, w), fmt("new:" + k, w), ratio))
PY
for n in "${notes[@]}"; do
	printf 'note: %s\n' "$n"
done
