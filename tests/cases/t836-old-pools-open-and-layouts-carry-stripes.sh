#!/usr/bin/env bash
# t836-old-pools-open-and-layouts-carry-stripes.sh: a pool database of
# schema version 8 (before stripes) opens, is brought to version 9, and
# its linear volume reads as it did; a layout written before stripes (no
# stripe record) still restores.  A striped volume removed after a backup
# comes back whole with restore-layout: its stripes, chunk size, extents
# and bytes, and the layout that recover rebuilds from the devices'
# copies carries the stripe record too.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq sqlite3 cmp

make_pool
add_file_device d0 64M >/dev/null
add_file_device d1 64M >/dev/null
add_file_device d2 64M >/dev/null
mapperctl create linear old --size 4M --on d0 >/dev/null
start_daemon
head -c $((4 * MiB)) /dev/urandom >old.data
dd if=old.data of="$MNT/old" bs=1M conv=notrunc,fsync status=none
stop_daemon
mapperctl backup -o old.layout >/dev/null
! grep -q '^stripe ' old.layout || fail "a pool without striped volumes wrote a stripe record"

# Make it a version 8 database, as a mapperfs before stripes left it
# (and before what later versions added: allow_shrink, version 10,
# stale_legs, version 11, exports, version 12, thin_received, version 13,
# exports over TLS, version 14, and the thin space map, version 15).
latest=$(sqlite3 "$POOL/pool.db" 'PRAGMA user_version')
sqlite3 "$POOL/pool.db" 'ALTER TABLE volume DROP COLUMN allow_shrink;
	ALTER TABLE volume DROP COLUMN stale_legs; DROP TABLE stripe; DROP TABLE export;
	DROP TABLE thin_received;
	DROP TRIGGER thin_leaf_insert_stales_space; DROP TRIGGER thin_leaf_update_stales_space;
	DROP TRIGGER thin_leaf_delete_stales_space; DROP TABLE thin_space;
	ALTER TABLE thin_pool DROP COLUMN space_valid; ALTER TABLE thin_dir DROP COLUMN mapped;
	PRAGMA user_version = 8;'
mapperctl list >/dev/null || fail "a version 8 pool does not open"
[ "$(sqlite3 "$POOL/pool.db" 'PRAGMA user_version')" -eq "$latest" ] ||
	fail "the pool was not brought to version $latest"
start_daemon
cmp old.data "$MNT/old" || fail "the old linear volume reads otherwise"

mapperctl create linear sv --size 6M --stripes 3 --stripe-size 128K --on d0,d1,d2 >/dev/null
head -c $((6 * MiB)) /dev/urandom >sv.data
dd if=sv.data of="$MNT/sv" bs=1M conv=notrunc,fsync status=none
mapperctl status sv --json | jq -cS '{stripes, stripe_size, segments}' >sv.shape
mapperctl backup -o with-sv.layout >/dev/null
grep -q '^stripe volume=[0-9]* stripes=3 stripe_size=131072$' with-sv.layout ||
	fail "the backup lacks the stripe record: $(grep -c . with-sv.layout) lines"
mapperctl remove sv >/dev/null
stop_daemon

mapperctl restore-layout with-sv.layout >/dev/null || fail "restore-layout of a striped volume failed"
start_daemon
mapperctl status sv --json | jq -cS '{stripes, stripe_size, segments}' | cmp -s sv.shape - ||
	fail "sv came back otherwise: $(mapperctl status sv --json | jq -c '{stripes, stripe_size, segments}')"
cmp sv.data "$MNT/sv" || fail "sv's bytes differ after restore-layout"
mapperctl check >/dev/null || fail "check after restore-layout: $(mapperctl check)"
stop_daemon

# The devices' copies carry it: recover a lost pool.db from them.
mv "$POOL/pool.db" "$T_DIR/pool.db.lost"
rm -f "$POOL/pool.db-wal" "$POOL/pool.db-shm"
mapperctl recover --devices "$T_DIR/devices/d0.img" "$T_DIR/devices/d1.img" "$T_DIR/devices/d2.img" >recover.out 2>&1 ||
	fail "recover failed: $(tail -3 recover.out)"
start_daemon
mapperctl status sv --json | jq -cS '{stripes, stripe_size, segments}' | cmp -s sv.shape - ||
	fail "sv was recovered otherwise"
cmp sv.data "$MNT/sv" || fail "sv's bytes differ after recover"
stop_daemon

mapperctl restore-layout old.layout >/dev/null || fail "a layout from before stripes does not restore"
mapperctl list --json | jq -e 'map(.name) == ["old"]' >/dev/null || fail "restore-layout of the old layout: $(mapperctl list)"
