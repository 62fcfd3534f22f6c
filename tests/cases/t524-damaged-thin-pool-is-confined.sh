#!/usr/bin/env bash
# t524-damaged-thin-pool-is-confined.sh: a thin pool whose map pages were
# damaged (a leaf deleted from the database) fails alone: the daemon
# starts, serves the healthy thin pool and the linear volume, and names
# the broken pool and its volumes in status, list and the log; its pages
# are not "collected" as garbage, and check names it.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq sqlite3

make_pool
add_file_device d0 256M >/dev/null
mapperctl create linear lin --size 8M >/dev/null
mapperctl create thin-pool bad --size 32M >/dev/null
mapperctl create thin-pool good --size 32M >/dev/null
mapperctl create thin b1 --pool bad --size 16M >/dev/null
mapperctl create thin g1 --pool good --size 16M >/dev/null
start_daemon
for v in lin b1 g1; do
	head -c $((4 * MiB)) /dev/urandom >"$v.data"
	dd if="$v.data" of="$MNT/$v" bs=1M conv=notrunc,fsync status=none
done
stop_daemon

sqlite3 "$POOL/pool.db" "DELETE FROM thin_leaf WHERE pool = (SELECT id FROM volume WHERE name = 'bad');"
pages=$(sqlite3 "$POOL/pool.db" "SELECT count(*) FROM thin_dir WHERE pool = (SELECT id FROM volume WHERE name = 'bad');")

start_daemon
cmp lin.data <(head -c $((4 * MiB)) "$MNT/lin") || fail "lin is not served"
cmp g1.data <(head -c $((4 * MiB)) "$MNT/g1") || fail "g1 is not served"
[ ! -e "$MNT/b1" ] || fail "b1 of the damaged pool is served"
for v in bad b1; do
	[ "$(mapperctl status "$v" --json | json_get .state)" = failed ] ||
		fail "status does not show $v failed"
done
mapperctl status bad --json | json_get .reason | grep -q "'b1'" ||
	fail "the pool's reason does not name the volume whose map is damaged"
mapperctl list | grep -q '^b1 .*failed: .*bad' || fail "list does not show why b1 failed"
grep -q "volume 'bad' is not served" "$POOL/mapperfs.log" || fail "the log does not name 'bad'"
[ "$(sqlite3 "$POOL/pool.db" "SELECT count(*) FROM thin_dir WHERE pool = (SELECT id FROM volume WHERE name = 'bad');")" = "$pages" ] ||
	fail "start-up deleted pages of the damaged pool"
mapperctl check good >/dev/null || fail "check of the healthy pool failed"
expect_fail -s 1 -m "1 breach found" mapperctl check bad
grep -q "^thin pool 'bad': it is failed: .*'b1'" "$T_DIR/.stdout" ||
	fail "check does not name the failed pool and why"
expect_fail -s 1 -m "no volume 'nosuch'" mapperctl check nosuch
# The healthy pool still takes changes.
mapperctl snapshot --active g1 g1s >/dev/null
cmp g1.data <(head -c $((4 * MiB)) "$MNT/g1s") || fail "a snapshot in the healthy pool failed"
