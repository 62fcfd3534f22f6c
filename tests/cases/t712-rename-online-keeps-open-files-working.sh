#!/usr/bin/env bash
# t712-rename-online-keeps-open-files-working.sh: `mapperctl rename` while
# a loop device and an open descriptor use the volume: the new name shows
# in the mount at once, the old one is gone, I/O through what was open
# goes on, and the name survives a restart; a taken or bad name is refused
# and changes nothing.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires_loop
requires jq

make_pool
add_file_device d0 64M >/dev/null
mapperctl create thin-pool tp --size 32M >/dev/null
mapperctl create thin vm1 --pool tp --size 8M >/dev/null
mapperctl create linear other --size 4M >/dev/null
start_daemon

head -c $((4 * MiB)) /dev/urandom >data
dev=$(attach_loop "$MNT/vm1")
exec 3<>"$MNT/vm1"
mapperctl rename vm1 web1 >/dev/null || fail "rename failed"
[ -e "$MNT/web1" ] || fail "the new name is not in the mount"
[ ! -e "$MNT/vm1" ] || fail "the old name is still in the mount"
dd if=data of="$dev" bs=1M oflag=direct status=none || fail "the loop device stopped working"
cmp data <(head -c $((4 * MiB)) "$MNT/web1") || fail "writes through the loop device are not in web1"
printf 'fd3' | dd of=/proc/self/fd/3 bs=1 seek=$((5 * MiB)) conv=notrunc status=none ||
	fail "the open descriptor stopped working"
detach_loop "$dev"
exec 3>&-

expect_fail -m "volume 'other' exists" mapperctl rename web1 other
expect_fail -m "invalid name" mapperctl rename web1 'a/b'
expect_fail -m "no volume 'vm1'" mapperctl rename vm1 x
mapperctl rename tp pool0 >/dev/null || fail "a thin pool cannot be renamed"
[ "$(mapperctl status web1 --json | json_get .pool)" = pool0 ] || fail "web1 does not name its renamed pool"

stop_daemon
start_daemon
cmp data <(head -c $((4 * MiB)) "$MNT/web1") || fail "web1 lost its data or its name across a restart"
[ "$(dd if="$MNT/web1" bs=1 skip=$((5 * MiB)) count=3 status=none)" = fd3 ] ||
	fail "the write through the open descriptor is lost"
