#!/usr/bin/env bash
# t030-ext4-survives-daemon-restart.sh: ext4 on a direct-I/O loop device
# over a linear volume (spanning two devices) holds a copied tree, checks
# clean, and after the daemon is stopped and started again the same files
# with the same contents are there.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires_loop
requires mkfs.ext4 e2fsck
tree=/usr/include
[ -d "$tree" ] || skip "no $tree to copy"

make_pool
add_file_device d0 320M >/dev/null
add_file_device d1 320M >/dev/null
mapperctl create linear v --size 512M --on d0,d1
start_daemon

dev=$(attach_loop "$MNT/v")
mkfs.ext4 -q -F "$dev"
mount_fs "$dev" fs
cp -a "$tree" fs/tree
manifest() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
manifest "$tree" >want
manifest fs/tree >got
cmp want got || fail "copy on ext4 differs from $tree"
umount fs
e2fsck -fn "$dev" >fsck.log 2>&1 || { cat fsck.log >&2; fail "e2fsck found errors"; }
detach_loop "$dev"

stop_daemon
start_daemon
dev=$(attach_loop "$MNT/v")
e2fsck -fn "$dev" >fsck.log 2>&1 || { cat fsck.log >&2; fail "e2fsck found errors after restart"; }
mount_fs "$dev" fs -o ro
manifest fs/tree >got
cmp want got || fail "files differ after the daemon restarted"
