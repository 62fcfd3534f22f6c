#!/usr/bin/env bash
# t601-thin-repair-reports-lost-ranges.sh: a thin pool with a damaged leaf
# (shared by a volume and its snapshot), an entry past the pool's end and
# map directories of the wrong length (a blob of 1 byte, one of none)
# fails alone; `repair`, run online, reports exactly the byte ranges each
# volume lost, brings the pool back into service without a restart, and
# `check` passes; what was not lost reads back as before, the lost range
# as zeros.  The same damage done under the running daemon is named by
# `check` (one line per page, not one per block), which goes on to the
# other pool, and `repair` reports it.  An offline repair that succeeds
# says on stdout what it repaired and prints no error.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires sqlite3 jq

MB32=$((32 * MiB))
make_pool
add_file_device d0 256M >/dev/null
mapperctl create thin-pool tp --size 160M >/dev/null
mapperctl create thin-pool good --size 16M >/dev/null
mapperctl create thin v1 --pool tp --size 64M >/dev/null
mapperctl create thin g1 --pool good --size 8M >/dev/null
mapperctl create thin v2 --pool tp --size 64M >/dev/null
mapperctl create thin v3 --pool tp --size 8M >/dev/null
mapperctl create thin v4 --pool tp --size 8M >/dev/null
start_daemon
dd if=/dev/urandom of="$MNT/v1" bs=1M count=64 conv=notrunc,fsync status=none
dd if=/dev/urandom of="$MNT/v2" bs=1M count=2 conv=notrunc,fsync status=none
for v in v3 v4; do
	dd if=/dev/urandom of="$MNT/$v" bs=64K count=10 conv=notrunc,fsync status=none
done
dd if=/dev/urandom of="$MNT/g1" bs=1M count=8 conv=notrunc,fsync status=none
mapperctl snapshot --active v1 s1 >/dev/null
# v1's first leaf becomes its own; the second stays shared with s1.
dd if=/dev/urandom of="$MNT/v1" bs=64K count=1 conv=notrunc,fsync status=none
for v in v1 s1 v2 g1; do cat "$MNT/$v" >"$v.before"; done
stop_daemon

# A little-endian hex number, as a directory blob stores leaf ids.
le64() { local h=$1 r='' i; for ((i = ${#h} - 2; i >= 0; i -= 2)); do r+=${h:i:2}; done; echo $((16#$r)); }
db=$POOL/pool.db
tp=$(sqlite3 "$db" "SELECT id FROM volume WHERE name = 'tp'")
dir_of() { sqlite3 "$db" "SELECT dir FROM thin JOIN volume ON volume.id = thin.volume WHERE name = '$1'"; }
v1dir=$(dir_of v1)
# The leaf at slot 1 of v1's directory (little-endian int64 at byte 8).
leaf=$(le64 "$(sqlite3 "$db" "SELECT hex(substr(leaves, 9, 8)) FROM thin_dir WHERE pool = $tp AND id = $v1dir")")
[ "$leaf" -gt 0 ] || fail "cannot find v1's second leaf"
sqlite3 "$db" "UPDATE thin_leaf SET map = x'0102' WHERE pool = $tp AND id = $leaf"
# v2's first entry now points past the end of the pool (2560 blocks).
v2dir=$(sqlite3 "$db" "SELECT dir FROM thin JOIN volume ON volume.id = thin.volume WHERE name = 'v2'")
v2leaf=$(le64 "$(sqlite3 "$db" "SELECT hex(substr(leaves, 1, 8)) FROM thin_dir WHERE pool = $tp AND id = $v2dir")")
sqlite3 "$db" "UPDATE thin_leaf SET map = x'10270000' || substr(map, 5) WHERE pool = $tp AND id = $v2leaf"
# A directory is 8 bytes per slot: 1 byte is no directory, and none is not
# the one slot an 8 MiB volume needs (neither may read as an empty map).
v3dir=$(dir_of v3) v4dir=$(dir_of v4)
sqlite3 "$db" "UPDATE thin_dir SET leaves = x'01' WHERE pool = $tp AND id = $v3dir"
sqlite3 "$db" "UPDATE thin_dir SET leaves = zeroblob(0) WHERE pool = $tp AND id = $v4dir"

start_daemon
[ "$(mapperctl status tp --json | json_get .state)" = failed ] || fail "the damaged pool is served"
cmp g1.before "$MNT/g1" || fail "the healthy pool is not served"
mapperctl repair tp >repair.txt || fail "repair failed: $(cat repair.txt)"
cat repair.txt >&2
want="volume 'v1': lost bytes $MB32..$((2 * MB32)) ($MB32 bytes, blocks 512..1024)
volume 's1': lost bytes $MB32..$((2 * MB32)) ($MB32 bytes, blocks 512..1024)
volume 'v2': lost bytes 0..65536 (65536 bytes, blocks 0..1)
volume 'v3': lost bytes 0..$((8 * MiB)) ($((8 * MiB)) bytes, blocks 0..128): its whole map (directory $v3dir is damaged)
volume 'v4': lost bytes 0..$((8 * MiB)) ($((8 * MiB)) bytes, blocks 0..128): its whole map (directory $v4dir is damaged)"
[ "$(grep "lost bytes" repair.txt | sort)" = "$(sort <<<"$want")" ] ||
	fail "repair reported: $(cat repair.txt)"
grep -q "repaired: 5 volumes, 1281 blocks lost, 3 damaged pages dropped" repair.txt ||
	fail "the summary: $(grep repaired: repair.txt)"
grep -q "^thin pool 'tp' is back in service (it was failed: " repair.txt ||
	fail "repair does not say the pool is back: $(cat repair.txt)"
[ "$(mapperctl status tp --json | json_get .state)" = ok ] || fail "the pool is not back in service"
mapperctl check >/dev/null || fail "check fails after repair"
for v in v1 s1; do
	cmp -n "$MB32" "$v.before" "$MNT/$v" || fail "$v lost what it should keep"
	cmp -n "$MB32" -i "$MB32:0" "$MNT/$v" /dev/zero || fail "$v's lost range does not read zeros"
done
cmp -n 65536 "$MNT/v2" /dev/zero || fail "v2's lost block does not read zeros"
cmp -i 65536 v2.before "$MNT/v2" || fail "v2 lost more than its first block"
for v in v3 v4; do cmp -n $((8 * MiB)) "$MNT/$v" /dev/zero || fail "$v does not read zeros"; done
# Served again, it takes writes and snapshots.
dd if=/dev/urandom of="$MNT/v1" bs=64K seek=600 count=2 conv=notrunc,fsync status=none
mapperctl snapshot v1 s3 >/dev/null
mapperctl check tp >/dev/null || fail "check fails after writes to the repaired pool"

# The same damage under the running daemon (and a directory of two empty
# slots where the volume needs one): the committed pages no longer say
# what memory serves.  check names each damaged page once (no line per
# block whose count then differs) and goes on to the other pool; repair
# reports what it lost.
for v in v3 v4; do
	dd if=/dev/urandom of="$MNT/$v" bs=64K count=10 conv=notrunc,fsync status=none
done
mapperctl check >/dev/null || fail "check fails before the damage"
v2leaf=$(le64 "$(sqlite3 "$db" "SELECT hex(substr(leaves, 1, 8)) FROM thin_dir WHERE pool = $tp AND id = $(dir_of v2)")")
sqlite3 "$db" "UPDATE thin_leaf SET map = x'0102' WHERE pool = $tp AND id = $v2leaf"
sqlite3 "$db" "UPDATE thin_dir SET leaves = x'01' WHERE pool = $tp AND id = $(dir_of v3)"
sqlite3 "$db" "UPDATE thin_dir SET leaves = zeroblob(16) WHERE pool = $tp AND id = $(dir_of v4)"
expect_fail -s 1 -m "^mapperctl: check: 3 breaches found$" mapperctl check
want="thin pool 'tp': volume 'v2': leaf $v2leaf of its directory $(dir_of v2) is damaged
thin pool 'tp': volume 'v3': its map (directory $(dir_of v3)) is damaged
thin pool 'tp': volume 'v4': its map (directory $(dir_of v4)) has 2 slots where its size needs 1: it is damaged"
[ "$(grep -v -e '^thin pool .*: [0-9]* volumes\?, ' -e ': [0-9]* breach\(es\)\? found$' \
	"$T_DIR/.stdout" | sort)" = "$want" ] ||
	fail "check reported: $(cat "$T_DIR/.stdout")"
grep -q "^thin pool 'good': 1 volume, .* 0 breaches$" "$T_DIR/.stdout" ||
	fail "check did not go on to the other pool: $(cat "$T_DIR/.stdout")"
mapperctl repair tp >repair.txt || fail "repair failed: $(cat repair.txt)"
grep -q "^volume 'v2': lost bytes 0..$MB32 " repair.txt || fail "repair: $(cat repair.txt)"
grep -q "^volume 'v3': lost bytes 0..$((8 * MiB)) .*: its whole map (directory [0-9]* is damaged)$" repair.txt ||
	fail "repair: $(cat repair.txt)"
grep -q "^volume 'v4': lost bytes 0..$((8 * MiB)) .*: its whole map (directory [0-9]* is damaged)$" repair.txt ||
	fail "repair: $(cat repair.txt)"
grep -q "3 damaged pages dropped" repair.txt || fail "the summary: $(grep repaired: repair.txt)"
mapperctl check >/dev/null || fail "check fails after the second repair"

# Offline, opening the pool fails it; a repair that succeeds says so on
# stdout and prints no error (nor any line for the pool it repaired).
stop_daemon
v1leaf=$(le64 "$(sqlite3 "$db" "SELECT hex(substr(leaves, 1, 8)) FROM thin_dir WHERE pool = $tp AND id = $(dir_of v1)")")
sqlite3 "$db" "UPDATE thin_leaf SET map = x'10270000' || substr(map, 5) WHERE pool = $tp AND id = $v1leaf"
mapperctl repair tp >repair.txt 2>repair.err || fail "offline repair failed: $(cat repair.err)"
! grep -q "error" repair.err || fail "a repair that worked printed an error: $(cat repair.err)"
grep -q "^thin pool 'tp' is back in service (it was failed: its maps are damaged: leaf $v1leaf maps block 9999, past the end of the pool (2560 blocks))$" repair.txt ||
	fail "repair does not say what it repaired: $(cat repair.txt)"
mapperctl check >/dev/null || fail "check fails after the offline repair"
