#!/usr/bin/env bash
# t539-service-stops-with-a-loop-device-open.sh: the stop sequence that
# mapperfs@.service and docs/cli.md give works with a loop device open on
# a volume.  'fusermount3 -u' cannot stop the daemon then (the kernel says
# EBUSY), so the unit does not stop it that way: it sends its KillSignal,
# which detaches the mount at once and names, in the log, the volume still
# open and what to do about it; 'losetup -d' then lets the daemon exit 0,
# well within the unit's TimeoutStopSec, and nothing needs a SIGKILL.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires_loop

unit=$T_SRC/dist/mapperfs@.service.in
! grep -Eq '^ExecStop=.*(fusermount|umount)' "$unit" ||
	fail "the unit stops the daemon by unmounting, which fails while a loop device is open"
sig=$(sed -n 's/^KillSignal=//p' "$unit")
sig=${sig:-SIGTERM}
timeout_s=$(sed -n 's/^TimeoutStopSec=//p' "$unit")

make_pool
add_file_device d0 32M >/dev/null
mapperctl create linear v --size 8M >/dev/null
MNT=$T_DIR/mnt
mkdir -p "$MNT"
JOURNAL_STREAM=0:0 "$MAPPERFS_BUILD/bin/mapperfs" --pool "$POOL" -f "$MNT" 2>journal &	# as the unit runs it
daemon=$!
echo "$daemon" >>"$T_DIR/.daemons"
cleanup_fn _t_undo_daemon "$MNT" "$daemon"
wait_log "serving pool"
dd if=/dev/urandom of=v.data bs=1M count=8 status=none
dd if=v.data of="$MNT/v" bs=1M conv=notrunc,fsync status=none
loop=$(attach_loop "$MNT/v")

expect_fail fusermount3 -u "$MNT"	# what the unit used to run
mountpoint -q "$MNT" || fail "the refused unmount took the mount away"

mark=$(log_mark)
t0=$(date +%s)
kill "-${sig#SIG}" "$daemon"
wait_log "$sig: '$MNT' is detached \(no new opens\); still serving the open volumes 'v' \(1\); the daemon stops once they are closed \(unmount what is mounted on a loop device over one, then 'losetup -d' the device\)" "$mark"
! mountpoint -q "$MNT" || fail "$sig did not detach the mount"
cmp v.data "$loop" || fail "the loop device stopped reading right after $sig"
kill -0 "$daemon" || fail "the daemon exited while the loop device was open"

detach_loop "$loop"
wait "$daemon" || fail "the daemon exited $? after the loop device was detached"
[ $(($(date +%s) - t0)) -lt "${timeout_s:-90}" ] || fail "the stop took longer than TimeoutStopSec"
