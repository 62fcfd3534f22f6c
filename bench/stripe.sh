#!/usr/bin/env bash
# bench/stripe.sh: what striping buys over raw devices that each read at
# one fixed rate, as disks do (lvcreate -i N over N spindles).
#
# Four raw devices, each an nbdkit memory disk behind the rate filter
# (`rate=`: the server's total, so each device has BENCH_RATE whatever
# the number of connections) made a file by nbdfuse, are the raw devices
# of one pool.  One run, side by side, sequential 1 MiB reads (libaio,
# QD16, O_DIRECT), time-based after a ramp that drains the filter's burst
# bucket:
#
#   raw1     one device's file, read directly: the rate a device gives
#   lin1     a linear volume on one device, through mapperfs
#   str2     a volume striped over 2 devices (64 KiB chunks, LVM's default)
#   str4     the same over 4 devices
#
# and the ratios str2 / raw1 and str4 / raw1, which should be at least
# 0.9 x 2 and 0.9 x 4 (a request is cut only at chunk edges, and the
# pieces go to their devices at once).  Each volume is read twice, in the
# order raw1 lin1 str2 str4 str4 str2 lin1 raw1, and the two averaged.
#
# Environment: BENCH_SECONDS (default 8) per run, BENCH_RATE (default
# 200M, bits per second as nbdkit reads it: 25 MB/s).  Needs root (FUSE),
# nbdkit with its rate filter, nbdfuse, fio, jq.  Not run by CI.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
bin=$src/build/bin
secs=${BENCH_SECONDS:-8}
rate=${BENCH_RATE:-200M}
MiB=$((1024 * 1024))
stripe=$((128 * MiB))		# bytes of each stripe, and of lin1

[ -x "$bin/mapperfs" ] && [ -x "$bin/mapperctl" ] ||
	{ echo "bench/stripe.sh: build first (cmake --build build)" >&2; exit 1; }
for p in nbdkit nbdfuse fio jq; do
	command -v "$p" >/dev/null || { echo "bench/stripe.sh: needs $p" >&2; exit 1; }
done
. "$src/bench/rate_devices.sh"
rate_tools_check bench/stripe.sh
dir=$(mktemp -d /dev/shm/mapperfs-stripe-bench.XXXXXX)
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
	rate_devices_stop
	rm -rf --one-file-system "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ctl() { "$bin/mapperctl" "$@"; }
export MAPPERFS_POOL=$pool
ctl init >/dev/null
for n in 0 1 2 3; do
	rate_device "nbd$n" 512M
	ctl device add "$dir/nbd$n/nbd" --name "r$n" >/dev/null
done
ctl create linear lin1 --size $stripe --on r0 >/dev/null
ctl create linear str2 --size $((2 * stripe)) --stripes 2 --on r0,r1 >/dev/null
ctl create linear str4 --size $((4 * stripe)) --stripes 4 --on r0,r1,r2,r3 >/dev/null
mkdir -p "$mnt"
"$bin/mapperfs" --pool "$pool" "$mnt" -o "transport=${BENCH_TRANSPORT:-auto}" 2>"$dir/mapperfs.err"
pid=$(cat "$pool/mapperfs.pid")

# seq FILE OFFSET SIZE: MiB/s of time-based sequential 1 MiB reads.
seq_read()
{
	fio --output-format=json --name=seq --filename="$1" --offset="$2" --size="$3" \
		--rw=read --bs=1M --ioengine=libaio --iodepth=16 --direct=1 --time_based \
		--runtime="$secs" --ramp_time=3 2>"$dir/fio.err" | jq '.jobs[0].read.bw / 1024'
}

raw1() { seq_read "$dir/nbd3/nbd" $((MiB + stripe)) $stripe; }	# a part no volume uses
lin1() { seq_read "$mnt/lin1" 0 $stripe; }
str2() { seq_read "$mnt/str2" 0 $((2 * stripe)); }
str4() { seq_read "$mnt/str4" 0 $((4 * stripe)); }

declare -A a b
for c in raw1 lin1 str2 str4; do
	echo "running $c ..." >&2
	a[$c]=$($c)
done
for c in str4 str2 lin1 raw1; do
	echo "running $c again ..." >&2
	b[$c]=$($c)
done
mean() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.1f", (x + y) / 2 }'; }
ratio() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.2f", x / y }'; }
base=$(mean "${a[raw1]}" "${b[raw1]}")

printf '# bench/stripe.sh, %s: %s per device (nbdkit rate filter), %s s per run, 1 MiB sequential reads, QD16\n' \
	"$(date -u +%Y-%m-%dT%H:%MZ)" "$rate" "$secs"
printf '%-6s %10s %10s %10s %9s %8s\n' case "MiB/s" run1 run2 "x raw1" "/ N"
for c in raw1 lin1 str2 str4; do
	n=1
	[ "$c" = str2 ] && n=2
	[ "$c" = str4 ] && n=4
	m=$(mean "${a[$c]}" "${b[$c]}")
	r=$(ratio "$m" "$base")
	printf '%-6s %10s %10.1f %10.1f %9s %8s\n' "$c" "$m" "${a[$c]}" "${b[$c]}" "$r" \
		"$(ratio "$r" "$n")"
done
