#!/usr/bin/env bash
# t833-thin-reduce-gives-its-blocks-back-to-the-pool.sh: a thin volume
# written whole and reduced to a quarter keeps its first quarter, and its
# pool's used space drops by the blocks past the new end at once (they
# are unmapped as a discard unmaps them, and committed); a snapshot's
# blocks stay where the snapshot still maps them; grown again, the volume
# reads zeros past the old cut; a map of three leaves cut to one, grown
# to two and written, and its snapshot removed, keep check clean and
# free every block; a volume over an external origin refuses.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq cmp

make_pool
add_file_device d0 256M >/dev/null
mapperctl create thin-pool tp --size 224M --block-size 64K >/dev/null
mapperctl create thin v --pool tp --size 32M >/dev/null
mapperctl create thin w --pool tp --size 16M >/dev/null
head -c $((4 * MiB)) /dev/urandom >base.img
mapperctl create thin o --pool tp --size 8M --origin "$PWD/base.img" >/dev/null
start_daemon
head -c $((32 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=1M conv=notrunc,fsync status=none
dd if=data of="$MNT/w" bs=1M count=16 conv=notrunc,fsync status=none
mapperctl snapshot w w-snap >/dev/null

used() { mapperctl status tp --json | json_get .data_used_bytes; }
[ "$(used)" -eq $((48 * MiB)) ] || fail "the pool uses $(used) bytes before"

mapperctl reduce v --size 8M --yes >out.txt
grep -qx "reduced volume 'v' to 8.00 MiB" out.txt || fail "reduce says: $(cat out.txt)"
[ "$(used)" -eq $((24 * MiB)) ] || fail "the pool uses $(used) bytes after reducing v by 24 MiB"
[ "$(size_of "$MNT/v")" -eq $((8 * MiB)) ] || fail "v is $(size_of "$MNT/v") bytes"
cmp -n $((8 * MiB)) data "$MNT/v" || fail "v's first 8 MiB changed"
[ "$(mapperctl status v --json | json_get .mapped_bytes)" -eq $((8 * MiB)) ] ||
	fail "v still maps $(mapperctl status v --json | json_get .mapped_bytes) bytes"

# A reduce inside a block, of a volume whose blocks a snapshot shares:
# nothing comes back (w held no block alone), the block holding the new
# end becomes w's own copy, zeroed past the end (one block more), and
# w-snap is whole.
mapperctl reduce w --size $((4 * MiB + 8192)) --yes >/dev/null
[ "$(used)" -eq $((24 * MiB + 64 * 1024)) ] || fail "reducing w: the pool uses $(used) bytes"
mapperctl activate w-snap >/dev/null
cmp -n $((16 * MiB)) data "$MNT/w-snap" || fail "w's snapshot changed"
cmp -n $((4 * MiB + 8192)) data "$MNT/w" || fail "w's first bytes changed"

mapperctl extend v --size 16M >/dev/null
cmp -n $((8 * MiB)) data "$MNT/v" || fail "extend after reduce changed v's first 8 MiB"
cmp -n $((8 * MiB)) -i $((8 * MiB)):0 "$MNT/v" /dev/zero || fail "v reads old data past its old cut"
expect_fail -s 1 -m "thin volume 'o' reads an external origin: shrinking it is not supported" \
	mapperctl reduce o --size 4M --yes
mapperctl check >/dev/null || fail "check after the reduces: $(mapperctl check)"

# 96 MiB is three leaves of the map (32 MiB each at 64 KiB blocks): the
# directory is cut to one, grown to two, and the snapshot's stays whole.
mapperctl create thin big --pool tp --size 96M >/dev/null
dd if=/dev/urandom of="$MNT/big" bs=1M count=96 conv=notrunc,fsync status=none
mapperctl snapshot big big-snap >/dev/null
mapperctl reduce big --size 16M --yes >/dev/null
mapperctl check >/dev/null || fail "check after cutting big's map: $(mapperctl check)"
mapperctl extend big --size 48M >/dev/null
dd if=/dev/urandom of="$MNT/big" bs=1M seek=16 count=32 conv=notrunc,fsync status=none
mapperctl check >/dev/null || fail "check after growing big's map again: $(mapperctl check)"
mapperctl remove big-snap >/dev/null
[ "$(used)" -eq $((24 * MiB + 64 * 1024 + 48 * MiB)) ] ||
	fail "the pool uses $(used) bytes once big-snap is gone"
mapperctl remove big >/dev/null
mapperctl check >/dev/null || fail "check after removing big: $(mapperctl check)"
stop_daemon
mapperctl check >/dev/null || fail "check offline: $(mapperctl check)"
[ "$(used)" -eq $((24 * MiB + 64 * 1024)) ] || fail "the pool uses $(used) bytes after a restart"
