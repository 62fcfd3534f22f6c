#!/usr/bin/env bash
# t533-pool-refuses-its-own-bytes-as-origin-or-device.sh: a volume file of
# the pool's own mount, directly or through a loop device, is refused as
# an origin and as a raw device in one line (a FUSE worker reading it
# would wait for itself: the reader hung in D state, the daemon could not
# even be killed); so are the pool's own files (its database, its log) as
# either, and a raw device of the pool as an origin.  Nothing is created, and the
# daemon keeps serving.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires_loop
requires jq

make_pool
add_file_device d0 64M >/dev/null
mapperctl create thin-pool tp --size 32M >/dev/null
mapperctl create thin src --pool tp --size 8M >/dev/null
start_daemon

head -c $((8 * MiB)) /dev/urandom >data
dd if=data of="$MNT/src" bs=1M conv=notrunc,fsync status=none || fail "writing src failed"
loop=$(attach_loop "$MNT/src")

expect_fail -m "'$MNT/src' is served by this pool's own mount" \
	mapperctl create thin o1 --pool tp --size 8M --origin "$MNT/src"
expect_fail -m "'$loop' is served by this pool's own mount" \
	mapperctl create thin o2 --pool tp --size 8M --origin "$loop"
expect_fail -m "'$loop' is served by this pool's own mount" mapperctl device add "$loop" --force
expect_fail -m "'$MNT/src' is served by this pool's own mount" \
	mapperctl device add "$MNT/src" --force
expect_fail -m "is the pool's own file" \
	mapperctl create thin o3 --pool tp --size 8M --origin "$POOL/pool.db"
expect_fail -m "is the pool's own file" mapperctl device add "$POOL/pool.db" --force
expect_fail -m "is the pool's own file" mapperctl device add "$POOL/mapperfs.log" --force
expect_fail -m "is a raw device of this pool" \
	mapperctl create thin o4 --pool tp --size 8M --origin "$(device_path d0)"

[ "$(mapperctl list --json | jq '[.[] | select(.name | test("^o[0-9]$"))] | length')" -eq 0 ] ||
	fail "a refused origin left a volume behind"
[ "$(mapperctl device list --json | jq length)" -eq 1 ] || fail "a refused device was added"
cmp data "$MNT/src" || fail "src does not read back after the refusals"
cmp data "$loop" || fail "the loop device over src does not read back"
mapperctl check >/dev/null || fail "check fails"
