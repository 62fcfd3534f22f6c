#!/usr/bin/env bash
# t540-a-failed-thin-pools-volume-is-removed-with-its-pages.sh: removing a
# thin volume while its thin pool is failed (lvremove on a pool in fail
# mode) removes its map pages with it, the damaged page that failed the
# pool included, instead of leaving them for `repair` to drop after
# `check` called the pool clean: `reload` then serves the pool, and
# neither `check` nor `repair` finds a page left over.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires sqlite3

make_pool
d0=$(add_file_device d0 128M)
mapperctl create thin-pool tp --size 32M >/dev/null
mapperctl create thin b1 --pool tp --size 16M >/dev/null
mapperctl create thin b2 --pool tp --size 16M >/dev/null
start_daemon
for v in b1 b2; do
	head -c $((4 * MiB)) /dev/urandom >"$v.data"
	dd if="$v.data" of="$MNT/$v" bs=1M conv=notrunc,fsync status=none
done
stop_daemon

db=$POOL/pool.db
tp=$(sqlite3 "$db" "SELECT id FROM volume WHERE name = 'tp'")
b1dir=$(sqlite3 "$db" "SELECT dir FROM thin WHERE volume = (SELECT id FROM volume WHERE name = 'b1')")
sqlite3 "$db" "UPDATE thin_dir SET leaves = x'01' WHERE pool = $tp AND id = $b1dir"
start_daemon 2>/dev/null
[ "$(mapperctl status tp --json | json_get .state)" = failed ] || fail "tp is not failed"

mapperctl remove b1 >/dev/null || fail "removing b1 of the failed pool failed"
[ "$(sqlite3 "$db" "SELECT count(*) FROM thin_dir WHERE pool = $tp AND id = $b1dir")" = 0 ] ||
	fail "the damaged directory of the removed volume is still there"
grep -q -E "thin pool 'tp': deleting [0-9]+ map pages no volume reaches, 1 of them damaged" \
	"$POOL/mapperfs.log" || fail "the log does not say which pages the removal deleted"
expect_fail -s 1 -m "check: 1 breach found$" mapperctl check tp
grep -q "^thin pool 'tp': it is failed: " "$T_DIR/.stdout" || fail "check does not say tp is failed"
! grep -q "no volume reaches" "$T_DIR/.stdout" || fail "removing b1 left pages: $(cat "$T_DIR/.stdout")"
mapperctl reload >/dev/null || fail "reload does not serve tp once b1 is gone"
cmp b2.data <(head -c $((4 * MiB)) "$MNT/b2") || fail "b2 does not read back"
mapperctl check >/dev/null || fail "check of the reloaded pool failed"
mapperctl repair tp >repair.out || fail "repair failed"
grep -q ", 0 damaged pages dropped," repair.out || fail "repair found a page left over: $(cat repair.out)"
