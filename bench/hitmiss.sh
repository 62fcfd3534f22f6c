#!/usr/bin/env bash
# bench/hitmiss.sh OLD_BUILD [NEW_BUILD]: what reads that miss a thin
# pool's memory budget cost the reads that hit it (issue 22: "misses that
# never stall hits"), two builds side by side in one run, as bench/ab.sh
# compares them.
#
# Each build serves its own pool: one thin volume of BENCH_BLOCKS (1e8)
# mapped 64 KiB blocks, restored from generated thin_dump XML onto a
# sparse raw file (as bench/scale.sh builds it: every block a hole, so
# this measures the map and FUSE, not a disk), mounted with -o
# cache_size=BENCH_BUDGET (40M: a tenth of the map at 1e8) and -o
# batch=BENCH_BATCH (8 ring entries per thread: what a pool on memory or
# NBD devices gets; 1: what one on a disk gets, and then nothing waits for
# the loader).  Hits: QD1 4 KiB random reads over the volume's first GiB,
# whose leaves stay loaded.  Misses: BENCH_MISS_JOBS (1) jobs of QD1 4 KiB
# random reads over the whole volume, nearly each a leaf not loaded (at
# most BENCH_MISS_RATE IOPS each, if set).  Each round measures, per
# build, the hits alone for BENCH_SECONDS (5), then hits and misses
# together; the builds alternate which goes first.  BENCH_CPUS pins every
# fio job to those CPUs (e.g. 0): the kernel queues a FUSE request on its
# issuer's CPU, so hits and misses then share a ring queue, the case a
# miss faulted in on the ring thread stalls hits in.
#
# The table: per build, the hits' p50 and p99 alone and beside misses, the
# ratio beside/alone of each round (median and range), the misses' p50 and
# p99, and the pool's cache_loads and cache_miss_waits at the end.  Every
# sample is kept in hitmiss.tsv in the scratch directory, printed at the
# end.
#
# Environment: BENCH_BLOCKS, BENCH_BUDGET, BENCH_BATCH, BENCH_SECONDS,
# BENCH_REPS (rounds, default 8), BENCH_MISS_JOBS, BENCH_MISS_RATE,
# BENCH_CPUS, BENCH_BACKING (default disk: two pools of 1e8 blocks take
# 1.7 GB; shm puts them in /dev/shm), BENCH_DIR.  ~25 s to build both
# pools at 1e8, then 4 x BENCH_SECONDS per round.  Needs root (FUSE), fio,
# jq.  Not run by CI.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: bench/hitmiss.sh OLD_BUILD [NEW_BUILD]" >&2; exit 2; }
old=$(cd "$1" && pwd)
new=$(cd "${2:-$src/build}" && pwd)
for b in "$old" "$new"; do
	[ -x "$b/bin/mapperfs" ] && [ -x "$b/bin/mapperctl" ] ||
		{ echo "bench/hitmiss.sh: no bin/mapperfs and bin/mapperctl in $b (build it first)" >&2; exit 1; }
done
bin=$new/bin
n=$(awk -v x="${BENCH_BLOCKS:-1e8}" 'BEGIN { printf "%d", x }')	# 1e8 or 100000000
budget=${BENCH_BUDGET:-40M}
batch=${BENCH_BATCH:-8}
secs=${BENCH_SECONDS:-5}
reps=${BENCH_REPS:-8}
: "${BENCH_BACKING:=disk}"
size=1G		# bench_setup's; the hits' range
spare=4096	# data blocks past the mapped ones

. "$src/bench/lib.sh"
bench_setup

# serve_pool NAME BUILD: a pool of $n mapped blocks (volume vol), served by
# BUILD's daemon on $dir/NAME.mnt.
serve_pool()
{
	local name=$1 b=$2/bin pool=$dir/$1.pool mnt=$dir/$1.mnt

	MAPPERFS_POOL=$pool "$b/mapperctl" init >/dev/null
	MAPPERFS_POOL=$pool "$b/mapperctl" device add "$dir/$name.raw" \
		--create $(( (n + spare + 32) * 64 ))K --name r >/dev/null
	MAPPERFS_POOL=$pool "$b/mapperctl" create thin-pool tp --size $(( (n + spare) * 64 ))K \
		--low-water 0 --metadata-limit $(( n * 16 / 1024 + 65536 ))K >/dev/null
	awk -v n="$n" -v spare="$spare" 'BEGIN {
		printf "<superblock uuid=\"\" time=\"0\" transaction=\"1\" flags=\"0\" version=\"2\" data_block_size=\"128\" nr_data_blocks=\"%d\">\n", n + spare
		printf "  <device dev_id=\"1\" mapped_blocks=\"%d\" transaction=\"0\" creation_time=\"0\" snap_time=\"0\">\n", n
		for (b = 0; b < n; b += 4096)
			printf "    <range_mapping origin_begin=\"%d\" data_begin=\"%d\" length=\"%d\" time=\"0\"/>\n", b, b, (n - b < 4096 ? n - b : 4096)
		print "  </device>"
		print "</superblock>" }' >"$dir/$name.xml"
	MAPPERFS_POOL=$pool "$b/mapperctl" restore tp --from "$dir/$name.xml" --force \
		--volume "1:vol:$((n * 64))K" >/dev/null
	rm -f "$dir/$name.xml"
	mkdir -p "$mnt"
	mnts+=("$mnt")
	"$b/mapperfs" --pool "$pool" "$mnt" -o "transport=io_uring,cache_size=$budget,batch=$batch"
	pids+=("$(cat "$pool/mapperfs.pid")")
}

echo "bench: two pools of $n mapped blocks in $dir ..." >&2
serve_pool old "$old"
serve_pool new "$new"

cpus=${BENCH_CPUS:+--cpus_allowed=$BENCH_CPUS}
hits() { echo "--name=hits --filename=$dir/$1.mnt/vol --rw=randread --bs=4k --direct=1 --ioengine=psync --offset=0 --size=$size --time_based --runtime=$secs $cpus"; }
misses() { echo "--name=misses --filename=$dir/$1.mnt/vol --rw=randread --bs=4k --direct=1 --ioengine=psync --size=$((n * 65536)) --time_based --runtime=$secs --numjobs=${BENCH_MISS_JOBS:-1} ${BENCH_MISS_RATE:+--rate_iops=$BENCH_MISS_RATE} $cpus"; }
# pct FILE JOB PERCENTILE: the largest of the jobs named JOB, us.
pct() { jq -r --arg j "$2" --arg p "$3" '[.jobs[] | select(.jobname == $j) |
	.read.clat_ns.percentile[$p] / 1000] | max' "$1"; }

for b in old new; do	# the hits' leaves loaded
	# shellcheck disable=SC2046 # a list of arguments
	fio $(hits "$b") --runtime=3 --output-format=json >/dev/null
done
tsv=$dir/hitmiss.tsv j=$dir/fio.json
printf 'rep\tbuild\thit_p50_alone\thit_p99_alone\thit_p50_beside\thit_p99_beside\tmiss_p50\tmiss_p99\tload1\n' >"$tsv"
for ((rep = 1; rep <= reps; rep++)); do
	if ((rep % 2)); then order=(old new); else order=(new old); fi
	for b in "${order[@]}"; do
		echo "rep $rep/$reps: $b ..." >&2
		# shellcheck disable=SC2046
		fio $(hits "$b") --output-format=json >"$j"
		alone="$(pct "$j" hits 50.000000)	$(pct "$j" hits 99.000000)"
		# shellcheck disable=SC2046
		fio $(hits "$b") $(misses "$b") --output-format=json 2>/dev/null | sed -n '/^{/,$p' >"$j"
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$b" "$alone" \
			"$(pct "$j" hits 50.000000)" "$(pct "$j" hits 99.000000)" \
			"$(pct "$j" misses 50.000000)" "$(pct "$j" misses 99.000000)" \
			"$(cut -d' ' -f1 /proc/loadavg)" >>"$tsv"
	done
done

printf '\nbench/hitmiss.sh: %s blocks, cache_size=%s, batch=%s, %s x %s s, misses: %s job(s)%s%s\n' \
	"$n" "$budget" "$batch" "$reps" "$secs" "${BENCH_MISS_JOBS:-1}" \
	"${BENCH_MISS_RATE:+ at $BENCH_MISS_RATE IOPS}" "${BENCH_CPUS:+, every job on CPU $BENCH_CPUS}"
printf 'old: %s\nnew: %s\n' "$old" "$new"
printf 'us, median (range) of the rounds\n'
for b in old new; do
	stats=$(MAPPERFS_POOL=$dir/$b.pool "$bin/mapperctl" status tp --json |
		jq -r '"loads \(.cache_loads // "-"), waits \(.cache_miss_waits // "-")"')
	awk -F'\t' -v b="$b" -v stats="$stats" '
		function med(a, k,   i, j, t) {	# sorts a[1..k], returns the median
			for (i = 2; i <= k; i++)
				for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
			return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
		}
		function col(c, fmt,   i, v) {
			for (i = 1; i <= k; i++) v[i] = x[i, c]
			m = med(v, k)
			return sprintf(fmt " (" fmt "-" fmt ")", m, v[1], v[k])
		}
		NR > 1 && $2 == b { k++; for (c = 3; c <= 8; c++) x[k, c] = $c; x[k, 9] = $6 / $4 }
		END {
			printf "%s: hits alone p50 %s p99 %s | beside misses p50 %s p99 %s | p99 ratio %s | misses p50 %s p99 %s | %s\n",
				b, col(3, "%.1f"), col(4, "%.1f"), col(5, "%.1f"), col(6, "%.1f"),
				col(9, "%.2f"), col(7, "%.1f"), col(8, "%.0f"), stats
		}' "$tsv"
done
printf '\n'
cat "$tsv"
