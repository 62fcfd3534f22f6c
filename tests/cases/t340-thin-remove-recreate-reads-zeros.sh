#!/usr/bin/env bash
# t340-thin-remove-recreate-reads-zeros.sh: a thin volume removed and
# created again reads zeros where the old one had data, even though its
# new blocks are the old ones (a new block never shows old data); a pool
# with volumes cannot be removed, an empty one can.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 64M >/dev/null
mapperctl create thin-pool tp --size 2M >/dev/null
mapperctl create thin v --pool tp --size 2M >/dev/null
start_daemon

head -c $((2 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=64K conv=notrunc,fsync status=none
mapperctl remove v >/dev/null
mapperctl create thin v --pool tp --size 2M >/dev/null
# Small writes into every block: the rest of each block must be zeros.
for i in $(seq 0 31); do
	printf x | dd of="$MNT/v" bs=1 seek=$((i * 65536 + 100)) conv=notrunc status=none
done
sync "$MNT/v"
[ "$(mapperctl list --json | json_get '.[] | select(.name == "tp") | .data_used_bytes')" -eq $((2 * MiB)) ] ||
	fail "the new volume did not reuse the whole pool"
[ "$(tr -d '\0' <"$MNT/v")" = "$(printf 'x%.0s' $(seq 1 32))" ] ||
	fail "the recreated volume shows old data"

expect_fail -m "still has 1 volume" mapperctl remove tp
mapperctl remove v >/dev/null
mapperctl remove tp >/dev/null
mapperctl create thin-pool tp --size 2M >/dev/null
