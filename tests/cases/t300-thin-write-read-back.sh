#!/usr/bin/env bash
# t300-thin-write-read-back.sh: a thin volume larger than its pool reads
# zeros where nothing was written, takes pool blocks only for what is
# written, and data written through the file and through a direct-I/O loop
# device reads back, also after a daemon restart; check is clean.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires_loop
requires jq

make_pool
add_file_device d0 80M >/dev/null
add_file_device d1 80M >/dev/null
mapperctl create thin-pool tp --size 128M --on d0,d1 >/dev/null
mapperctl create thin v --pool tp --size 1G >/dev/null
start_daemon

[ "$(size_of "$MNT/v")" -eq "$GiB" ] || fail "thin volume is not 1 GiB"
cmp <(head -c $((8 * MiB)) "$MNT/v") <(head -c $((8 * MiB)) /dev/zero) ||
	fail "unwritten thin volume does not read zeros"
[ "$(stat -c %b "$MNT/v")" -eq 0 ] || fail "unwritten thin volume has st_blocks != 0"

head -c $((4 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=64K seek=100 conv=notrunc,fsync status=none
cmp data <(dd if="$MNT/v" bs=64K skip=100 count=64 status=none) ||
	fail "data written through the file does not read back"
used=$(mapperctl list --json | json_get '.[] | select(.name == "tp") | .data_used_bytes')
[ "$used" -eq $((4 * MiB)) ] || fail "pool uses $used bytes for 4 MiB written"
[ "$(du -k "$MNT/v" | cut -f1)" -eq 4096 ] || fail "du does not report 4 MiB"
cmp <(dd if="$MNT/v" bs=64K skip=99 count=1 status=none) <(head -c 65536 /dev/zero) ||
	fail "the block before the data is not zeros"

# Unaligned small writes through a loop device: partial blocks are zeroed
# around them, never another volume's old data.
dev=$(attach_loop "$MNT/v")
[ "$(loop_dio "$dev")" = 1 ] || fail "loop device does not do direct I/O"
head -c $((1 * MiB)) /dev/urandom >more
dd if=more of="$dev" bs=4K seek=$((512 * MiB / 4096 + 3)) oflag=direct conv=fsync status=none
detach_loop "$dev"
cmp more <(dd if="$MNT/v" bs=4K skip=$((512 * MiB / 4096 + 3)) count=256 status=none) ||
	fail "data written through the loop device does not read back"
cmp <(dd if="$MNT/v" bs=4K skip=$((512 * MiB / 4096)) count=3 status=none) <(head -c 12288 /dev/zero) ||
	fail "the uncovered head of a new block is not zeros"

stop_daemon
mapperctl check >check.log || { cat check.log >&2; fail "check failed offline"; }
start_daemon
cmp data <(dd if="$MNT/v" bs=64K skip=100 count=64 status=none) ||
	fail "data differs after a daemon restart"
cmp more <(dd if="$MNT/v" bs=4K skip=$((512 * MiB / 4096 + 3)) count=256 status=none) ||
	fail "loop-written data differs after a daemon restart"
mapperctl check >check.log || { cat check.log >&2; fail "check failed through the daemon"; }
