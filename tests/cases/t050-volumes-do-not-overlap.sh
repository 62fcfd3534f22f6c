#!/usr/bin/env bash
# t050-volumes-do-not-overlap.sh: two volumes allocated on the same two
# devices get disjoint segments, and filling one never changes the other.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 32M >/dev/null
add_file_device d1 32M >/dev/null
mapperctl create linear a --size 24M --on d0,d1
mapperctl create linear b --size 24M --on d0,d1

# Disjoint on paper: per device, sorted by offset, each segment ends before
# the next begins.
{ mapperctl status a --json; mapperctl status b --json; } |
	jq -s '[.[] | .name as $v | .segments[] | {v: $v, device, offset, length}]' >segs.json
overlaps=$(jq -r 'group_by(.device)[] | sort_by(.offset)
	| [range(1; length) as $i | select(.[$i - 1].offset + .[$i - 1].length > .[$i].offset)
	   | "\(.[$i - 1].v) and \(.[$i].v) on \(.[$i].device)"] | .[]' segs.json)
[ -z "$overlaps" ] || fail "segments overlap: $overlaps"
[ "$(jq '[.[] | select(.v == "a") | .length] | add' segs.json)" -eq $((24 * MiB)) ] ||
	fail "a's segments do not add up to its size"

start_daemon
head -c $((24 * MiB)) /dev/urandom >pa
head -c $((24 * MiB)) /dev/urandom >pb
dd if=pa of="$MNT/a" bs=1M conv=notrunc,fsync status=none
dd if=pb of="$MNT/b" bs=1M conv=notrunc,fsync status=none
cmp pa "$MNT/a" || fail "writing b changed a"
# And the other order, with new patterns.
head -c $((24 * MiB)) /dev/urandom >pb2
dd if=pb2 of="$MNT/b" bs=1M conv=notrunc,fsync status=none
cmp pa "$MNT/a" || fail "rewriting b changed a"
head -c $((24 * MiB)) /dev/urandom >pa2
dd if=pa2 of="$MNT/a" bs=1M conv=notrunc,fsync status=none
cmp pb2 "$MNT/b" || fail "writing a changed b"
cmp pa2 "$MNT/a" || fail "a does not read back"
stop_daemon

vol_from_devices a | cmp pa2 - || fail "a's bytes are not where its segments say"
vol_from_devices b | cmp pb2 - || fail "b's bytes are not where its segments say"
