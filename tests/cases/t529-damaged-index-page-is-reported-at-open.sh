#!/usr/bin/env bash
# t529-damaged-index-page-is-reported-at-open.sh: zeros over an index page
# of pool.db (the index of volume names) are met by no row read, so the
# pool opens and serves every volume; but PRAGMA quick_check finds them,
# and the pool database is reported damaged: by check, in one line and a
# verdict, and by the daemon at start-up, warning in one line.  An offline
# command says nothing of it (check is the command that tells).
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires sqlite3 dd

make_pool
add_file_device d0 32M >/dev/null
for v in a b c; do
	mapperctl create linear "$v" --size 4M --on d0 >/dev/null
done
mapperctl check >/dev/null || fail "check fails on a healthy pool"

db=$POOL/pool.db
sql() { sqlite3 "$db" "$1"; }
sql "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null	# every page in the file
page_size=$(sql "PRAGMA page_size")
root=$(sql "SELECT rootpage FROM sqlite_master WHERE name = 'sqlite_autoindex_volume_1'")
[ -n "$root" ] || fail "pool.db has no index of volume names"
dd if=/dev/zero of="$db" bs="$page_size" seek=$((root - 1)) count=1 conv=notrunc status=none
[ "$(sql "SELECT count(*) FROM volume NOT INDEXED")" -eq 3 ] || fail "the rows do not read back"

out=$T_DIR/out
damage="Page $root: btreeInitPage\(\) returns error code [0-9]+"

mapperctl list >"$out" 2>"$T_DIR/err" || fail "list fails on the damaged database"
[ ! -s "$T_DIR/err" ] || fail "offline, opening the pool said: $(cat "$T_DIR/err")"

# check_says_damaged: check's stdout is the damage, once, and the verdict.
check_says_damaged()
{
	expect_fail -s 1 -m "check: 1 breach found$" mapperctl check
	[ "$(wc -l <"$T_DIR/.stdout")" -eq 2 ] &&
		grep -q -x -E "pool database: $damage" "$T_DIR/.stdout" &&
		[ "$(tail -n 1 "$T_DIR/.stdout")" = "pool '$POOL': 1 breach found" ] ||
		fail "check said: $(cat "$T_DIR/.stdout")"
}
check_says_damaged

start_daemon 2>"$T_DIR/start.err"
[ "$(grep -c "pool database" "$T_DIR/start.err")" -eq 1 ] &&
	grep -q -x -E "mapperfs: warning: pool database '$db' is damaged: $damage; 'mapperctl check' lists it all" \
		"$T_DIR/start.err" ||
	fail "start-up did not warn of the damage in one line: $(cat "$T_DIR/start.err")"
for v in a b c; do
	[ -e "$MNT/$v" ] || fail "$v, whose rows read back, is not served"
done
check_says_damaged
