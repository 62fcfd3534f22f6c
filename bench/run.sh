#!/usr/bin/env bash
# bench/run.sh: how close a linear volume comes to its raw backing file.
#
# One run, side by side, on one raw file in /dev/shm (a ramdisk, like the
# dm benchmarks, so the backing costs nothing and the overhead shows):
#
#   raw        the raw device file itself (its data area, after the label)
#   volume     a linear volume on it, through the mapperfs mount
#   loop:vol   a direct-I/O loop device (4 KiB sectors) on the volume file
#   loop:raw   a direct-I/O loop device on the raw file's data area: the
#              "raw block device" baseline for the loop:vol row
#   qsd        qemu-storage-daemon's FUSE export of the raw file, if
#              installed (a weak bar, for reference)
#
# and four fio workloads, time-based, each figure printed with its ratio to
# the raw row:
#
#   seq1M      sequential 1 MiB reads, QD1, O_DIRECT, psync        MiB/s
#   rand64K    random 64 KiB reads, 4 jobs x QD32, libaio, O_DIRECT MiB/s
#   rw512      random 512 B read/write, 8 jobs, O_DIRECT, psync    kIOPS
#   lat4K      random 4 KiB reads, QD1, O_DIRECT: p50 / p99 clat   usec
#
# Environment: BENCH_SECONDS (default 10) per workload and target,
# BENCH_SIZE (default 2G), BENCH_DIR (default a new dir in /dev/shm).
# Needs root (loop devices, FUSE).  Not run by CI.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
bin=$src/build/bin
secs=${BENCH_SECONDS:-10}
size=${BENCH_SIZE:-2G}
MiB=$((1024 * 1024))

. "$src/tests/lib/deps.sh"
deps_install
deps_kernel
if [ ! -x "$bin/mapperfs" ] || [ ! -x "$bin/mapperctl" ]; then
	deps_build build >/dev/null
fi

dir=${BENCH_DIR:-$(mktemp -d /dev/shm/mapperfs-bench.XXXXXX)}
mkdir -p "$dir"
pool=$dir/pool
mnt=$dir/mnt
raw=$dir/raw.img
loops=()
pid=
qsd_pid=

cleanup()
{
	local dev

	set +e
	for dev in "${loops[@]}"; do
		losetup -d "$dev"
	done
	if mountpoint -q "$mnt" 2>/dev/null; then
		fusermount3 -u "$mnt" || umount -l "$mnt"
	fi
	[ -n "$pid" ] && timeout 30 tail --pid="$pid" -f /dev/null
	if [ -n "$qsd_pid" ]; then
		kill "$qsd_pid" 2>/dev/null
		timeout 30 tail --pid="$qsd_pid" -f /dev/null
	fi
	[ -z "${BENCH_DIR:-}" ] && rm -rf --one-file-system "$dir"
}
trap cleanup EXIT

bytes=$(numfmt --from=iec "$size")
export MAPPERFS_POOL=$pool
"$bin/mapperctl" init >/dev/null
"$bin/mapperctl" device add "$raw" --create $((bytes + MiB)) --name raw >/dev/null
"$bin/mapperctl" create linear vol --size "$bytes" --on raw >/dev/null
# Fill it, so that no row reads holes that tmpfs answers for free.
dd if=/dev/zero of="$raw" bs=1M seek=1 count=$((bytes / MiB)) conv=notrunc status=none
mkdir -p "$mnt"
"$bin/mapperfs" --pool "$pool" "$mnt"
pid=$(cat "$pool/mapperfs.pid")

notes=()
raw_direct=1
if ! dd if="$raw" of=/dev/null bs=4096 count=1 iflag=direct status=none 2>/dev/null; then
	raw_direct=0
	notes+=("$raw does not support O_DIRECT (tmpfs before Linux 6.6): the raw row is buffered")
fi

attach()	# FILE [LOSETUP_ARGS...]: sets $dev, records it for cleanup
{
	dev=$(losetup --find --show --direct-io=on --sector-size 4096 "${@:2}" "$1")
	loops+=("$dev")
	[ "$(cat "/sys/block/${dev#/dev/}/loop/dio")" = 1 ] ||
		notes+=("$dev on $1 fell back to buffered I/O")
}
attach "$mnt/vol"
loop_vol=$dev
attach "$raw" --offset "$MiB" --sizelimit "$bytes"
loop_raw=$dev

targets=(raw volume loop:vol loop:raw)
declare -A file=([raw]=$raw [volume]=$mnt/vol [loop:vol]=$loop_vol [loop:raw]=$loop_raw)
declare -A offset=([raw]=$MiB)
declare -A direct=([raw]=$raw_direct)

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

# fio_json NAME TARGET ARGS...: runs one workload on one target.
fio_json()
{
	local name=$1 t=$2

	shift 2
	fio --output-format=json --name="$name" --filename="${file[$t]}" \
		--offset="${offset[$t]:-0}" --size="$bytes" --direct="${direct[$t]:-1}" \
		--time_based --runtime="$secs" --ramp_time=1 --group_reporting "$@" \
		2>"$dir/fio.err" || { echo null; return 0; }
}

declare -A res
for t in "${targets[@]}"; do
	echo "running $t ..." >&2
	res[$t,seq1M]=$(fio_json seq1M "$t" --rw=read --bs=1M --ioengine=psync --iodepth=1 |
		jq '.jobs[0].read.bw / 1024')
	res[$t,rand64K]=$(fio_json rand64K "$t" --rw=randread --bs=64K --ioengine=libaio \
		--iodepth=32 --numjobs=4 | jq '.jobs[0].read.bw / 1024')
	if [ "$(stat -L -c %F "${file[$t]}")" = "block special file" ]; then
		res[$t,rw512]=null	# 4 KiB sectors: 512-byte O_DIRECT is EINVAL by design
	else
		res[$t,rw512]=$(fio_json rw512 "$t" --rw=randrw --bs=512 --ioengine=psync --numjobs=8 |
			jq '(.jobs[0].read.iops + .jobs[0].write.iops) / 1000')
	fi
	lat=$(fio_json lat4K "$t" --rw=randread --bs=4K --ioengine=psync --iodepth=1)
	res[$t,p50]=$(jq '.jobs[0].read.clat_ns.percentile["50.000000"] / 1000' <<<"$lat")
	res[$t,p99]=$(jq '.jobs[0].read.clat_ns.percentile["99.000000"] / 1000' <<<"$lat")
done

# cell VALUE BASE: "value (ratio)", or n/a.
cell()
{
	awk -v v="$1" -v b="$2" 'BEGIN {
		if (v == "null" || v == "") { printf "%18s", "n/a"; exit }
		if (b == "null" || b == "" || b == 0) { printf "%18.1f", v; exit }
		printf "%11.1f (%.2f)", v, v / b }'
}

printf '\nmapperfs bench: %s per run, %s on %s, kernel %s\n' "${secs}s" "$size" "$dir" "$(uname -r)"
printf 'each figure: value (ratio to raw); latency ratios > 1 are slower\n\n'
printf '%-10s %18s %18s %18s %18s %18s\n' target 'seq1M MiB/s' 'rand64K MiB/s' 'rw512 kIOPS' \
	'lat4K p50 us' 'lat4K p99 us'
for t in "${targets[@]}"; do
	printf '%-10s' "$t"
	for m in seq1M rand64K rw512 p50 p99; do
		printf ' %s' "$(cell "${res[$t,$m]}" "${res[raw,$m]}")"
	done
	printf '\n'
done
for n in "${notes[@]}"; do
	printf 'note: %s\n' "$n"
done
