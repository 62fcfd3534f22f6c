# bench/lib.sh: what the scripts of bench/ share, sourced.
# shellcheck shell=bash disable=SC2034,SC2154 # sourced: the script sets $src, $bin, $size, $secs; uses $vol
#
# bench_setup installs what is missing (and gnuplot), switches FUSE over
# io_uring on, builds if needed, makes the scratch directory ($dir: in
# /dev/shm, or in /var/tmp with BENCH_BACKING=disk, unless BENCH_DIR) and
# the traps that undo everything on any exit, Ctrl-C included.
# serve NAME TRANSPORT makes a pool with one raw file and a linear volume
# of $size filling it, mounts it over TRANSPORT and sets $vol; attach
# FILE [LOSETUP_ARGS] makes a direct-I/O loop device and sets $dev,
# detach DEV undoes it; wait_gone PID waits for a daemon to exit.
# Expects $src, $bin and $size.

MiB=$((1024 * 1024))
# What is live, for bench_cleanup: loop devices, mount points, daemons
# (pids, or pid files read at cleanup: a daemon whose file is gone has
# exited), and qemu-storage-daemon, which stops when killed (its pid, or
# its pid file).
loops=()
pids=()
pidfiles=()
mnts=()
qsd_pid=
qsd_pidfile=
notes=()

# wait_gone PID: returns once process PID (not our child: a daemon that
# detached) has exited, or after 30 s.  Sleeps on a pidfd
# (tests/powercut/waitpid.c) where that helper is built; tail --pid
# looks once a second.
wait_gone()
{
	if [ -x "$bin/powercut-waitpid" ]; then
		timeout 30 "$bin/powercut-waitpid" "$1"
	else
		timeout 30 tail --pid="$1" -f /dev/null
	fi
}

bench_cleanup()
{
	local dev mnt pid pf

	set +e
	for dev in "${loops[@]}"; do
		losetup -d "$dev"
	done
	for pf in "${pidfiles[@]}"; do	# before the unmount, which ends them
		[ -s "$pf" ] && pids+=("$(cat "$pf")")
	done
	for mnt in "${mnts[@]}"; do
		if mountpoint -q "$mnt" 2>/dev/null; then
			fusermount3 -u "$mnt" || umount -l "$mnt"
		fi
	done
	for pid in "${pids[@]}"; do
		wait_gone "$pid"
	done
	[ -z "$qsd_pid" ] && [ -s "$qsd_pidfile" ] && qsd_pid=$(cat "$qsd_pidfile")
	if [ -n "$qsd_pid" ]; then
		kill "$qsd_pid" 2>/dev/null
		wait_gone "$qsd_pid"
	fi
	[ -z "${BENCH_DIR:-}" ] && rm -rf --one-file-system "$dir"
}

bench_setup()
{
	local base

	. "$src/tests/lib/deps.sh"
	deps_install "${MAPPERFS_BENCH_PACKAGES[@]}"
	deps_kernel
	deps_fuse_uring
	if [ ! -x "$bin/mapperfs" ] || [ ! -x "$bin/mapperctl" ]; then
		deps_build build >/dev/null
	fi
	if ! grep -q Y /sys/module/fuse/parameters/enable_uring 2>/dev/null; then
		echo "bench: FUSE over io_uring is not available here; cannot compare the transports" >&2
		exit 1
	fi
	case ${BENCH_BACKING:-shm} in
	shm) base=/dev/shm ;;
	disk) base=/var/tmp ;;
	*) echo "bench: BENCH_BACKING is shm (a ramdisk) or disk (/var/tmp), not '$BENCH_BACKING'" >&2; exit 2 ;;
	esac
	dir=${BENCH_DIR:-$(mktemp -d "$base/mapperfs-bench.XXXXXX")}
	mkdir -p "$dir"
	trap bench_cleanup EXIT
	# A signal ends the script through exit, so the EXIT trap undoes
	# everything (bash runs it after the command under way, fio or a
	# daemon's start, has returned).
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
	bytes=$(numfmt --from=iec "$size")
}

# serve NAME TRANSPORT: a pool NAME with raw file NAME.img and linear
# volume vol, mounted on NAME.mnt over TRANSPORT.  Sets $vol.
serve()
{
	local name=$1 transport=$2 pool=$dir/$1.pool raw=$dir/$1.img mnt=$dir/$1.mnt

	MAPPERFS_POOL=$pool "$bin/mapperctl" init >/dev/null
	MAPPERFS_POOL=$pool "$bin/mapperctl" device add "$raw" --create $((bytes + MiB)) \
		--name raw >/dev/null
	MAPPERFS_POOL=$pool "$bin/mapperctl" create linear vol --size "$bytes" --on raw >/dev/null
	# Fill it, so that no row reads holes that tmpfs answers for free.
	dd if=/dev/zero of="$raw" bs=1M seek=1 count=$((bytes / MiB)) conv=notrunc status=none
	mkdir -p "$mnt"
	mnts+=("$mnt")
	"$bin/mapperfs" --pool "$pool" "$mnt" -o "transport=$transport"
	pids+=("$(cat "$pool/mapperfs.pid")")
	grep -q "serving pool .* over $([ "$transport" = io_uring ] && echo io_uring ||
		echo /dev/fuse)" "$pool/mapperfs.log" ||
		{ echo "bench: $name is not served over $transport:" >&2; tail -n 3 "$pool/mapperfs.log" >&2; exit 1; }
	vol=$mnt/vol
}

# attach FILE [LOSETUP_ARGS...]: a direct-I/O loop device with 512-byte
# sectors; sets $dev, records it for cleanup.
attach()
{
	dev=$(losetup --find --show --direct-io=on --sector-size 512 "${@:2}" "$1")
	loops+=("$dev")
	[ "$(cat "/sys/block/${dev#/dev/}/loop/dio")" = 1 ] ||
		notes+=("$dev on $1 fell back to buffered I/O")
}

# detach DEV: detaches a loop device made by attach, and forgets it (its
# number may go to someone else's next loop device).
detach()
{
	local i

	losetup -d "$1"
	for i in "${!loops[@]}"; do
		[ "${loops[i]}" = "$1" ] && unset 'loops[i]'
	done
	return 0
}


# fio_json NAME FILE OFFSET DIRECT ARGS...: runs a workload, JSON on stdout
# ("null" if fio failed).
fio_json()
{
	local name=$1 f=$2 off=$3 direct=$4

	shift 4
	fio --output-format=json --name="$name" --filename="$f" --offset="$off" \
		--size="$bytes" --direct="$direct" --time_based --runtime="$secs" \
		--ramp_time=1 --group_reporting "$@" 2>"$dir/fio.err" || echo null
}

# workload_args WORKLOAD: fio's arguments for one of the workloads.
# first1M is one pass over the file, neither timed nor ramped (its
# arguments override fio_json's).
workload_args()
{
	case $1 in
	seq1M) echo --rw=read --bs=1M --ioengine=psync --iodepth=1 ;;
	first1M) echo --rw=read --bs=1M --ioengine=psync --iodepth=1 --time_based=0 --runtime=0 --ramp_time=0 ;;
	rand64K) echo --rw=randread --bs=64K --ioengine=libaio --iodepth=32 --numjobs=4 ;;
	rw512) echo --rw=randrw --bs=512 --ioengine=psync --numjobs=8 ;;
	lat4K) echo --rw=randread --bs=4K --ioengine=psync --iodepth=1 ;;
	esac
}
