#!/usr/bin/env bash
# t823-an-old-pool-db-does-not-roll-the-devices-back.sh: pool.db put back
# from a copy older than the devices' layout is said at warning when the
# pool opens, and the devices' newer layout is kept in the archive before
# the pool numbers past it, naming the thin volumes whose maps are lost:
# restore-layout of that entry brings back the linear volume made after
# the copy, bytes and all.  A device whose copy is older
# than pool.db is rewritten, and said so too.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
d0=$(add_file_device d0 64M)
mapperctl create linear a --size 8M >/dev/null
mapperctl create thin-pool tp --size 16M >/dev/null
cp "$POOL/pool.db" "$T_DIR/old.db"
mapperctl create linear late --size 8M >/dev/null
mapperctl create thin late-thin --pool tp --size 8M >/dev/null
start_daemon
dd if=/dev/urandom of="$MNT/late" bs=1M count=8 conv=notrunc,fsync status=none
sum=$(sha "$MNT/late")
stop_daemon

cp "$T_DIR/old.db" "$POOL/pool.db"
rm -f "$POOL/pool.db-wal" "$POOL/pool.db-shm"
start_daemon
grep -q "warning: pool.db holds layout [0-9]*, older than copy [0-9]* on '$d0'" "$POOL/mapperfs.log" ||
	fail "no warning of the old pool.db: $(grep -i layout "$POOL/mapperfs.log")"
grep -q "maps of thin volumes it has and pool.db has not are lost.*'late-thin'" "$POOL/mapperfs.log" ||
	fail "the warning does not name late-thin, whose map is lost"
entry=$(grep -o "kept in [^;]*" "$POOL/mapperfs.log" | head -1 | cut -d' ' -f3)
[ -f "$entry" ] || fail "the devices' layout was not kept: '$entry'"
grep -q '^volume .* name=late ' "$entry" || fail "the kept layout lacks late"
mapperctl list --json | jq -e 'map(.name) | index("late") == null' >/dev/null ||
	fail "the old pool.db should not know late"
stop_daemon

expect_fail -s 1 -m "1 thin volume of the layout cannot be restored" mapperctl restore-layout "$entry"
mapperctl restore-layout --force "$entry" >/dev/null || fail "restore-layout of the kept layout failed"
start_daemon
[ "$(sha "$MNT/late")" = "$sum" ] || fail "late's bytes did not come back"
stop_daemon

# A device copy older than pool.db: rewritten, and said.
dd if="$d0" of="$T_DIR/area" bs=4096 skip=1 count=255 status=none
mapperctl create linear b --size 4M >/dev/null
mapperctl create linear c --size 4M >/dev/null
dd if="$T_DIR/area" of="$d0" bs=4096 seek=1 conv=notrunc status=none
mapperctl list >/dev/null 2>"$T_DIR/err"
grep -q "device '$d0' carried layout copy [0-9]*, older than pool.db's [0-9]*: rewritten" "$T_DIR/err" ||
	fail "the stale copy was rewritten without a word: $(cat "$T_DIR/err")"
mapperctl list >/dev/null 2>"$T_DIR/err"
[ ! -s "$T_DIR/err" ] || fail "the second open still found something: $(cat "$T_DIR/err")"
