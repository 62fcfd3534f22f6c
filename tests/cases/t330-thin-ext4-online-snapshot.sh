#!/usr/bin/env bash
# t330-thin-ext4-online-snapshot.sh: ext4 on a thin volume, files written
# and synced, a snapshot taken while it is mounted and written, the origin
# changed after: the snapshot, on a second loop device, mounted read-only,
# holds the files as they were, and e2fsck is clean on both; a snapshot of
# the snapshot is writable and independent; removing snapshots frees only
# their own blocks.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires_loop
requires jq mkfs.ext4 e2fsck
tree=/usr/include
[ -d "$tree" ] || skip "no $tree to copy"

make_pool
add_file_device d0 600M >/dev/null
mapperctl create thin-pool tp --size 512M >/dev/null
mapperctl create thin v --pool tp --size 1G >/dev/null
start_daemon
manifest() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }

dev=$(attach_loop "$MNT/v")
mkfs.ext4 -q -F "$dev"
mount_fs "$dev" fs
cp -a "$tree" fs/tree
sync
manifest fs >want

# A writer keeps the origin busy while the snapshot is taken.
(for i in $(seq 1 200); do
	head -c 65536 /dev/urandom >fs/busy.$((i % 8)) || exit 1
done) &
writer=$!
mapperctl snapshot --active v s1 >/dev/null
wait "$writer" || fail "writer on the origin failed across the snapshot"
[ -f "$MNT/s1" ] || fail "snapshot does not appear in the mount"

# Change the origin a lot after the snapshot.
rm -rf fs/tree/linux
head -c $((16 * MiB)) /dev/urandom >fs/new
sync

# The snapshot was taken with the fs mounted: it is a crash image, so
# replay its journal on a copy-on-write snapshot of it, not on it.
mapperctl snapshot --active s1 s2 >/dev/null
dev2=$(attach_loop "$MNT/s2")
e2fsck -fy "$dev2" >fsck.log 2>&1 || [ $? -le 1 ] || { cat fsck.log >&2; fail "e2fsck could not recover the snapshot"; }
e2fsck -fn "$dev2" >fsck.log 2>&1 || { cat fsck.log >&2; fail "e2fsck finds errors in the snapshot"; }
mount_fs "$dev2" snap -o ro
(cd snap && manifest . | grep -v ' ./busy\.' ) >got
grep -v ' ./busy\.' want >want.nobusy
cmp want.nobusy got || fail "the snapshot's files differ from the checksums at snapshot time"
umount snap
detach_loop "$dev2"

umount fs
e2fsck -fn "$dev" >fsck.log 2>&1 || { cat fsck.log >&2; fail "e2fsck finds errors in the origin"; }
detach_loop "$dev"

# Snapshot of a snapshot: writable, and writing it changes neither parent.
cp "$MNT/s1" s1.img
mapperctl snapshot --active s1 s3 >/dev/null
dd if=/dev/urandom of="$MNT/s3" bs=1M count=4 conv=notrunc,fsync status=none
cmp s1.img "$MNT/s1" || fail "writing a snapshot of a snapshot changed its parent"

used() { mapperctl list --json | json_get '.[] | select(.name == "tp") | .data_used_bytes'; }
before=$(used)
mapperctl remove s3 >/dev/null
[ "$(used)" -eq $((before - 4 * MiB)) ] || fail "removing s3 freed $((before - $(used))) bytes, not its own 4 MiB"
mapperctl remove s2 >/dev/null
mapperctl remove s1 >/dev/null
dev=$(attach_loop "$MNT/v")
e2fsck -fn "$dev" >fsck.log 2>&1 || { cat fsck.log >&2; fail "origin damaged by removing its snapshots"; }
detach_loop "$dev"
mapperctl check >check.log || { cat check.log >&2; fail "check failed"; }
