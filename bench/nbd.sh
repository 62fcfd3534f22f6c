#!/usr/bin/env bash
# bench/nbd.sh: a linear volume on an NBD raw device against nbdfuse over
# the same server.
#
# One nbdkit memory server (1 GiB, a Unix socket) serves both sides at
# once: mapperfs, whose pool has the export as raw device "r1" (libnbd's
# asynchronous calls on each ring thread's io_uring, core/io/nbd_batch.c)
# and a linear volume "lin" on it; and nbdfuse (libnbd's FUSE client,
# Debian's libnbd-bin), which shows the whole export as one file.  Both
# read the same bytes, filled first (no run reads holes the plugin
# answers for free).  A third column is the ceiling of any FUSE client on
# this machine: fio's own libnbd engine on the same export, no FUSE and no
# kernel between fio and the server.  Each workload runs mapperfs,
# nbdfuse, libnbd, libnbd, nbdfuse, mapperfs, time-based, and each side's
# two runs are averaged:
#
#   read64K    1 job x QD32 random 64 KiB reads, libaio, O_DIRECT    MiB/s
#   read64Kx4  4 jobs x QD32, the same                               MiB/s
#   write64K   1 job x QD32 random 64 KiB writes                     MiB/s
#   seq1M      1 job x QD4 sequential 1 MiB reads                    MiB/s
#   lat4K      4 KiB random reads at QD1: the median completion, us
#
# For read64K it also says the CPU seconds each client and nbdkit spent
# per GiB read (/proc/PID/stat around each run).
#
# The figure asked of mapperfs is read64K >= 2 x nbdfuse's; the last
# column says how far above nbdfuse the FUSE-less client itself is.
# Environment: BENCH_SECONDS (default 5) per run, BENCH_TRANSPORT,
# BENCH_WORKLOADS (a space-separated subset of the list above).
# Needs root (FUSE), nbdkit, nbdfuse, fio, jq.  Not run by CI.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
bin=$src/build/bin
secs=${BENCH_SECONDS:-5}
MiB=$((1024 * 1024))
size=$((896 * MiB))

[ -x "$bin/mapperfs" ] && [ -x "$bin/mapperctl" ] ||
	{ echo "bench/nbd.sh: build first (cmake --build build)" >&2; exit 1; }
for t in nbdkit nbdfuse fio jq; do
	command -v "$t" >/dev/null || { echo "bench/nbd.sh: needs $t" >&2; exit 1; }
done
dir=$(mktemp -d "${BENCH_DIR:-/tmp}/mapperfs-nbd-bench.XXXXXX")
pool=$dir/pool
mnt=$dir/mnt
fuse=$dir/nbdfuse
pid= fuse_pid=

cleanup()
{
	set +e
	if mountpoint -q "$mnt" 2>/dev/null; then
		fusermount3 -u "$mnt" || umount -l "$mnt"
	fi
	[ -n "$pid" ] && timeout 30 tail --pid="$pid" -f /dev/null
	if mountpoint -q "$fuse" 2>/dev/null; then
		fusermount3 -u "$fuse" || umount -l "$fuse"
	fi
	[ -n "$fuse_pid" ] && timeout 30 tail --pid="$fuse_pid" -f /dev/null
	[ -s "$dir/nbdkit.pid" ] && kill "$(cat "$dir/nbdkit.pid")"
	rm -rf --one-file-system "$dir"
}
trap cleanup EXIT

nbdkit --unix "$dir/sock" --pidfile "$dir/nbdkit.pid" memory size=1G </dev/null
uri="nbd+unix:///?socket=$dir/sock"
ctl() { "$bin/mapperctl" "$@"; }
export MAPPERFS_POOL=$pool
ctl init >/dev/null
ctl device add "$uri" --name r1 >/dev/null
ctl create linear lin --size $size --on r1 >/dev/null
mkdir -p "$mnt" "$fuse"
"$bin/mapperfs" --pool "$pool" "$mnt" -o "transport=${BENCH_TRANSPORT:-auto}" 2>"$dir/mapperfs.err"
pid=$(cat "$pool/mapperfs.pid")
server_pid=$(cat "$dir/nbdkit.pid")
mkfifo "$dir/nbdfuse.pid"
nbdfuse -P "$dir/nbdfuse.pid" "$fuse/disk" --unix "$dir/sock" </dev/null >/dev/null 2>&1 &
fuse_pid=$(timeout 30 cat "$dir/nbdfuse.pid")
dd if=/dev/urandom of="$mnt/lin" bs=1M count=$((size / MiB)) oflag=direct conv=notrunc status=none

# fio_run NAME TARGET ARGS...: one time-based workload, JSON on stdout.
# TARGET is a file, or the export itself (fio's nbd engine) for "libnbd".
fio_run()
{
	local name=$1 target=$2 engine=$3

	shift 3
	# The export's first MiB is the pool's: r1's label, which every new
	# connection of mapperfs checks.  nbdfuse and libnbd keep off it.
	if [ "$target" = libnbd ]; then
		target=(--ioengine=nbd --uri="$uri" --offset=1M)
	elif [ "$target" = "$fuse/disk" ]; then
		target=(--filename="$target" --direct=1 --ioengine="$engine" --offset=1M)
	else
		target=(--filename="$target" --direct=1 --ioengine="$engine")
	fi
	fio --output-format=json --name="$name" "${target[@]}" --size=$size \
		--time_based --runtime="$secs" --ramp_time=1 \
		--group_reporting "$@" 2>"$dir/fio.err" |
		sed -n '/^{/,$p'	# the nbd engine says "connected" first
}

# CPU time (ticks) of a process, user and system.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# read64K also notes the CPU its client (the FUSE daemon; fio itself for
# libnbd, not counted) and nbdkit spent, in $dir/cpu: "side ticks ticks MiB/s".
read64K()
{
	local side=libnbd client= c0=0 c1=0 k0 k1 bw

	case $1 in
	"$mnt/lin") side=mapperfs client=$pid ;;
	"$fuse/disk") side=nbdfuse client=$fuse_pid ;;
	esac
	k0=$(ticks "$server_pid")
	[ -z "$client" ] || c0=$(ticks "$client")
	bw=$(fio_run read64K "$1" libaio --rw=randread --bs=64K --iodepth=32 |
		jq '.jobs[0].read.bw / 1024')
	k1=$(ticks "$server_pid")
	[ -z "$client" ] || c1=$(ticks "$client")
	echo "$side $((c1 - c0)) $((k1 - k0)) $bw" >>"$dir/cpu"
	echo "$bw"
}
read64Kx4() { fio_run read64Kx4 "$1" libaio --rw=randread --bs=64K \
	--iodepth=32 --numjobs=4 | jq '.jobs[0].read.bw / 1024'; }
write64K() { fio_run write64K "$1" libaio --rw=randwrite --bs=64K --iodepth=32 |
	jq '.jobs[0].write.bw / 1024'; }
seq1M() { fio_run seq1M "$1" libaio --rw=read --bs=1M --iodepth=4 |
	jq '.jobs[0].read.bw / 1024'; }
lat4K() { fio_run lat4K "$1" psync --rw=randread --bs=4K |
	jq '.jobs[0].read.clat_ns.percentile["50.000000"] / 1000'; }

mean() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (a + b) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

declare -A res
read -ra workloads <<<"${BENCH_WORKLOADS:-read64K read64Kx4 write64K seq1M lat4K}"
for w in "${workloads[@]}"; do
	echo "running $w ..." >&2
	m1=$($w "$mnt/lin"); f1=$($w "$fuse/disk"); n1=$($w libnbd)
	n2=$($w libnbd); f2=$($w "$fuse/disk"); m2=$($w "$mnt/lin")
	res[$w,m]=$(mean "$m1" "$m2")
	res[$w,f]=$(mean "$f1" "$f2")
	res[$w,n]=$(mean "$n1" "$n2")
	res[$w,runs]="mapperfs $m1 $m2, nbdfuse $f1 $f2, libnbd $n1 $n2"
done

printf '\nnbd bench: %ss per run, nbdkit memory over a Unix socket, transport %s, kernel %s, %s cores\n' \
	"$secs" "${BENCH_TRANSPORT:-auto}" "$(uname -r)" "$(nproc)"
printf '%-10s %10s %10s %8s %10s %14s   %s\n' workload mapperfs nbdfuse ratio \
	libnbd libnbd/nbdfuse runs
for w in "${workloads[@]}"; do
	printf '%-10s %10s %10s %8s %10s %14s   %s\n' "$w" "${res[$w,m]}" "${res[$w,f]}" \
		"$(ratio "${res[$w,m]}" "${res[$w,f]}")" "${res[$w,n]}" \
		"$(ratio "${res[$w,n]}" "${res[$w,f]}")" "${res[$w,runs]}"
done
echo "(lat4K in microseconds: lower is better, the ratios too; the rest MiB/s;"
echo " libnbd: fio's nbd engine on the export, no FUSE: the ceiling of a FUSE client)"
# CPU seconds per GiB read in read64K's runs (each runs secs + 1 s of ramp).
awk -v hz="$(getconf CLK_TCK)" -v secs="$secs" '
	{ c[$1] += $2; k[$1] += $3; gib[$1] += $4 * (secs + 1) / 1024 }
	END {
		printf "read64K CPU seconds per GiB read, client / nbdkit:"
		n = split("mapperfs nbdfuse libnbd", side, " ")
		for (i = 1; i <= n; i++) {
			s = side[i]
			if (!gib[s]) continue
			printf " %s %s / %.3f;", s,
				s == "libnbd" ? "(fio)" : sprintf("%.3f", c[s] / hz / gib[s]),
				k[s] / hz / gib[s]
		}
		printf "\n"
	}' "$dir/cpu"
