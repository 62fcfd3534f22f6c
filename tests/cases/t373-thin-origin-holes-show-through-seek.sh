#!/usr/bin/env bash
# t373-thin-origin-holes-show-through-seek.sh: a thin volume over a sparse
# origin image answers SEEK_DATA and SEEK_HOLE with the image's own data
# and holes where it has not written, its own blocks where it has, and a
# hole past the image; st_blocks counts the image's data and the
# volume's blocks (a volume all in its image is not empty to du or tar),
# and qemu-img compare and map agree with the image.  A block device
# knows no holes: over one, the volume is data up to its end.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires_loop
requires jq python3 qemu-img blockdev

make_pool
add_file_device d0 64M >/dev/null
truncate -s 64M base.img
head -c $MiB /dev/urandom | dd of=base.img bs=1M seek=10 conv=notrunc status=none
head -c 65536 /dev/urandom | dd of=base.img bs=64K seek=640 conv=notrunc status=none
mapperctl create thin-pool tp --size 32M --block-size 64K >/dev/null
mapperctl create thin vm --pool tp --size 96M --origin base.img >/dev/null
start_daemon

# extents FILE: its data extents "start end", one a line, by lseek.
extents()
{
	python3 - "$1" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
end, off = os.fstat(fd).st_size, 0
while off < end:
    try:
        data = os.lseek(fd, off, os.SEEK_DATA)
    except OSError:
        break
    off = os.lseek(fd, data, os.SEEK_HOLE)
    print(data, off)
EOF
}

extents base.img >want
extents "$MNT/vm" >got
diff want got || fail "the volume's data and holes are not the image's"
[ "$(cat want)" = "$((10 * MiB)) $((11 * MiB))
$((40 * MiB)) $((40 * MiB + 65536))" ] || fail "the image's extents are not as made: $(cat want)"
qemu-img compare -q -f raw -F raw base.img "$MNT/vm" || fail "qemu-img compare: the volume differs from its image"
qemu-img map -f raw --output=json base.img | jq -c '.[] | select(.data) | [.start, .length]' >map.want
qemu-img map -f raw --output=json "$MNT/vm" | jq -c '.[] | select(.data) | [.start, .length]' >map.got
diff map.want map.got || fail "qemu-img map of the volume is not the image's"

# st_blocks: the image's data, then also the volume's own block.
img_bytes=$(($(stat -c %b base.img) * 512))
[ "$(($(stat -c %b "$MNT/vm") * 512))" -eq "$img_bytes" ] ||
	fail "st_blocks of the volume is $(stat -c %b "$MNT/vm"), the image's data is $img_bytes bytes"
printf x | dd of="$MNT/vm" bs=1 seek=$((70 * MiB + 100)) conv=notrunc,fsync status=none
printf x | dd of="$MNT/vm" bs=1 seek=$((20 * MiB)) conv=notrunc,fsync status=none
printf '%s\n' "$((10 * MiB)) $((11 * MiB))" "$((20 * MiB)) $((20 * MiB + 65536))" \
	"$((40 * MiB)) $((40 * MiB + 65536))" "$((70 * MiB)) $((70 * MiB + 65536))" >want
extents "$MNT/vm" >got
diff want got || fail "with two blocks written, the volume's extents are not the image's and its own"
[ "$(($(stat -c %b "$MNT/vm") * 512))" -eq $((img_bytes + 2 * 65536)) ] ||
	fail "st_blocks does not count the two blocks the volume wrote"

cp base.img disk.img
loop=$(attach_loop disk.img)
cleanup_fn blockdev --setrw "$loop"	# the flag outlives the loop device's file
blockdev --setro "$loop"
mapperctl create thin vb --pool tp --size 96M --origin "$loop" >/dev/null
[ "$(extents "$MNT/vb")" = "0 $((64 * MiB))" ] ||
	fail "over a block device the volume's extents are: $(extents "$MNT/vb")"
mapperctl remove vb >/dev/null
mapperctl check >/dev/null || fail "check fails"
