#!/usr/bin/env bash
# t521-failed-admin-changes-change-nothing.sh: while another process holds
# the pool database's write lock, every admin change fails in one line
# saying so, and leaves what the daemon serves and what the store holds as
# they were: sizes, data, the volume list and status; once the lock is
# gone, the same commands work.  Offline, a repair or restore of a thin
# pool whose raw device is missing is refused before it writes anything.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq sqlite3

make_pool
add_file_device d0 256M >/dev/null
mapperctl create linear lin --size 8M >/dev/null
mapperctl create thin-pool tp --size 64M >/dev/null
mapperctl create thin v --pool tp --size 16M >/dev/null
d3=$(add_file_device d3 64M)
mapperctl create thin-pool tpA --size 32M --on d3 >/dev/null
for a in a1 a2; do mapperctl create thin "$a" --pool tpA --size 8M >/dev/null; done
start_daemon
for a in a1 a2; do
	dd if=/dev/urandom of="$MNT/$a" bs=64K count=3 conv=notrunc,fsync status=none
done
head -c $((8 * MiB)) /dev/urandom >vdata
dd if=vdata of="$MNT/v" bs=1M conv=notrunc,fsync status=none
mapperctl snapshot --active v s >/dev/null
dd if=/dev/zero of="$MNT/v" bs=1M count=1 conv=notrunc,fsync status=none
cp "$MNT/v" v.before
cp "$MNT/s" s.before

# What the daemon serves and what the store holds, less the I/O counters.
state()
{
	mapperctl status --json |
		jq -S 'del(.volumes[].reads, .volumes[].writes, .volumes[].read_bytes,
			   .volumes[].write_bytes, .volumes[].open)'
	ls "$MNT"
	stat -c '%n %s' "$MNT"/*
	sqlite3 "$POOL/pool.db" 'SELECT * FROM volume; SELECT * FROM extent; SELECT * FROM thin;'
}
state >before

hold_db_lock "$POOL/pool.db"
for cmd in "extend lin --size 16M" "extend v --size 64M" "extend tp --size 128M" \
	   "rollback v s" "remove s" "remove lin" "snapshot v s2" \
	   "create linear x --size 4M" "create thin t --pool tp --size 4M"; do
	# shellcheck disable=SC2086
	expect_fail -s 1 -m 'locked by another process; nothing changed' mapperctl $cmd
done
release_db_lock

state >after
diff -u before after >&2 || fail "a failed admin change changed the pool"
cmp v.before "$MNT/v" || fail "v's data changed"
cmp s.before "$MNT/s" || fail "s's data changed"

# Without the lock the same changes work.
mapperctl extend lin --size 16M >/dev/null
[ "$(stat -c %s "$MNT/lin")" -eq $((16 * MiB)) ] || fail "lin did not grow"
mapperctl rollback v s >/dev/null
cmp s.before "$MNT/v" || fail "the rollback did not take"
mapperctl remove lin >/dev/null
[ ! -e "$MNT/lin" ] || fail "lin is still served"
mapperctl check >check.log || { cat check.log >&2; fail "check failed"; }

# The device of tpA goes missing: its pool fails; repairing it (or
# restoring into it) cannot work, and must not rewrite its maps first.
mapperctl dump tpA -o tpA.xml
stop_daemon
mv "$d3" "$d3.away"
pages() { sqlite3 "$POOL/pool.db" 'SELECT * FROM thin; SELECT pool, id, hex(leaves) FROM thin_dir; SELECT pool, id, hex(map) FROM thin_leaf;'; }
pages >pages.before
expect_fail -s 1 -m "^mapperctl: repair: thin pool 'tpA': its device 'd3' is failed: .*; repair rebuilds maps: bring it back \('mapperctl reload'\) first$" \
	mapperctl repair tpA
[ ! -s "$T_DIR/.stdout" ] || fail "a repair that failed reported: $(cat "$T_DIR/.stdout")"
expect_fail -s 1 mapperctl restore tpA --from tpA.xml
pages | diff -u pages.before - >&2 || fail "a failed repair or restore changed the maps"
mv "$d3.away" "$d3"
mapperctl check >check.log || { cat check.log >&2; fail "check failed with the device back"; }
