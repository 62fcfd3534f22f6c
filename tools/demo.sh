#!/usr/bin/env bash
# tools/demo.sh: mapperfs end to end on a fresh Debian 12 machine (as root).
#
#   tools/demo.sh         install what is missing, build, and set up:
#                         demo/pool      a pool with two 1 GiB sparse file devices
#                                        (demo/devices/d0.img, d1.img)
#                         vol0           a 2.5 GiB linear volume spanning both
#                         demo/mnt       the mapperfs mount (demo/mnt/vol0)
#                         /dev/loopN     direct-I/O loop device, 4 KiB sectors
#                         demo/fs        ext4 on it, with a file written
#   tools/demo.sh stop    undo all of that (the files stay in demo/)
#
# Running it again first stops the previous demo.  Everything lives under
# demo/ in the source tree.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
demo=$src/demo
pool=$demo/pool
mnt=$demo/mnt
fsdir=$demo/fs
vmdir=$demo/vm1
bin=$src/build/bin

say() { printf '\n== %s\n' "$*"; }

stop()
{
	local dev dir pid

	for dir in "$fsdir" "$vmdir"; do
		if mountpoint -q "$dir" 2>/dev/null; then
			say "umount $dir"
			umount "$dir"
		fi
	done
	# Every loop device whose backing file is a volume of this demo.
	for dev in $(losetup -n -O NAME,BACK-FILE 2>/dev/null | awk -v m="$mnt/" 'index($2, m) == 1 { print $1 }'); do
		say "losetup -d $dev"
		losetup -d "$dev"
	done
	pid=$(cat "$pool/mapperfs.pid" 2>/dev/null || true)
	if mountpoint -q "$mnt" 2>/dev/null; then
		say "fusermount3 -u $mnt"
		fusermount3 -u "$mnt"
	fi
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
	   [ "$(readlink "/proc/$pid/exe")" = "$(realpath -m "$bin/mapperfs")" ]; then
		echo "waiting for mapperfs (pid $pid) to exit"
		timeout 30 tail --pid="$pid" -f /dev/null ||
			{ echo "demo: mapperfs $pid did not exit; see $pool/mapperfs.log" >&2; return 1; }
	fi
	rm -f "$demo/loopdev"
}

start()
{
	local dev vmdev

	. "$src/tests/lib/deps.sh"
	deps_install
	deps_kernel
	deps_fuse_uring
	say "build"
	mkdir -p "$demo"
	deps_build build >"$demo/build.log" 2>&1 ||
		{ tail -n 30 "$demo/build.log" >&2; echo "demo: build failed, see demo/build.log" >&2; exit 1; }
	echo "built $bin/mapperfs and $bin/mapperctl (log: demo/build.log)"

	stop
	rm -rf "$pool" "$demo/devices"
	mkdir -p "$demo/devices" "$mnt" "$fsdir" "$vmdir"
	export MAPPERFS_POOL=$pool

	say "mapperctl init; two 2 GiB raw devices; a 2.5 GiB linear volume"
	"$bin/mapperctl" init
	"$bin/mapperctl" device add "$demo/devices/d0.img" --create 2G --name d0
	"$bin/mapperctl" device add "$demo/devices/d1.img" --create 2G --name d1
	"$bin/mapperctl" create linear vol0 --size 2560M --on d0,d1

	say "mapperfs --pool $pool $mnt"
	"$bin/mapperfs" --pool "$pool" "$mnt"
	grep "serving pool" "$pool/mapperfs.log" | tail -n 1	# says which transport serves
	ls -l "$mnt"

	say "direct-I/O loop device on $mnt/vol0, ext4 on it"
	dev=$(losetup --find --show --direct-io=on --sector-size 4096 "$mnt/vol0")
	echo "$dev" >"$demo/loopdev"
	echo "$dev (dio=$(cat "/sys/block/${dev#/dev/}/loop/dio"))"
	mkfs.ext4 -q -F -L vol0 "$dev"
	mount "$dev" "$fsdir"
	echo "hello from mapperfs, $(date -u)" >"$fsdir/hello.txt"
	head -c 64M /dev/urandom >"$fsdir/random.bin"
	sync -f "$fsdir"

	say "a 1 GiB thin pool, a 4 GiB thin volume on it, ext4, an online snapshot"
	"$bin/mapperctl" create thin-pool tp --size 1G --block-size 64K
	"$bin/mapperctl" create thin vm1 --pool tp --size 4G
	vmdev=$(losetup --find --show --direct-io=on --sector-size 4096 "$mnt/vm1")
	echo "$vmdev on $mnt/vm1"
	mkfs.ext4 -q -F -L vm1 "$vmdev"
	mount "$vmdev" "$vmdir"
	echo "written before the snapshot" >"$vmdir/notes.txt"
	sync -f "$vmdir"
	"$bin/mapperctl" snapshot vm1 vm1-snap
	echo "written after the snapshot" >>"$vmdir/notes.txt"
	head -c 16M /dev/urandom >"$vmdir/new.bin"
	sync -f "$vmdir"
	say "mapperctl diff vm1-snap vm1 (what changed since the snapshot)"
	"$bin/mapperctl" diff vm1-snap vm1 | tail -n 5

	say "what is running"
	echo "pool:         $pool (log: $pool/mapperfs.log, pid $(cat "$pool/mapperfs.pid"))"
	echo "raw devices:  $demo/devices/d0.img, $demo/devices/d1.img"
	echo "volume file:  $mnt/vol0"
	echo "loop devices: $dev (vol0), $vmdev (vm1)"
	echo "file systems: $fsdir (vol0), $vmdir (vm1; vm1-snap holds it as it was)"
	say "mapperctl list"
	"$bin/mapperctl" list
	say "mapperctl status vol0"
	"$bin/mapperctl" status vol0
	say "df -h demo/fs demo/vm1"
	df -h "$fsdir" "$vmdir"
	cat <<EOF

Try:  MAPPERFS_POOL=$pool $bin/mapperctl extend vol0 --size 2800M \\
        && losetup -c $dev && resize2fs $dev
Stop: $0 stop
EOF
}

case ${1:-start} in
start) start ;;
stop) stop; echo "demo stopped" ;;
*) echo "usage: $0 [start|stop]" >&2; exit 2 ;;
esac
