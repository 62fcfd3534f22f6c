#!/usr/bin/env bash
# t714-activation-takes-volumes-in-and-out-of-the-mount.sh: snapshots are
# created inactive (not in the mount) unless --active, as LVM's are;
# activate puts one in the mount with the origin's content, deactivate
# takes it out (refused while it is open), inactive volumes can still be
# snapshotted and rolled back to, and activation survives a restart.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 64M >/dev/null
mapperctl create thin-pool tp --size 32M >/dev/null
mapperctl create thin v --pool tp --size 8M >/dev/null
start_daemon

head -c $((2 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=64K conv=notrunc,fsync status=none
mapperctl snapshot v s | grep -q inactive || fail "snapshot does not say it is inactive"
[ ! -e "$MNT/s" ] || fail "an inactive snapshot is in the mount"
[ "$(mapperctl status s --json | json_get .active)" = false ] || fail "status calls s active"
mapperctl list | grep -Eq '^s .* rw- ' || fail "list does not show s inactive"

mapperctl activate s >/dev/null
cmp data <(head -c $((2 * MiB)) "$MNT/s") || fail "the activated snapshot lacks the origin's content"
exec 3<"$MNT/s"
expect_fail -m "busy" mapperctl deactivate s
exec 3<&-
mapperctl deactivate s >/dev/null
[ ! -e "$MNT/s" ] || fail "a deactivated volume is still in the mount"

# Inactive, it still serves as an origin and a rollback source.
dd if=/dev/urandom of="$MNT/v" bs=64K count=4 conv=notrunc,fsync status=none
mapperctl snapshot s s2 >/dev/null || fail "no snapshot of an inactive volume"
mapperctl rollback v s >/dev/null || fail "rollback to an inactive snapshot failed"
cmp data <(head -c $((2 * MiB)) "$MNT/v") || fail "rollback to an inactive snapshot did not restore v"

stop_daemon
start_daemon
[ ! -e "$MNT/s" ] || fail "s came back active after a restart"
mapperctl activate s2 >/dev/null
stop_daemon
start_daemon
[ -e "$MNT/s2" ] || fail "s2's activation did not survive a restart"
