#!/usr/bin/env bash
# t879-blocks-shared-by-many-leaves-count-exactly.sh: a data block's
# count leaves its two bits for the overflow past 2 (core/thin/thin_alloc.h)
# and comes back.  Six volumes that each copied one leaf map most blocks
# six times; check agrees with the daemon's counts online, after a restart
# (counts derived again) and as snapshots go, and once only the origin is
# left the pool holds exactly its blocks, each written in place again.
# TRANSPORTS: io_uring
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

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

stop_daemon
start_daemon
check "after a restart"
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
