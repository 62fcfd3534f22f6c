#!/usr/bin/env bash
# t710-volume-files-truncate-like-disks-that-grow.sh: a truncate of a
# volume file to its size does nothing, to a larger size grows the volume
# online (linear and thin, ENOSPC where the devices have no room), to 0
# empties it (reads zeros, keeps its size; EBUSY while another file has
# it open), to a smaller size is EPERM, as unlink, rename and mkdir are;
# so qemu-img create, convert (no -n), resize and compare, and dd without
# conv=notrunc, work on volume files.  mtime is the last write.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq qemu-img truncate

make_pool
add_file_device d0 96M >/dev/null
mapperctl create linear lin --size 8M >/dev/null
mapperctl create thin-pool tp --size 64M >/dev/null
mapperctl create thin vm --pool tp --size 4M >/dev/null
start_daemon

# Same size, larger (online, while open), smaller.
exec 3<>"$MNT/lin"
truncate -s 8M "$MNT/lin" || fail "truncate to the volume's own size failed"
truncate -s 16M "$MNT/lin" || fail "truncate to a larger size did not grow the linear volume"
[ "$(mapperctl status lin --json | json_get .size)" -eq $((16 * MiB)) ] ||
	fail "the pool does not know the linear volume grew"
[ "$(stat -L -c %s /proc/self/fd/3)" -eq $((16 * MiB)) ] || fail "the open file has the old size"
exec 3>&-
mark=$(log_mark)
expect_fail -m "No space left on device" truncate -s 1G "$MNT/lin"
# Each refusal's log line starts with the volume's name, as the others do.
wait_log "info: volume 'lin': not enough free space.* \(truncate refused\)$" "$mark"
mark=$(log_mark)
expect_fail -m "Invalid argument" truncate -s $((16 * MiB + 1000)) "$MNT/lin"
wait_log "info: volume 'lin': .*multiple of 4 KiB.* \(truncate refused\)$" "$mark"
expect_fail -m "Operation not permitted" truncate -s 4M "$MNT/lin"
[ "$(size_of "$MNT/lin")" -eq $((16 * MiB)) ] || fail "a refused truncate changed the size"
grep -q "cannot shrink below 16.00 MiB" "$POOL/mapperfs.log" || fail "the log does not say why"

# Emptying: zeros, same size; refused while another file has it open.
head -c $((16 * MiB)) /dev/urandom >"$MNT/lin"
cmp -s "$MNT/lin" /dev/zero -n $((16 * MiB)) && fail "the volume reads zeros before it was emptied"
exec 3<"$MNT/lin"
expect_fail -m "busy" truncate -s 0 "$MNT/lin"
exec 3<&-
truncate -s 0 "$MNT/lin" || fail "truncate to 0 failed"
[ "$(size_of "$MNT/lin")" -eq $((16 * MiB)) ] || fail "emptying changed the size"
cmp -n $((16 * MiB)) "$MNT/lin" /dev/zero || fail "an emptied volume does not read zeros"

# The file system's verbs that are the pool's: one errno.
expect_fail -m "Operation not permitted" rm "$MNT/lin"
expect_fail -m "Operation not permitted" mv "$MNT/lin" "$MNT/lin2"
expect_fail -m "Operation not permitted" mkdir "$MNT/d"
expect_fail -m "Operation not permitted" touch "$MNT/new"

# mtime is the last write; touch sets it; ctime is the creation.
touch -d '2001-02-03 04:05:06 UTC' "$MNT/lin"
[ "$(stat -c %Y "$MNT/lin")" -eq "$(date -d '2001-02-03 04:05:06 UTC' +%s)" ] ||
	fail "touch -d did not set the mtime"
printf x | dd of="$MNT/lin" conv=notrunc status=none
[ "$(stat -c %Y "$MNT/lin")" -ge "$(($(date +%s) - 60))" ] || fail "a write did not set the mtime"
[ "$(stat -c %Z "$MNT/lin")" -gt 0 ] || fail "ctime is 1970"

# qemu-img on a thin volume, with no special flag: convert grows the 4M
# volume to the image's size, create and resize grow it, compare agrees.
qemu-img create -q -f qcow2 img.qcow2 24M
qemu-io -f qcow2 -c 'write -P 0x5a 1M 3M' -c 'write -P 0xa5 20M 64k' img.qcow2 >/dev/null
qemu-img convert -O raw img.qcow2 "$MNT/vm" || fail "qemu-img convert to a volume file failed"
[ "$(size_of "$MNT/vm")" -eq $((24 * MiB)) ] || fail "convert did not grow the volume to 24M"
qemu-img compare -q img.qcow2 "$MNT/vm" || fail "qemu-img compare: the volume differs from the image"
qemu-img resize -q -f raw "$MNT/vm" 32M || fail "qemu-img resize failed"
[ "$(mapperctl status vm --json | json_get .size)" -eq $((32 * MiB)) ] || fail "resize did not grow the volume"
expect_fail qemu-img resize -q -f raw --shrink "$MNT/vm" 16M
qemu-img create -q -f raw "$MNT/vm" 32M || fail "qemu-img create -f raw on a volume file failed"
cmp -n $((32 * MiB)) "$MNT/vm" /dev/zero || fail "qemu-img create left old data in the volume"
mapperctl status vm --json | jq -e '.mapped_bytes == 0' >/dev/null ||
	fail "qemu-img create kept blocks mapped"

# Into a larger volume: it keeps its size, the image at its start.
mapperctl create thin big --pool tp --size 48M >/dev/null
dd if=/dev/urandom of="$MNT/big" bs=1M count=48 conv=notrunc status=none
qemu-img convert -O raw img.qcow2 "$MNT/big" || fail "qemu-img convert into a larger volume failed"
[ "$(size_of "$MNT/big")" -eq $((48 * MiB)) ] || fail "convert changed the larger volume's size"
qemu-img convert -O raw img.qcow2 img.raw
cmp -n $((24 * MiB)) img.raw "$MNT/big" ||
	fail "the image is not at the start of the larger volume"
cmp -i $((24 * MiB)):0 -n $((24 * MiB)) "$MNT/big" /dev/zero || fail "old data is left past the image"
dd if=/dev/urandom of="$MNT/big" bs=1M seek=40 count=1 conv=notrunc status=none
expect_fail -m "Operation not permitted" truncate -s 24M "$MNT/big"

# dd without conv=notrunc truncates to 0 first, then writes.
head -c $((2 * MiB)) /dev/urandom >data
dd if=data of="$MNT/vm" bs=1M status=none || fail "dd into a volume file failed"
cmp data <(head -c $((2 * MiB)) "$MNT/vm") || fail "dd's data does not read back"
cmp -i $((2 * MiB)):0 -n $((30 * MiB)) "$MNT/vm" /dev/zero || fail "dd left old data past its end"
mapperctl check >/dev/null || fail "check fails after all that"
