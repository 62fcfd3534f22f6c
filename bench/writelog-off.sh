#!/usr/bin/env bash
# bench/writelog-off.sh: what the write log's hooks (core/io/writelog.h,
# meta/store_vfs.c) cost a daemon that does not record, side by side in
# one run:
#
#   base       mapperfs built from the commit before the write log existed
#   this       mapperfs built from this tree (or BENCH_THIS), MAPPERFS_WRITELOG
#              unset
#
# each serving a linear and a fully provisioned thin volume on raw files in
# /dev/shm (a ramdisk, so the backing costs nothing and the overhead
# shows), with fio, O_DIRECT, time-based:
#
#   w4K        random 4 KiB writes, QD1: kIOPS          (engine_write, inline)
#   rw512      random 512 B read/write, 8 jobs: kIOPS   (many small requests)
#   w64K       random 64 KiB writes, 4 jobs x QD16, libaio: MiB/s (io_uring path)
#   fsync4K    random 4 KiB writes, fsync after each: kIOPS (fdatasync; thin:
#              the pool's commit)
#
# The two daemons take turns (base, this, this, base, BENCH_ROUNDS times)
# so that drift on a shared machine falls on both; each figure is the mean
# of its turns, and the ratio this/base is printed.  1.00 means no
# measurable cost.  Besides the rate, each turn measures the daemon's CPU
# time per request (all its threads, /proc/PID/task/*/schedstat): what the
# hooks would cost is CPU, and that figure moves much less than a rate
# when other work shares the machine.
#
# Environment: BENCH_SECONDS (default 5) per turn, BENCH_ROUNDS (default
# 1), BENCH_BASE (a git revision; default the parent of the commit that
# added core/io/writelog.c), BENCH_THIS (a git revision; default the work
# tree).  Needs root, fio, jq, git.  Not run by CI.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
secs=${BENCH_SECONDS:-5}
MiB=$((1024 * 1024))
size=$((256 * MiB))

. "$src/tests/lib/deps.sh"
deps_install
deps_kernel

base_rev=${BENCH_BASE:-$(git -C "$src" log --follow --diff-filter=A --format=%H -- core/io/writelog.c | tail -1)^}
this_rev=${BENCH_THIS:-worktree}
rounds=${BENCH_ROUNDS:-1}
dir=$(mktemp -d /dev/shm/mapperfs-writelog-bench.XXXXXX)
pids=()

cleanup()
{
	set +e
	for m in "$dir"/*/mnt; do
		mountpoint -q "$m" && { fusermount3 -u "$m" || umount -l "$m"; }
	done
	for p in "${pids[@]}"; do
		timeout 30 tail --pid="$p" -f /dev/null
	done
	rm -rf --one-file-system "$dir"
}
trap cleanup EXIT

# build NAME REV: builds REV (or the work tree for "this") into $dir/NAME.
build()
{
	local name=$1 rev=$2 tree=$src

	if [ "$rev" != worktree ]; then
		tree=$dir/$name-src
		mkdir -p "$tree"
		git -C "$src" archive "$rev" | tar -x -C "$tree"
	fi
	cmake -S "$tree" -B "$dir/$name-build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$dir/$name-build" -j "$(nproc)" --target mapperfs mapperctl >/dev/null
}

# serve NAME: a pool with a linear and a fully written thin volume, mounted.
declare -A daemon_pid

serve()
{
	local name=$1 bin=$dir/$1-build/bin pool=$dir/$1/pool

	mkdir -p "$dir/$name/mnt"
	export MAPPERFS_POOL=$pool
	"$bin/mapperctl" init >/dev/null
	"$bin/mapperctl" device add "$dir/$name/raw.img" --create $((3 * size)) --name raw >/dev/null
	"$bin/mapperctl" create linear lin --size $size >/dev/null
	"$bin/mapperctl" create thin-pool tp --size $((size + 16 * MiB)) >/dev/null
	"$bin/mapperctl" create thin thin --pool tp --size $size >/dev/null
	unset MAPPERFS_WRITELOG
	"$bin/mapperfs" --pool "$pool" "$dir/$name/mnt"
	daemon_pid[$name]=$(cat "$pool/mapperfs.pid")
	pids+=("${daemon_pid[$name]}")
	dd if=/dev/zero of="$dir/$name/mnt/thin" bs=1M count=$((size / MiB)) oflag=direct \
		conv=notrunc,fsync status=none
	unset MAPPERFS_POOL
}

fio_json()	# FILE ARGS...
{
	local f=$1

	shift
	fio --output-format=json --name=b --filename="$f" --size=$size --direct=1 \
		--time_based --runtime="$secs" --ramp_time=1 --group_reporting "$@" 2>/dev/null
}

# cpu_ns PID: CPU time of all of PID's threads so far, in ns.
cpu_ns()
{
	cat /proc/"$1"/task/*/schedstat | awk '{ t += $1 } END { printf "%.0f\n", t }'
}

# measure NAME VOLUME WORKLOAD: "rate cpu_us_per_request".
measure()
{
	local f=$dir/$1/mnt/$2 pid=${daemon_pid[$1]} c0 c1 json rate

	c0=$(cpu_ns "$pid")
	case $3 in
	w4K) json=$(fio_json "$f" --rw=randwrite --bs=4K --ioengine=psync)
		rate=$(jq '.jobs[0].write.iops / 1000' <<<"$json") ;;
	rw512) json=$(fio_json "$f" --rw=randrw --bs=512 --ioengine=psync --numjobs=8)
		rate=$(jq '(.jobs[0].read.iops + .jobs[0].write.iops) / 1000' <<<"$json") ;;
	w64K) json=$(fio_json "$f" --rw=randwrite --bs=64K --ioengine=libaio --iodepth=16 --numjobs=4)
		rate=$(jq '.jobs[0].write.bw / 1024' <<<"$json") ;;
	fsync4K) json=$(fio_json "$f" --rw=randwrite --bs=4K --ioengine=psync --fsync=1)
		rate=$(jq '.jobs[0].write.iops / 1000' <<<"$json") ;;
	esac
	c1=$(cpu_ns "$pid")
	# ramp_time I/O is not in total_ios: this overstates CPU per request
	# alike for both daemons.
	jq -r --arg rate "$rate" --arg ns $((c1 - c0)) \
		'"\($rate) \(($ns | tonumber) / 1000 / ([.jobs[0].read.total_ios + .jobs[0].write.total_ios, 1] | max))"' \
		<<<"$json"
}

echo "building $base_rev and $this_rev ..." >&2
build base "$base_rev"
build this "$this_rev"
serve base
serve this

declare -A sum cpu
workloads=(w4K rw512 w64K fsync4K)
for vol in lin thin; do
	for w in "${workloads[@]}"; do
		for turn in $(for _ in $(seq "$rounds"); do echo base this this base; done); do
			echo "$vol $w $turn ..." >&2
			read -r v c < <(measure "$turn" "$vol" "$w")
			sum[$vol,$w,$turn]=$(awk -v a="${sum[$vol,$w,$turn]:-0}" -v b="$v" 'BEGIN { print a + b }')
			cpu[$vol,$w,$turn]=$(awk -v a="${cpu[$vol,$w,$turn]:-0}" -v b="$c" 'BEGIN { print a + b }')
		done
	done
done

printf '\nwrite log off: %s per turn, %s turns each, %s on /dev/shm, kernel %s\n' \
	"${secs}s" $((2 * rounds)) "$(numfmt --to=iec $size)" "$(uname -r)"
printf 'base = %s, this = %s\n\n' "$(git -C "$src" rev-parse --short "$base_rev")" \
	"$([ "$this_rev" = worktree ] && echo 'the work tree' || git -C "$src" rev-parse --short "$this_rev")"
printf '%-6s %-8s %12s %12s %6s   %20s %8s\n' volume workload base this ratio \
	'daemon CPU us/req' ratio
for vol in lin thin; do
	for w in "${workloads[@]}"; do
		awk -v vol="$vol" -v w="$w" -v b="${sum[$vol,$w,base]}" -v t="${sum[$vol,$w,this]}" \
			-v cb="${cpu[$vol,$w,base]}" -v ct="${cpu[$vol,$w,this]}" \
			-v n=$((2 * rounds)) -v u="$([ "$w" = w64K ] && echo MiB/s || echo kIOPS)" 'BEGIN {
			printf "%-6s %-8s %6.1f %-5s %6.1f %-5s %5.2f   %9.1f -> %-7.1f %7.2f\n",
				vol, w, b / n, u, t / n, u, t / b, cb / n, ct / n, ct / cb }'
	done
done
