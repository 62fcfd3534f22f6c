#!/usr/bin/env bash
# bench/mirror.sh: what a mirror of two legs costs next to linear.
#
# One run, side by side, raw files in /dev/shm (BENCH_DIR elsewhere): a
# linear volume "lin" on raw file d0, a mirror "mir" of two legs on d1
# and d2, the same size, synced before the runs (its first pass copies
# leg 0 to leg 1).  Each workload runs on lin, mir, mir, lin (time-based)
# and the two runs of each are averaged, which cancels a steady drift of a
# shared machine (with BENCH_RATE, after a 3 s ramp that drains the rate
# filter's burst bucket):
#
#   read64K    4 jobs x QD32 random 64 KiB reads, libaio, O_DIRECT   MiB/s
#   write64K   4 jobs x QD32 random 64 KiB writes, the same          MiB/s
#
# Then a move: read64K on a 1 GiB linear volume "mv" (on d3) alone, then
# again while `mapperctl move d3 --to d4` copies it at the daemon's
# default rate (256 MiB/s: about 4 s), and how long the move took.
#
# A mirror's reads go to one leg (spread over both by offset); its writes
# go to both legs at once, submitted together in one io_uring_enter.
#
# With BENCH_RATE (bits per second as nbdkit reads it, e.g. 200M: 25
# MB/s), the raw devices are disks of that rate instead: nbdkit memory
# disks behind the rate filter, made files by nbdfuse (bench/rate_devices.sh),
# 128 MiB volumes, and no move: what a mirror over two disks gives
# against one, where on tmpfs a mirror's second copy costs the CPU.
# Environment: BENCH_SECONDS (default 5) per run.  Needs root (FUSE).
# Not run by CI.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
bin=$src/build/bin
secs=${BENCH_SECONDS:-5}
ramp=1
MiB=$((1024 * 1024))
rate=${BENCH_RATE:-}
size=$((512 * MiB))
[ -z "$rate" ] || size=$((128 * MiB)) ramp=3	# slow disks: what a run can sync; the bucket

[ -x "$bin/mapperfs" ] && [ -x "$bin/mapperctl" ] ||
	{ echo "bench/mirror.sh: build first (cmake --build build)" >&2; exit 1; }
dir=$(mktemp -d "${BENCH_DIR:-/dev/shm}/mapperfs-mirror-bench.XXXXXX")
pool=$dir/pool
mnt=$dir/mnt
pid=

cleanup()
{
	set +e
	if mountpoint -q "$mnt" 2>/dev/null; then
		fusermount3 -u "$mnt" || umount -l "$mnt"
	fi
	[ -n "$pid" ] && timeout 30 tail --pid="$pid" -f /dev/null
	[ -z "$rate" ] || rate_devices_stop
	rm -rf --one-file-system "$dir"
}
trap cleanup EXIT
. "$src/bench/rate_devices.sh"
[ -z "$rate" ] || rate_tools_check bench/mirror.sh

ctl() { "$bin/mapperctl" "$@"; }
export MAPPERFS_POOL=$pool
ctl init >/dev/null
if [ -n "$rate" ]; then
	for d in d0 d1 d2; do
		rate_device "$d" $((size / MiB + 2))M
		ctl device add "$dir/$d/nbd" --name $d >/dev/null
	done
else
	for d in d0 d1 d2; do
		ctl device add "$dir/$d.img" --create $((size + 2 * MiB)) --name $d >/dev/null
	done
	for d in d3 d4; do
		ctl device add "$dir/$d.img" --create $((1024 * MiB + 2 * MiB)) --name $d >/dev/null
	done
	ctl create linear mv --size 1G --on d3 >/dev/null
	dd if=/dev/zero of="$dir/d3.img" bs=1M seek=1 count=1024 conv=notrunc status=none
fi
ctl create linear lin --size $size --on d0 >/dev/null
ctl create linear mir --size $size --mirrors 1 --on d1,d2 >/dev/null
# Fill lin's extent, so that no run reads holes that tmpfs answers for free.
[ -n "$rate" ] || dd if=/dev/zero of="$dir/d0.img" bs=1M seek=1 count=$((size / MiB)) \
	conv=notrunc status=none
[ -n "$rate" ] || dd if=/dev/zero of="$dir/d1.img" bs=1M seek=1 count=$((size / MiB)) \
	conv=notrunc status=none
mkdir -p "$mnt"
"$bin/mapperfs" --pool "$pool" "$mnt" -o "transport=${BENCH_TRANSPORT:-auto}" 2>"$dir/mapperfs.err"
pid=$(cat "$pool/mapperfs.pid")
echo "syncing the mirror ..." >&2
# wait_log REGEX: until the daemon's log has a line matching REGEX (5 min at most).
wait_log() { grep -q -m 1 "$1" < <(timeout 300 tail -n +1 -F "$pool/mapperfs.log" 2>/dev/null); }
wait_log "volume 'mir': resynced"

# fio_run NAME VOLUME ARGS...: one time-based workload, JSON on stdout.
fio_run()
{
	local name=$1 vol=$2

	shift 2
	fio --output-format=json --name="$name" --filename="$mnt/$vol" --size=$size \
		--direct=1 --time_based --runtime="$secs" --ramp_time="$ramp" \
		--group_reporting "$@" 2>"$dir/fio.err"
}

read64K() { fio_run read64K "$1" --rw=randread --bs=64K --ioengine=libaio \
	--iodepth=32 --numjobs=4 | jq '.jobs[0].read.bw / 1024'; }
write64K() { fio_run write64K "$1" --rw=randwrite --bs=64K --ioengine=libaio \
	--iodepth=32 --numjobs=4 | jq '.jobs[0].write.bw / 1024'; }

read64K_mv() { fio --output-format=json --name=mv --filename="$mnt/mv" --size=1G \
	--direct=1 --time_based --runtime="$secs" --ramp_time=1 --group_reporting \
	--rw=randread --bs=64K --ioengine=libaio --iodepth=32 --numjobs=4 2>"$dir/fio.err" |
	jq '.jobs[0].read.bw / 1024'; }

mean() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (a + b) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

declare -A res
for w in read64K write64K; do
	echo "running $w ..." >&2
	l1=$($w lin); m1=$($w mir); m2=$($w mir); l2=$($w lin)
	res[$w,lin]=$(mean "$l1" "$l2")
	res[$w,mir]=$(mean "$m1" "$m2")
	res[$w,runs]=$(awk -v a="$l1" -v b="$l2" -v c="$m1" -v d="$m2" \
		'BEGIN { printf "lin %.1f %.1f, mir %.1f %.1f", a, b, c, d }')
done

if [ -z "$rate" ]; then
	echo "running the move ..." >&2
	alone=$(read64K_mv)
	t0=$(date +%s%N)
	ctl move d3 --to d4 >/dev/null
	during=$(read64K_mv)
	wait_log "volume 'mv': moved off"
	move_ms=$((($(date +%s%N) - t0) / 1000000))
fi

printf '\nmirror bench: %ss per run, %s, %s, kernel %s, %s cores\n' "$secs" "$dir" \
	"$([ -n "$rate" ] && echo "raw devices limited to $rate bits/s each" || echo "raw files in memory")" \
	"$(uname -r)" "$(nproc)"
printf '%-10s %12s %12s %8s   %s\n' workload linear mirror ratio 'runs'
for w in read64K write64K; do
	printf '%-10s %12s %12s %8s   %s\n' "$w" "${res[$w,lin]}" "${res[$w,mir]}" \
		"$(ratio "${res[$w,mir]}" "${res[$w,lin]}")" "${res[$w,runs]}"
done
[ -n "$rate" ] || printf 'move      read64K on a 1 GiB volume %.1f MiB/s alone, %.1f MiB/s while it moved (%.3f); the move took %d ms\n' \
	"$alone" "$during" "$(ratio "$during" "$alone")" "$move_ms"
