#!/usr/bin/env bash
# t719-clone-into-thin-leaves-holes-where-the-source-reads-zeros.sh: a
# clone (mapperctl clone, copy_file_range) of a linear volume into a thin
# one maps only the thin blocks that hold something: the source's holes
# (a discard punched them in its file device: SEEK_DATA) and its whole
# blocks of written zeros (read, found zero, discarded) stay holes, as do
# those of a linear volume on a block device, which knows no holes; the
# clone says truly how much it copied and left holes, the copy reads
# back, and the thin pool grows by the data alone.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires_loop
requires jq xfs_io fallocate

make_pool
add_file_device d0 160M >/dev/null
truncate -s 64M blk.img
blk=$(attach_loop blk.img)
mapperctl device add "$blk" --name b0 >/dev/null
mapperctl create linear lin --size 32M --on d0 >/dev/null
mapperctl create linear lblk --size 32M --on b0 >/dev/null
mapperctl create thin-pool tp --size 96M --block-size 64K --on d0 >/dev/null
mapperctl create thin t --pool tp --size 32M >/dev/null
mapperctl create thin t2 --pool tp --size 32M >/dev/null
mapperctl create thin t3 --pool tp --size 32M >/dev/null
start_daemon

mapped() { mapperctl status "$1" --json | json_get .mapped_bytes; }
used() { mapperctl status tp --json | json_get .data_used_bytes; }

# lin: 1 MiB of data at 0 and at 20 MiB, 8 MiB of written zeros at 4 MiB,
# 8 MiB written then discarded (trimmed) at 12 MiB; the rest never written.
head -c $((2 * MiB)) /dev/urandom >data
dd if=data of="$MNT/lin" bs=1M count=1 conv=notrunc,fsync status=none
dd if=data of="$MNT/lin" bs=1M skip=1 seek=20 count=1 conv=notrunc,fsync status=none
dd if=/dev/zero of="$MNT/lin" bs=1M seek=4 count=8 conv=notrunc,fsync status=none
dd if=/dev/urandom of="$MNT/lin" bs=1M seek=12 count=8 conv=notrunc,fsync status=none
fallocate -p -o $((12 * MiB)) -l $((8 * MiB)) "$MNT/lin"

out=$(mapperctl clone lin t) || fail "mapperctl clone lin t failed"
[ "$out" = "cloned 'lin' into 't': 0 B shared (mapped blocks, not copied), 2.00 MiB copied, 22.00 MiB of holes and 8.00 MiB of zeros left holes" ] ||
	fail "clone said: $out"
cmp "$MNT/lin" "$MNT/t" || fail "the clone does not read back"
[ "$(mapped t)" -eq $((2 * MiB)) ] || fail "the clone maps $(mapped t) bytes, not the 2 MiB of data"
[ "$(used)" -eq $((2 * MiB)) ] || fail "the thin pool uses $(used) bytes, not the 2 MiB of data"
grep -q "cloned volume 'lin' into 't': 0 B shared, 2.00 MiB copied, 22.00 MiB of holes and 8.00 MiB of zeros left holes" \
	"$POOL/mapperfs.log" || fail "the log does not say what the clone did"

# On a block device, what was never written or was trimmed reads zeros
# but is no hole: it is read, and left a hole all the same.
dd if="$MNT/lin" of="$MNT/lblk" bs=1M conv=notrunc,fsync status=none
fallocate -p -o $((12 * MiB)) -l $((8 * MiB)) "$MNT/lblk"
out=$(mapperctl clone lblk t3) || fail "mapperctl clone lblk t3 failed"
[ "$out" = "cloned 'lblk' into 't3': 0 B shared (mapped blocks, not copied), 2.00 MiB copied, 0 B of holes and 30.00 MiB of zeros left holes" ] ||
	fail "clone of the linear volume on a block device said: $out"
cmp "$MNT/lblk" "$MNT/t3" || fail "the clone of lblk does not read back"
[ "$(mapped t3)" -eq $((2 * MiB)) ] || fail "the clone of lblk maps $(mapped t3) bytes, not 2 MiB"

# copy_file_range does the same; onto mapped blocks, zeros unmap them.
dd if=/dev/urandom of="$MNT/t2" bs=1M count=32 conv=notrunc,fsync status=none
xfs_io -c "copy_range $MNT/lin" "$MNT/t2" || fail "xfs_io copy_range lin t2 failed"
cmp "$MNT/lin" "$MNT/t2" || fail "copy_range's copy does not read back"
[ "$(mapped t2)" -eq $((2 * MiB)) ] || fail "copy_range left $(mapped t2) bytes mapped, not 2 MiB"
mapperctl check >/dev/null || fail "check fails after the clones"
