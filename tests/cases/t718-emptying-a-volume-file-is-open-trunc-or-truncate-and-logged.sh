#!/usr/bin/env bash
# t718-emptying-a-volume-file-is-open-trunc-or-truncate-and-logged.sh: a
# volume file is emptied (every block discarded: it reads zeros and keeps
# its size) by open(O_TRUNC) as by ftruncate to 0, as docs/cli.md says,
# so that cp and dd (without conv=notrunc) leave no old byte behind the
# holes of what they copy; each emptying is logged at info, naming the
# volume, its size and who asked; O_TRUNC is refused (EBUSY) while
# another file has the volume open and on a read-only volume (EROFS), and
# then empties nothing; qemu-img create and convert (no -n) still work.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq qemu-img xfs_io

make_pool
add_file_device d0 96M >/dev/null
mapperctl create linear lin --size 8M >/dev/null
mapperctl create thin-pool tp --size 64M >/dev/null
mapperctl create thin vm --pool tp --size 16M >/dev/null
start_daemon

head -c $((16 * MiB)) /dev/urandom >data
fill() { dd if=data of="$MNT/$1" bs=1M count="$2" conv=notrunc,fsync status=none; }
mapped() { mapperctl status "$1" --json | json_get .mapped_bytes; }

# open(O_TRUNC): the shell's '>', then cp of a sparse file (SEEK_DATA: it
# writes only the data, so the holes must read zeros on their own).
fill lin 8
mark=$(log_mark)
: >"$MNT/lin"
[ "$(size_of "$MNT/lin")" -eq $((8 * MiB)) ] || fail "O_TRUNC changed the size"
cmp -n $((8 * MiB)) "$MNT/lin" /dev/zero || fail "open(O_TRUNC) did not empty the volume"
wait_log "emptied volume 'lin' \(8.00 MiB, every block discarded, it reads zeros\): an open with O_TRUNC by pid [0-9]+ \(bash\)" "$mark"

fill vm 16
truncate -s 4M sparse && printf 'hello' | dd of=sparse bs=1 seek=$((3 * MiB)) conv=notrunc status=none
cp --sparse=always sparse "$MNT/vm" || fail "cp of a sparse file into a volume file failed"
cmp -n $((4 * MiB)) sparse "$MNT/vm" || fail "cp's copy has old data in its holes"
cmp -i $((4 * MiB)) -n $((12 * MiB)) "$MNT/vm" /dev/zero || fail "old data is left past cp's copy"
[ "$(mapped vm)" -le $((2 * 65536)) ] || fail "O_TRUNC left $(mapped vm) bytes mapped"

# dd without conv=notrunc opens with O_TRUNC too.
fill vm 16
dd if=data of="$MNT/vm" bs=1M count=2 status=none || fail "dd into a volume file failed"
cmp -n $((2 * MiB)) data "$MNT/vm" || fail "dd's data does not read back"
cmp -i $((2 * MiB)) -n $((14 * MiB)) "$MNT/vm" /dev/zero || fail "dd left old data past its end"

# Refused: another file open on it, a read-only volume.  Nothing emptied.
fill lin 8
exec 3<"$MNT/lin"
expect_fail -m "busy" xfs_io -t -c 'pwrite 0 4096' "$MNT/lin"
exec 3<&-
cmp -n $((8 * MiB)) data "$MNT/lin" || fail "a refused O_TRUNC changed the volume"
mapperctl set lin --read-only >/dev/null
expect_fail -m "Read-only file system" xfs_io -r -t -c 'pread 0 4096' "$MNT/lin"
cmp -n $((8 * MiB)) data "$MNT/lin" || fail "O_TRUNC emptied a read-only volume"
mapperctl set lin --read-write >/dev/null

# ftruncate to 0 is logged the same, and qemu-img create (which does it
# on an existing file) empties the volume and says who did.
fill vm 16
mark=$(log_mark)
qemu-img create -q -f raw "$MNT/vm" 16M || fail "qemu-img create -f raw on a volume file failed"
cmp -n $((16 * MiB)) "$MNT/vm" /dev/zero || fail "qemu-img create left old data"
wait_log "emptied volume 'vm' \(16.00 MiB, every block discarded, it reads zeros\): a truncate to 0 by pid [0-9]+ \(qemu-img\)" "$mark"
qemu-img create -q -f qcow2 img.qcow2 16M
qemu-io -f qcow2 -c 'write -P 0x5a 1M 3M' img.qcow2 >/dev/null
fill vm 16
qemu-img convert -O raw img.qcow2 "$MNT/vm" || fail "qemu-img convert to a volume file failed"
qemu-img compare -q img.qcow2 "$MNT/vm" || fail "qemu-img convert left old data in the volume"
mapperctl check >/dev/null || fail "check fails after the emptyings"
