#!/usr/bin/env bash
# t020-loop-direct-io-on-volume.sh: a direct-I/O loop device with 4 KiB
# sectors over a linear volume file works (the kernel keeps dio on, which it
# silently drops if the file cannot do O_DIRECT), and what goes through it
# reads back and lands on the raw devices where the volume's segments say.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires_loop
requires jq

make_pool
add_file_device d0 24M >/dev/null
add_file_device d1 24M >/dev/null
mapperctl create linear v --size 40M --on d0,d1	# must span both devices
start_daemon

dev=$(attach_loop "$MNT/v")
[ "$(loop_dio "$dev")" = 1 ] || fail "$dev fell back to buffered I/O (dio=$(loop_dio "$dev"))"
[ "$(blockdev --getss "$dev")" -eq 4096 ] || fail "$dev sector size is $(blockdev --getss "$dev")"
[ "$(blockdev --getsize64 "$dev")" -eq $((40 * MiB)) ] ||
	fail "$dev is $(blockdev --getsize64 "$dev") bytes, want 40 MiB"

head -c $((40 * MiB)) /dev/urandom >data
dd if=data of="$dev" bs=1M oflag=direct conv=fsync status=none
dd if="$dev" bs=1M iflag=direct status=none | cmp data - ||
	fail "$dev does not read back what was written"
# An unaligned-in-the-volume, sector-aligned rewrite in the middle.
head -c $((3 * MiB + 4096)) /dev/urandom >patch
dd if=patch of="$dev" bs=4096 seek=$((5 * MiB / 4096 + 3)) oflag=direct conv=notrunc,fsync status=none
dd if=patch of=data bs=4096 seek=$((5 * MiB / 4096 + 3)) conv=notrunc status=none
dd if="$dev" bs=1M iflag=direct status=none | cmp data - ||
	fail "$dev does not read back a rewrite in the middle"
detach_loop "$dev"

cmp data "$MNT/v" || fail "volume file differs from what went through $dev"
vol_from_devices v >backing
cmp data backing || fail "the raw devices do not hold what went through $dev"
