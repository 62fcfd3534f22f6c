#!/usr/bin/env bash
# t541-check-names-pages-no-volume-reaches-of-a-failed-pool-too.sh: map
# pages that no volume reaches (what a crash, or an older mapperfs's
# removal, leaves), one of them damaged, in a thin pool that a missing
# device keeps from loading: `check` names them besides the failure, which
# it still tells, instead of calling them nothing; once the device is
# back, loading the pool deletes them, damaged one included, so check
# passes and `repair` finds nothing to drop.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires sqlite3

make_pool
d0=$(add_file_device d0 128M)
mapperctl create thin-pool tp --size 32M >/dev/null
mapperctl create thin v --pool tp --size 16M >/dev/null
start_daemon
head -c $((4 * MiB)) /dev/urandom >v.data
dd if=v.data of="$MNT/v" bs=1M conv=notrunc,fsync status=none
stop_daemon

db=$POOL/pool.db
tp=$(sqlite3 "$db" "SELECT id FROM volume WHERE name = 'tp'")
sqlite3 "$db" "INSERT INTO thin_leaf SELECT pool, 1000000, map FROM thin_leaf WHERE pool = $tp LIMIT 1;
	       INSERT INTO thin_leaf VALUES ($tp, 1000001, x'01');"
put_back() { [ ! -e "$d0.away" ] || mv "$d0.away" "$d0"; }
mv "$d0" "$d0.away"
cleanup_fn put_back
start_daemon 2>/dev/null
expect_fail -s 1 -m "check: 2 breaches found$" mapperctl check tp
grep -q "^thin pool 'tp': it is failed: its device 'd0' is failed" "$T_DIR/.stdout" ||
	fail "check does not say why tp is failed: $(cat "$T_DIR/.stdout")"
grep -q -x "thin pool 'tp': 2 map pages no volume reaches, 1 of them damaged: 'mapperctl repair tp' deletes them" \
	"$T_DIR/.stdout" || fail "check does not name the pages no volume reaches: $(cat "$T_DIR/.stdout")"
expect_fail -s 1 -m "check: 2 breaches found$" mapperctl check
grep -q "^device 'd0': it is failed: " "$T_DIR/.stdout" ||
	fail "check of the pool does not name the missing device: $(cat "$T_DIR/.stdout")"

put_back
mapperctl reload >/dev/null || fail "reload does not serve tp once d0 is back"
grep -q "thin pool 'tp': deleting 2 map pages no volume reaches, 1 of them damaged" "$POOL/mapperfs.log" ||
	fail "loading tp did not delete the pages no volume reaches"
mapperctl check >/dev/null || fail "check fails once the pool deleted them"
cmp v.data <(head -c $((4 * MiB)) "$MNT/v") || fail "v does not read back"
mapperctl repair tp >repair.out || fail "repair failed"
grep -q ", 0 damaged pages dropped," repair.out || fail "repair found a page left over: $(cat repair.out)"
