#!/usr/bin/env bash
# t602-thin-discard-passdown-gives-space-back.sh: blocks a thin pool frees
# (a punched hole, blkdiscard through a loop device, copy-on-write,
# removal) are discarded on the raw device after the commit that freed
# them: the backing file's allocation (du) falls back, and `remove`
# returns only once it has (status counts it then too).  A pool made with
# --no-discard-passdown keeps them allocated until `trim`.  Under a mix of
# writes and discards, a discard never lands on a block that was handed
# out again: fio's verification passes.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires_loop
requires fio blkdiscard du

kib() { du -k "$1" | cut -f1; }

make_pool
d0=$(add_file_device d0 400M)
d1=$(add_file_device d1 200M)
mapperctl create thin-pool tp --size 320M --on d0 >/dev/null
mapperctl create thin-pool keep --size 160M --on d1 --no-discard-passdown >/dev/null
mapperctl create thin v1 --pool tp --size 256M >/dev/null
mapperctl create thin k1 --pool keep --size 128M >/dev/null
start_daemon
base=$(kib "$d0")

dd if=/dev/urandom of="$MNT/v1" bs=1M count=200 conv=notrunc,fsync status=none
[ "$(kib "$d0")" -ge $((base + 200 * 1024)) ] || fail "writing 200 MiB did not allocate it: $(kib "$d0") KiB"
fallocate -p -o 0 -l $((200 * MiB)) "$MNT/v1"
mapperctl check tp >/dev/null		# a commit: the discards follow it
[ "$(kib "$d0")" -le $((base + 1024)) ] || fail "punching did not give the space back: $(kib "$d0") KiB"
[ "$(mapperctl status tp --json | json_get .discarded_bytes)" -ge $((200 * MiB)) ] ||
	fail "status does not count the discarded bytes"

# blkdiscard through a direct-I/O loop device.
loop=$(attach_loop "$MNT/v1")
dd if=/dev/urandom of="$loop" bs=1M count=100 oflag=direct status=none
sync "$loop"
discarded=$(mapperctl status tp --json | json_get .discarded_bytes)
blkdiscard "$loop"
mapperctl check tp >/dev/null
[ "$(kib "$d0")" -le $((base + 1024)) ] || fail "blkdiscard did not give the space back: $(kib "$d0") KiB"
[ "$(mapperctl status tp --json | json_get .discarded_bytes)" -ge $((discarded + 100 * MiB)) ] ||
	fail "status does not count what blkdiscard discarded"
detach_loop "$loop"

# Copy-on-write and removal.
dd if=/dev/urandom of="$MNT/v1" bs=1M count=64 conv=notrunc,fsync status=none
mapperctl snapshot v1 s1 >/dev/null
dd if=/dev/urandom of="$MNT/v1" bs=1M count=64 conv=notrunc,fsync status=none
[ "$(kib "$d0")" -ge $((base + 128 * 1024)) ] || fail "copy-on-write did not allocate"
discarded=$(mapperctl status tp --json | json_get .discarded_bytes)
# remove returns once the commit that frees the blocks and their discard
# are done: du and status show it at once, with no commit asked for.
mapperctl remove s1 >/dev/null
[ "$(kib "$d0")" -le $((base + 65 * 1024)) ] || fail "removing the snapshot kept its blocks: $(kib "$d0") KiB"
[ "$(mapperctl status tp --json | json_get .discarded_bytes)" -ge $((discarded + 64 * MiB)) ] ||
	fail "status does not count what removing the snapshot discarded"

# Without passdown, blocks stay allocated until trim.
kbase=$(kib "$d1")
dd if=/dev/urandom of="$MNT/k1" bs=1M count=64 conv=notrunc,fsync status=none
fallocate -p -o 0 -l $((64 * MiB)) "$MNT/k1"
mapperctl check keep >/dev/null
[ "$(kib "$d1")" -ge $((kbase + 64 * 1024)) ] || fail "--no-discard-passdown discarded"
mapperctl trim keep | grep -q "^discarded " || fail "trim said nothing"
[ "$(kib "$d1")" -le $((kbase + 1024)) ] || fail "trim did not give the space back: $(kib "$d1") KiB"

# A write/discard mix: freed blocks are discarded while fio takes blocks.
mapperctl create thin churn --pool tp --size 64M >/dev/null
mapperctl create thin f1 --pool tp --size 96M >/dev/null
fio --name=verify --filename="$MNT/f1" --rw=randwrite --bs=64K --size=96M --direct=1 \
	--ioengine=psync --verify=crc32c --verify_fatal=1 --do_verify=1 \
	--verify_state_save=0 --output=fio.log &
fio_pid=$!
stop_fio() { ! kill "$1" 2>/dev/null || wait_pid "$1" || true; }
cleanup_fn stop_fio "$fio_pid"
for round in 1 2 3 4 5 6; do
	dd if=/dev/urandom of="$MNT/churn" bs=1M count=32 conv=notrunc,fsync status=none
	fallocate -p -o 0 -l $((32 * MiB)) "$MNT/churn"
	mapperctl check tp >/dev/null || fail "check fails in round $round"
done
wait "$fio_pid" || fail "fio's verification failed: $(tail -5 fio.log)"
mapperctl check >/dev/null || fail "check fails after the mix"
