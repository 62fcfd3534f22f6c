#!/usr/bin/env bash
# t535-repair-after-a-snapshots-origin-is-removed.sh: removing the volume
# a snapshot was taken of, while the daemon runs, leaves nothing stale
# behind: `repair`, which writes every thin row anew, succeeds at once,
# not only after a restart, instead of saying that the pool database is
# locked by another process while nothing else has it open.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 128M >/dev/null
mapperctl create thin-pool tp --size 64M >/dev/null
mapperctl create thin a --pool tp --size 8M >/dev/null
start_daemon
dd if=/dev/urandom of="$MNT/a" bs=64K count=4 conv=notrunc,fsync status=none
mapperctl snapshot a s >/dev/null
[ "$(mapperctl status s --json | json_get .origin)" = a ] || fail "s does not name a as its origin"
mapperctl remove a >/dev/null

mapperctl repair tp >repair.out 2>repair.err ||
	fail "repair after removing a snapshot's origin failed: $(cat repair.err)"
grep -q "thin pool 'tp' repaired: 1 volume, 0 blocks lost" repair.out ||
	fail "repair said: $(cat repair.out)"
[ "$(mapperctl status s --json | jq -r '.origin // "none"')" = none ] ||
	fail "s still names the removed volume as its origin"
mapperctl repair tp >/dev/null || fail "a second repair failed"
mapperctl check tp >/dev/null || fail "check fails after the repair"
