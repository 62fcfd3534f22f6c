#!/usr/bin/env bash
# t884-removing-a-volume-past-the-freed-list-frees-every-block.sh: a thin
# pool's allocator lists the blocks a transaction frees or unshares only
# up to 65536 and keeps the rest as bits (core/thin/thin_blocks.h).  With
# 100,000 blocks all mapped by a volume and its snapshot: punching the
# whole volume unshares them all in one transaction; then removing the
# snapshot frees them all in one.  The pool is empty, every block was
# discarded once, a new volume gets its blocks from the freed ones and
# reads back, and check passes, before and after a restart.  (A commit
# that fails after such a free: tests/unit/test_thin_alloc.c.)
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

n=100000				# blocks of 64 KiB, all mapped: > THIN_BLOCKS_LISTED
make_pool
add_file_device d0 $(( (n + 64) * 64 ))K >/dev/null
mapperctl create thin-pool tp --size $((n * 64))K --low-water 0 --metadata-limit 64M >/dev/null
awk -v n="$n" 'BEGIN {
	printf "<superblock uuid=\"\" time=\"0\" transaction=\"1\" flags=\"0\" version=\"2\" data_block_size=\"128\" nr_data_blocks=\"%d\">\n", n
	printf "<device dev_id=\"1\" mapped_blocks=\"%d\" transaction=\"0\" creation_time=\"0\" snap_time=\"0\">\n", n
	for (b = 0; b < n; b += 4096)
		printf "<range_mapping origin_begin=\"%d\" data_begin=\"%d\" length=\"%d\" time=\"0\"/>\n", b, b, (n - b < 4096 ? n - b : 4096)
	print "</device>"; print "</superblock>" }' >dump.xml
mapperctl restore tp --from dump.xml --force --volume "1:vol:$((n * 64))K" >/dev/null 2>&1 ||
	fail "restore of $n mapped blocks failed"
start_daemon
[ "$(mapperctl status tp --json | json_get .data_used_bytes)" -eq $((n * 64 * 1024)) ] ||
	fail "the pool is not full after the restore: $(mapperctl status tp --json)"

mapperctl snapshot vol snap >/dev/null

fallocate -p -o 0 -l $((n * 64 * 1024)) "$MNT/vol"
sync "$MNT/vol"
[ "$(mapperctl status tp --json | json_get .data_used_bytes)" -eq $((n * 64 * 1024)) ] ||
	fail "the snapshot lost blocks when its origin was punched: $(mapperctl status tp --json)"
mapperctl check >/dev/null || fail "check fails after the punch"

mapperctl remove snap >/dev/null || fail "remove of the snapshot failed"
status=$(mapperctl status tp --json)
[ "$(json_get .data_used_bytes <<<"$status")" -eq 0 ] || fail "the pool is not empty after the remove: $status"
[ "$(json_get .discarded_bytes <<<"$status")" -eq $((n * 64 * 1024)) ] ||
	fail "not every freed block was discarded once: $status"
mapperctl check >/dev/null || fail "check fails after the remove"

# Every block is free: a new volume takes them (none was free before).
mapperctl create thin v2 --pool tp --size $((n * 64))K >/dev/null
head -c $((4 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v2" bs=1M conv=notrunc,fsync status=none
dd if=data of="$MNT/v2" bs=1M seek=$((n / 16 - 4)) conv=notrunc,fsync status=none
cmp data <(dd if="$MNT/v2" bs=1M count=4 status=none) || fail "the new volume's start does not read back"
cmp data <(dd if="$MNT/v2" bs=1M skip=$((n / 16 - 4)) count=4 status=none) ||
	fail "the new volume's end does not read back"
mapperctl check >/dev/null || fail "check fails after writing the new volume"

stop_daemon
start_daemon
[ "$(mapperctl status tp --json | json_get .data_used_bytes)" -eq $((8 * MiB)) ] ||
	fail "the restarted pool does not count 8 MiB used: $(mapperctl status tp --json)"
mapperctl check >/dev/null || fail "check fails after a restart"
cmp data <(dd if="$MNT/v2" bs=1M count=4 status=none) || fail "the new volume does not read back after a restart"
