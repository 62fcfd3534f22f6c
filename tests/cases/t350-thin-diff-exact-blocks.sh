#!/usr/bin/env bash
# t350-thin-diff-exact-blocks.sh: `diff` between a snapshot and its origin
# reports exactly the blocks written after the snapshot, online and
# offline; rollback returns the origin to the snapshot.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 64M >/dev/null
mapperctl create thin-pool tp --size 32M >/dev/null
mapperctl create thin v --pool tp --size 256M >/dev/null
start_daemon

head -c $((8 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=1M conv=notrunc,fsync status=none
mapperctl snapshot v s >/dev/null
printf 'y' | dd of="$MNT/v" bs=1 seek=$((3 * 65536 + 7)) conv=notrunc status=none
dd if=/dev/urandom of="$MNT/v" bs=64K seek=10 count=3 conv=notrunc status=none
dd if=/dev/urandom of="$MNT/v" bs=64K seek=2000 count=1 conv=notrunc,fsync status=none
want=$(printf '%s\n' "$((3 * 65536)) 65536" "$((10 * 65536)) $((3 * 65536))" "$((2000 * 65536)) 65536")
ranges() { mapperctl diff "$1" "$2" --json | jq -r '.[] | "\(.offset) \(.length)"'; }
[ "$(ranges s v)" = "$want" ] || fail "diff online: $(ranges s v)"
mapperctl diff s v | grep -q '^3 ranges, 320.00 KiB in blocks of 65536 bytes$' ||
	fail "diff's text has no total: $(mapperctl diff s v)"
[ "$(mapperctl diff s v --json | json_get '.[1].blocks')" -eq 3 ] || fail "diff --json"
[ -z "$(ranges s s)" ] || fail "a volume differs from itself"

stop_daemon
[ "$(ranges s v)" = "$want" ] || fail "diff offline: $(ranges s v)"
mapperctl rollback v s >/dev/null
start_daemon
cmp data <(head -c $((8 * MiB)) "$MNT/v") || fail "rollback did not restore the snapshot's content"
[ -z "$(ranges s v)" ] || fail "after rollback the volumes still differ"
dd if=/dev/urandom of="$MNT/v" bs=64K count=1 conv=notrunc,fsync status=none
exec 3<"$MNT/v"
expect_fail -m busy mapperctl rollback v s
exec 3<&-
mapperctl rollback v s >/dev/null
cmp data <(head -c $((8 * MiB)) "$MNT/v") || fail "online rollback did not restore the snapshot's content"
mapperctl check >check.log || { cat check.log >&2; fail "check failed"; }
