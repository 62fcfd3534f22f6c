#!/usr/bin/env bash
# t701-fstab-line-and-service-mount-the-pool.sh: mount(8) mounts a pool
# from an fstab-style line (type fuse.mapperfs, fstab's own options
# among the mount options) through the mount helper, and umount stops
# it; its -f is mount(8)'s "fake" (check, mount nothing, exit 0), not
# "foreground", and -s, -n, -v are taken; run as the unit runs it (-f, a notify socket, stderr to the
# journal), mapperfs says READY=1 once the mount serves, logs with
# priority prefixes and to the pool log, honours -o log=, and says
# STOPPING=1 when unmounted.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires mount umount python3 jq

make_pool
add_file_device d0 16M >/dev/null
mapperctl create linear v --size 4M >/dev/null
mkdir -p mnt
MNT=$T_DIR/mnt

# mount(8) looks for its helper in /sbin only: put ours there for the test.
helper=/sbin/mount.fuse.mapperfs
if [ ! -e "$helper" ]; then
	ln -s "$MAPPERFS_BUILD/bin/mapperfs" "$helper"
	cleanup_fn rm -f "$helper"
elif [ "$(readlink -f "$helper")" != "$(readlink -f "$MAPPERFS_BUILD/bin/mapperfs")" ]; then
	skip "$helper is another mapperfs's"
fi
# The helper's flags as mount(8) passes them; the timeout only bounds a
# helper that took -f for "foreground".
timeout 30 "$helper" "$POOL" "$MNT" -s -f -n -v -o defaults,log=info -t fuse.mapperfs ||
	fail "the helper refused -sfnv: exit $?"
if findmnt -n --mountpoint "$MNT" >/dev/null; then
	fusermount3 -uz "$MNT"
	fail "the helper's -f (fake) mounted the pool"
fi
expect_fail -s 1 -m "no pool at '$T_DIR/nopool'" "$helper" "$T_DIR/nopool" "$MNT" -f
expect_fail -s 1 -m "mount type 'ext4' is not fuse.mapperfs" "$helper" "$POOL" "$MNT" -f -t ext4
printf '%s %s fuse.mapperfs defaults,nofail,noauto,x-systemd.after=network.target,log=info 0 0\n' \
	"$POOL" "$MNT" >fstab
mount -f -v -T "$T_DIR/fstab" "$MNT" || fail "mount -f from the fstab line failed"
! findmnt -n --mountpoint "$MNT" >/dev/null || fail "mount -f mounted the pool"
mount -T "$T_DIR/fstab" "$MNT" || fail "mount from the fstab line failed"
pid=$(cat "$POOL/mapperfs.pid")
cleanup_fn _t_undo_daemon "$MNT" "$pid"
[ "$(findmnt -n -o FSTYPE --mountpoint "$MNT")" = fuse.mapperfs ] || fail "not a fuse.mapperfs mount"
[ "$(size_of "$MNT/v")" -eq $((4 * MiB)) ] || fail "the volume is not served"
umount "$MNT" || fail "umount failed"
wait_pid "$pid" || fail "the daemon did not exit after umount"

# As the unit runs it.
cat >notify.py <<'PY'
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "w", buffering=1) as out:
    out.write("listening\n")
    while True:
        msg = s.recv(4096).decode()
        out.write(msg.replace("\n", " ") + "\n")
        if "STOPPING=1" in msg:
            break
PY
mkfifo notes
python3 notify.py "$T_DIR/notify.sock" notes &
listener=$!
exec 5<notes
read -r line <&5 && [ "$line" = listening ] || fail "the notify listener did not start"
NOTIFY_SOCKET=$T_DIR/notify.sock JOURNAL_STREAM=0:0 \
	"$MAPPERFS_BUILD/bin/mapperfs" --pool "$POOL" -f -o log=debug "$MNT" 2>journal &
daemon=$!
echo "$daemon" >>"$T_DIR/.daemons"
cleanup_fn _t_undo_daemon "$MNT" "$daemon"
read -r line <&5 || fail "no notification"
case $line in *READY=1*MAINPID=$daemon*) ;; *) fail "first notification: $line" ;; esac
[ "$(size_of "$MNT/v")" -eq $((4 * MiB)) ] || fail "READY=1 came before the mount served"
fusermount3 -u "$MNT" || fail "unmount failed"
read -r line <&5 || fail "no notification at stop"
case $line in *STOPPING=1*) ;; *) fail "second notification: $line" ;; esac
wait "$daemon" || fail "mapperfs -f exited $? after the unmount"
wait "$listener"
exec 5<&-
grep -q '^<6>serving pool' journal || fail "no journal line with priority 6: $(head -3 journal)"
grep -q 'serving pool' "$POOL/mapperfs.log" || fail "the pool log was not written under the journal"
expect_fail -s 1 -m "invalid -o log=loud" mapperfs --pool "$POOL" -o log=loud "$MNT"
