#!/usr/bin/env bash
# t601-thin-repair-reports-lost-ranges.sh: a thin pool with a damaged leaf
# (shared by a volume and its snapshot) and an entry past the pool's end
# fails alone; `repair`, run online, reports exactly the byte ranges each
# volume lost, brings the pool back into service without a restart, and
# `check` passes; what was not lost reads back as before, the lost range
# as zeros.
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
start_daemon
dd if=/dev/urandom of="$MNT/v1" bs=1M count=64 conv=notrunc,fsync status=none
dd if=/dev/urandom of="$MNT/v2" bs=1M count=2 conv=notrunc,fsync status=none
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
v1dir=$(sqlite3 "$db" "SELECT dir FROM thin JOIN volume ON volume.id = thin.volume WHERE name = 'v1'")
# The leaf at slot 1 of v1's directory (little-endian int64 at byte 8).
leaf=$(le64 "$(sqlite3 "$db" "SELECT hex(substr(leaves, 9, 8)) FROM thin_dir WHERE pool = $tp AND id = $v1dir")")
[ "$leaf" -gt 0 ] || fail "cannot find v1's second leaf"
sqlite3 "$db" "UPDATE thin_leaf SET map = x'0102' WHERE pool = $tp AND id = $leaf"
# v2's first entry now points past the end of the pool (2560 blocks).
v2dir=$(sqlite3 "$db" "SELECT dir FROM thin JOIN volume ON volume.id = thin.volume WHERE name = 'v2'")
v2leaf=$(le64 "$(sqlite3 "$db" "SELECT hex(substr(leaves, 1, 8)) FROM thin_dir WHERE pool = $tp AND id = $v2dir")")
sqlite3 "$db" "UPDATE thin_leaf SET map = x'10270000' || substr(map, 5) WHERE pool = $tp AND id = $v2leaf"

start_daemon
[ "$(mapperctl status tp --json | json_get .state)" = failed ] || fail "the damaged pool is served"
cmp g1.before "$MNT/g1" || fail "the healthy pool is not served"
mapperctl repair tp >repair.txt || fail "repair failed: $(cat repair.txt)"
cat repair.txt >&2
want="volume 'v1': lost bytes $MB32..$((2 * MB32)) ($MB32 bytes, blocks 512..1024)
volume 's1': lost bytes $MB32..$((2 * MB32)) ($MB32 bytes, blocks 512..1024)
volume 'v2': lost bytes 0..65536 (65536 bytes, blocks 0..1)"
[ "$(grep "lost bytes" repair.txt | sort)" = "$(sort <<<"$want")" ] ||
	fail "repair reported: $(cat repair.txt)"
grep -q "repaired: 3 volumes, 1025 blocks lost, 1 unreadable pages dropped" repair.txt ||
	fail "the summary: $(tail -1 repair.txt)"
[ "$(mapperctl status tp --json | json_get .state)" = ok ] || fail "the pool is not back in service"
mapperctl check >/dev/null || fail "check fails after repair"
for v in v1 s1; do
	cmp -n "$MB32" "$v.before" "$MNT/$v" || fail "$v lost what it should keep"
	cmp -n "$MB32" -i "$MB32:0" "$MNT/$v" /dev/zero || fail "$v's lost range does not read zeros"
done
cmp -n 65536 "$MNT/v2" /dev/zero || fail "v2's lost block does not read zeros"
cmp -i 65536 v2.before "$MNT/v2" || fail "v2 lost more than its first block"
# Served again, it takes writes and snapshots.
dd if=/dev/urandom of="$MNT/v1" bs=64K seek=600 count=2 conv=notrunc,fsync status=none
mapperctl snapshot v1 s3 >/dev/null
mapperctl check tp >/dev/null || fail "check fails after writes to the repaired pool"
