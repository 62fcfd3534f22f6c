#!/usr/bin/env bash
# t713-read-only-volumes-refuse-writes.sh: a volume made --read-only, or
# set so online while a file has it open, refuses writes, discards and
# opening for writing with EROFS, shows mode 0400, reads as before, and is
# writable again after `set --read-write`; read-only snapshots too; the
# setting survives a restart.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq fallocate

make_pool
add_file_device d0 64M >/dev/null
mapperctl create thin-pool tp --size 32M >/dev/null
mapperctl create thin v --pool tp --size 8M >/dev/null
mapperctl create linear ro --size 4M --read-only >/dev/null
start_daemon

expect_fail -m "Read-only file system" dd if=/dev/zero of="$MNT/ro" bs=4K count=1 conv=notrunc status=none
[ "$(stat -c %a "$MNT/ro")" = 400 ] || fail "a read-only volume's mode is $(stat -c %a "$MNT/ro")"
cmp -n $((4 * MiB)) "$MNT/ro" /dev/zero || fail "the read-only volume does not read"

head -c $((MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=64K conv=notrunc,fsync status=none
exec 3<>"$MNT/v"
mapperctl set v --read-only >/dev/null
expect_fail -m "Read-only file system" dd if=/dev/zero of=/proc/self/fd/3 bs=4K count=1 conv=notrunc status=none
expect_fail -m "Read-only file system" fallocate -p -o 0 -l 65536 "$MNT/v"
expect_fail -m "Read-only file system" truncate -s 16M "$MNT/v"
exec 3>&-
cmp data <(head -c $((MiB)) "$MNT/v") || fail "the read-only volume changed"
[ "$(mapperctl status v --json | json_get .read_only)" = true ] || fail "status does not say read-only"

mapperctl snapshot --active --read-only v s >/dev/null
expect_fail -m "Read-only file system" dd if=/dev/zero of="$MNT/s" bs=4K count=1 conv=notrunc status=none
mapperctl list | grep -Eq '^s .* roa ' || fail "list does not show s as read-only and active"

stop_daemon
start_daemon
expect_fail -m "Read-only file system" dd if=/dev/zero of="$MNT/v" bs=4K count=1 conv=notrunc status=none
mapperctl set v --read-write >/dev/null
dd if=/dev/zero of="$MNT/v" bs=4K count=1 conv=notrunc,fsync status=none || fail "set --read-write did not make it writable"
expect_fail -s 2 -m "exclude each other" mapperctl set v --read-only --read-write
