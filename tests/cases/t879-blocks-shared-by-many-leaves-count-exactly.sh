#!/usr/bin/env bash
# t879-blocks-shared-by-many-leaves-count-exactly.sh: a data block's
# count leaves its two bits for the overflow past 2 (core/thin/thin_alloc.h)
# and comes back.  Six volumes that each copied one leaf map most blocks
# six times; check agrees with the daemon's counts online, after a restart
# (counts from the stored space map, DATA% from each map's stored count),
# after a stale map was derived again
# and as snapshots go; a wrong map is caught; once only the origin is
# left the pool holds exactly its blocks, each written in place again.
# TRANSPORTS: io_uring
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq
requires sqlite3

make_pool
add_file_device d0 64M >/dev/null
mapperctl create thin-pool tp --size 16M >/dev/null
mapperctl create thin v --pool tp --size 4M >/dev/null
start_daemon

used() { mapperctl status tp --json | json_get .data_used_bytes; }
check() { mapperctl check >check.out 2>&1 || fail "check $1: $(cat check.out)"; }

head -c $((4 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=1M oflag=direct conv=notrunc status=none
for i in 1 2 3 4 5; do
	mapperctl snapshot --active v "s$i" >/dev/null
done
# One block written in each: every volume's leaf is its own copy now,
# and every write a copy-on-write (s5 writes where the others did not).
for vol in v s1 s2 s3 s4 s5; do
	[ "$vol" = s5 ] && at=8 || at=7
	head -c 65536 /dev/urandom | dd of="$MNT/$vol" bs=64K seek=$at oflag=direct conv=notrunc status=none
done
[ "$(used)" -eq $((70 * 65536)) ] || fail "64 blocks and 6 copies of one should be used, not $(used) bytes"
check "with every block mapped six times"
usage() { mapperctl list --json | jq -c '[.[] | select(.kind == "thin") | {name, mapped_bytes, exclusive_bytes, shared_bytes}]'; }
usage >usage.before

stop_daemon
# The counts are stored (the space map), and a restart takes them from it.
space_valid() { sqlite3 "$POOL/pool.db" "SELECT space_valid FROM thin_pool"; }
[ "$(space_valid)" = 1 ] || fail "the space map is stale after a clean stop"
[ "$(sqlite3 "$POOL/pool.db" "SELECT count(*) FROM thin_space WHERE overflow IS NOT NULL")" -ge 1 ] ||
	fail "no chunk of the space map keeps a count past two"
# So are the blocks each map maps (list's DATA%), checked against its leaves.
[ "$(sqlite3 "$POOL/pool.db" "SELECT count(*) FROM thin_dir WHERE mapped IS NULL")" = 0 ] ||
	fail "a directory's count of mapped blocks was not stored"
data_pct() { mapperctl list --json | json_get ".[] | select(.name == \"$1\") | .data_percent"; }
start_daemon
# Its leaves are not loaded yet: list reads them from the store for this.
usage | cmp -s usage.before - || fail "list's usage after a restart: $(usage), before: $(cat usage.before)"
s5_pct=$(data_pct s5)
check "after a restart"
stop_daemon
sqlite3 "$POOL/pool.db" "UPDATE thin_dir SET mapped = mapped + 1 WHERE mapped > 0"
start_daemon
! mapperctl check >check.out 2>&1 || fail "check missed wrong counts of mapped blocks"
grep -q "says it maps" check.out || fail "check did not name the wrong count: $(head -n 3 check.out)"
stop_daemon
sqlite3 "$POOL/pool.db" "UPDATE thin_dir SET mapped = NULL"
start_daemon
[ "$(data_pct s5)" = "$s5_pct" ] || fail "s5's DATA% went from $s5_pct to $(data_pct s5) when counted again"
check "after the mapped counts were counted again"
stop_daemon
# A map that says wrong counts is what check is there to catch ...
saved=$(sqlite3 "$POOL/pool.db" "SELECT hex(fields) FROM thin_space WHERE chunk = 0")
sqlite3 "$POOL/pool.db" "UPDATE thin_space SET fields = zeroblob(1024), overflow = NULL WHERE chunk = 0"
start_daemon
expect_fail -m "breaches found" mapperctl check
stop_daemon
# ... and a leaf changed behind the pool's back makes the map stale: the
# load derives the counts from the leaves again, and writes the map anew.
sqlite3 "$POOL/pool.db" "UPDATE thin_leaf SET map = map WHERE rowid = (SELECT min(rowid) FROM thin_leaf)"
[ "$(space_valid)" = 0 ] || fail "a changed leaf did not make the space map stale"
start_daemon
check "after a stale space map was derived again"
stop_daemon
[ "$(space_valid)" = 1 ] || fail "the space map was not written again"
[ "$(sqlite3 "$POOL/pool.db" "SELECT hex(fields) FROM thin_space WHERE chunk = 0")" = "$saved" ] ||
	fail "the space map written again differs from the first"
start_daemon
cmp <(dd if="$MNT/s3" bs=64K count=7 status=none) <(head -c $((7 * 65536)) data) ||
	fail "s3 lost data it shares"

for i in 1 2 3 4 5; do
	mapperctl remove "s$i" >/dev/null
	check "after removing s$i"
done
[ "$(used)" -eq $((64 * 65536)) ] || fail "the origin alone should use 64 blocks, not $(used) bytes"
# Its blocks are its alone again: written in place, nothing provisioned.
dd if=data of="$MNT/v" bs=1M oflag=direct conv=notrunc status=none
[ "$(used)" -eq $((64 * 65536)) ] || fail "rewriting the origin provisioned blocks: $(used) bytes used"
cmp data "$MNT/v" || fail "the origin does not read back what was written"
check "at the end"
