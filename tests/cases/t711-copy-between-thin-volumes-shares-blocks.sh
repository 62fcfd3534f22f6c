#!/usr/bin/env bash
# t711-copy-between-thin-volumes-shares-blocks.sh: copy_file_range between
# two thin volumes of one pool (cp --reflink=auto, xfs_io copy_range)
# shares whole blocks instead of copying them: the copy reads back, the
# destination's shared_bytes is the size copied and the pool's used blocks
# do not change; the partial blocks at either end are copied; writing the
# copy afterwards leaves the source alone; `mapperctl clone` does the same
# offline and says truly how much it shared, copied and left holes;
# between a thin and a linear volume the bytes are copied.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq xfs_io

make_pool
add_file_device d0 96M >/dev/null
mapperctl create thin-pool tp --size 64M --block-size 64K >/dev/null
for v in a b c d e; do mapperctl create thin "$v" --pool tp --size 16M >/dev/null; done
mapperctl create linear lin --size 16M >/dev/null
start_daemon

used() { mapperctl status tp --json | json_get .data_used_bytes; }
shared() { mapperctl status "$1" --json | json_get .shared_bytes; }
mapped() { mapperctl status "$1" --json | json_get .mapped_bytes; }

head -c $((16 * MiB)) /dev/urandom >data
dd if=data of="$MNT/a" bs=1M conv=notrunc,fsync status=none
before=$(used)

cp --reflink=auto "$MNT/a" "$MNT/b" || fail "cp --reflink=auto between volumes failed"
cmp data "$MNT/b" || fail "the copy does not read back"
[ "$(shared b)" -eq $((16 * MiB)) ] || fail "cp copied instead of sharing: shared_bytes $(shared b)"
[ "$(used)" -eq "$before" ] || fail "cp took space: $before -> $(used) bytes used"

# xfs_io copy_range: 1 MiB + 3 bytes from offset 100 of a to offset 100 of
# c: a partial head, 15 whole blocks shared, a partial tail.
xfs_io -c "copy_range -s 100 -d 100 -l $((MiB + 3)) $MNT/a" "$MNT/c" ||
	fail "xfs_io copy_range failed"
cmp -n $((MiB + 3)) -i 100:100 data "$MNT/c" || fail "copy_range's bytes do not read back"
cmp -n 100 "$MNT/c" /dev/zero || fail "copy_range wrote before its range"
[ "$(shared c)" -eq $((15 * 65536)) ] || fail "copy_range shared $(shared c) bytes, not 15 blocks"
[ "$(used)" -eq $((before + 2 * 65536)) ] || fail "copy_range took more than its 2 partial blocks"

# Partial blocks that are holes of the source (d is all holes) stay holes
# on holes and take no block, whole blocks too: a copy of more than 4 GiB
# is split by the kernel at 4 GiB - 4 KiB, 4 KiB into a block.
used_before=$(used)
xfs_io -c "copy_range -s 4096 -d 4096 -l $((2 * 65536)) $MNT/d" "$MNT/e" ||
	fail "xfs_io copy_range of holes failed"
[ "$(mapped e)" -eq 0 ] || fail "copying holes onto holes mapped $(mapped e) bytes"
[ "$(used)" -eq "$used_before" ] || fail "copying holes took space: $used_before -> $(used)"
# Onto mapped blocks they read zeros, and the whole block between goes.
dd if=data of="$MNT/e" bs=64K count=3 conv=notrunc,fsync status=none
xfs_io -c "copy_range -s 4096 -d 4096 -l $((2 * 65536)) $MNT/d" "$MNT/e" ||
	fail "xfs_io copy_range of holes onto data failed"
cmp -n 4096 data "$MNT/e" || fail "copying holes changed what is before the range"
cmp -n $((2 * 65536)) -i 4096 "$MNT/e" /dev/zero || fail "copied holes do not read zeros"
cmp -n $((65536 - 4096)) -i $((2 * 65536 + 4096)):$((2 * 65536 + 4096)) data "$MNT/e" ||
	fail "copying holes changed what is after the range"
[ "$(mapped e)" -eq $((2 * 65536)) ] ||
	fail "copying holes onto 3 blocks left $(mapped e) bytes mapped, not 2 blocks"

# Writing the copy breaks the sharing of that block only.
dd if=/dev/zero of="$MNT/b" bs=64K count=1 conv=notrunc,fsync status=none
cmp data "$MNT/a" || fail "writing the copy changed the source"
[ "$(shared b)" -eq $((16 * MiB - 65536)) ] || fail "one write unshared $(shared b) bytes"

# Between a thin and a linear volume: bytes are copied.
cp --reflink=auto "$MNT/a" "$MNT/lin" || fail "cp from thin to linear failed"
cmp data "$MNT/lin" || fail "the linear copy does not read back"
mapperctl set c --read-only >/dev/null
expect_fail -m "read-only" mapperctl clone a c
expect_fail -m "Read-only file system" xfs_io -c "copy_range -l 65536 $MNT/a" "$MNT/c"
mapperctl check >/dev/null || fail "check fails after the copies"

stop_daemon
# clone_says SRC DST SHARED COPIED HOLES ZEROS: what mapperctl clone prints.
clone_says()
{
	local out

	out=$(mapperctl clone "$1" "$2") || fail "mapperctl clone $1 $2 failed"
	[ "$out" = "cloned '$1' into '$2': $3 shared (mapped blocks, not copied), $4 copied, $5 of holes and $6 of zeros left holes" ] ||
		fail "mapperctl clone $1 $2 said: $out"
}
clone_says a b "16.00 MiB" "0 B" "0 B" "0 B"
[ "$(shared b)" -eq $((16 * MiB)) ] || fail "mapperctl clone: shared_bytes $(shared b)"
# c maps 17 blocks (1.0625 MiB), the rest are holes.
used_before=$(used)
clone_says c d "1.06 MiB" "0 B" "14.94 MiB" "0 B"
[ "$(shared d)" -eq $((17 * 65536)) ] || fail "mapperctl clone c d: shared_bytes $(shared d)"
[ "$(used)" -eq "$used_before" ] || fail "mapperctl clone c d took space"
clone_says lin e "0 B" "16.00 MiB" "0 B" "0 B"
clone_says c lin "0 B" "1.06 MiB" "14.94 MiB" "0 B"
expect_fail -m "no volume 'nope' \\(clone copies into an existing volume: create it first\\)" \
	mapperctl clone a nope
mapperctl check >/dev/null || fail "check fails after clone"
