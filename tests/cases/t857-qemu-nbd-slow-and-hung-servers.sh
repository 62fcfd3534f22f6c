#!/usr/bin/env bash
# t857-qemu-nbd-slow-and-hung-servers.sh: raw devices from other NBD
# servers.  qemu-nbd (one client at a time, no multi-conn) serves a file:
# the pool takes one connection, and ext4 on a loop device over a volume
# there is made, filled, checked and remounted with its files intact.
# A slow nbdkit (every request 20 ms late, the delay filter) serves a
# volume under fio --verify without an error.  A hung one (the pause
# filter: requests wait, the connection stays up) fails a read with EIO
# once -o nbd_timeout has passed, instead of hanging it; resumed, the
# volume serves again.
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs
requires_loop
requires qemu-nbd nbdkit fio jq mkfs.ext4 fsck.ext4

make_pool
truncate -s 160M qemu.raw
cleanup_fn _t_undo_qemu_nbd "$T_DIR/qemu.pid"
_t_undo_qemu_nbd()
{
	local pid

	pid=$(cat "$1" 2>/dev/null) || return 0
	kill "$pid" 2>/dev/null && wait_pid "$pid"
}
qemu-nbd --fork --pid-file "$T_DIR/qemu.pid" --socket "$T_DIR/qemu.sock" --format raw \
	--persistent --cache=none "$T_DIR/qemu.raw" || fail "qemu-nbd did not start"
mapperctl device add "nbd+unix:///?socket=$T_DIR/qemu.sock" --name q >/dev/null
slow=$(nbd_server slow 96M delay-read=20ms delay-write=20ms)
mapperctl device add "$slow" --name slow >/dev/null
hung=$(nbd_server hung 64M)
mapperctl device add "$hung" --name hung >/dev/null
mapperctl create linear fs --size 128M --on q >/dev/null
mapperctl create linear s --size 64M --on slow >/dev/null
mapperctl create linear h --size 32M --on hung >/dev/null
start_daemon "$POOL" "$T_DIR/mnt" -o nbd_timeout=2

loop=$(attach_loop "$MNT/fs")
mkfs.ext4 -q -F "$loop" || fail "mkfs.ext4 on a volume over qemu-nbd failed"
mount_fs "$loop" "$T_DIR/ext4"
head -c $((24 * MiB)) /dev/urandom >"$T_DIR/ext4/file"
sum=$(sha "$T_DIR/ext4/file")
umount "$T_DIR/ext4"
fsck.ext4 -fn "$loop" >fsck.out 2>&1 || fail "fsck after the writes: $(tail -5 fsck.out)"
mount_fs "$loop" "$T_DIR/ext4"
[ "$(sha "$T_DIR/ext4/file")" = "$sum" ] || fail "the file on ext4 reads otherwise"
mapperctl status --json >st.json
[ "$(json_get '.devices[] | select(.name == "q") | .nbd.multi_conn' <st.json)" = false ] ||
	fail "qemu-nbd without --shared does not allow multi-conn; status says it does"
[ "$(json_get '.devices[] | select(.name == "q") | .nbd.connections' <st.json)" = 1 ] ||
	fail "more than one connection to a server without multi-conn"

fio --name=slow --filename="$MNT/s" --rw=randrw --bs=64k --direct=1 --ioengine=libaio \
	--iodepth=8 --size=16M --verify=crc32c --verify_fatal=1 --verify_state_save=0 \
	--output=fio.out || fail "fio on the slow server failed: $(tail -5 fio.out)"
grep -q "err= 0" fio.out || fail "fio saw errors on a slow server: $(grep err= fio.out)"
lat=$(fio --name=lat --filename="$MNT/s" --rw=randread --bs=4k --direct=1 --size=16M \
	--io_size=40k --output-format=json | jq '.jobs[0].read.clat_ns.min / 1000000')
[ "$(echo "$lat >= 20" | bc)" = 1 ] || fail "the delay filter did not slow the reads ($lat ms)"

head -c $MiB /dev/urandom >data
dd if=data of="$MNT/h" bs=1M oflag=direct conv=notrunc status=none
nbd_pause hung
mark=$(log_mark)
read_fails_eio "$MNT/h" "on a server that answers nothing"
wait_log "of 'nbd\+unix:///\?socket=.*/hung/sock' failed" "$mark"
nbd_resume hung
cmp -n $MiB data "$MNT/h" || fail "the volume does not read what it held once the server answers"
umount "$T_DIR/ext4"
detach_loop "$loop"
mapperctl check >check.out 2>&1 || fail "check: $(cat check.out)"
stop_daemon
