#!/usr/bin/env bash
# t720-admin-changes-refuse-an-open-volume.sh: every admin command that
# would change what an open volume reads, or take it away, refuses it in
# one line ("busy (open)") and changes nothing: remove, deactivate,
# rollback, repair and clone into it, here with ext4 mounted on a loop
# device over it, which fsck still finds clean afterwards.  Closed, the
# same clone goes through.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires_loop
requires jq mkfs.ext4 fsck.ext4 sha256sum

make_pool
add_file_device d0 160M >/dev/null
mapperctl create thin-pool tp --size 96M >/dev/null
mapperctl create thin fs --pool tp --size 32M >/dev/null
mapperctl create thin src --pool tp --size 32M >/dev/null
mapperctl create linear lsrc --size 32M >/dev/null
start_daemon

head -c $((32 * MiB)) /dev/urandom >data
dd if=data of="$MNT/src" bs=1M conv=notrunc,fsync status=none
dd if=data of="$MNT/lsrc" bs=1M conv=notrunc,fsync status=none
mkfs.ext4 -q -F -b 4096 "$MNT/fs"
mapperctl snapshot fs fs-snap >/dev/null
loop=$(attach_loop "$MNT/fs")
mount_fs "$loop" fsmnt
head -c $MiB /dev/urandom >fsmnt/file
sync -f fsmnt/file
sum=$(sha fsmnt/file)

# refuses_open REGEX ARGS...: mapperctl ARGS fails with REGEX; the list is
# as it was and the file system on the volume is untouched.
n=0
refuses_open()
{
	local regex=$1

	shift
	mapperctl list --json | jq -S 'map(del(.modified))' >before.json
	expect_fail -s 1 -m "^mapperctl: .*$regex" mapperctl "$@"
	mapperctl list --json | jq -S 'map(del(.modified))' | cmp -s before.json - ||
		fail "'mapperctl $*' was refused but changed the pool"
	echo 3 >/proc/sys/vm/drop_caches
	[ "$(sha fsmnt/file)" = "$sum" ] || fail "'mapperctl $*' changed the file system's data"
	n=$((n + 1))
}
refuses_open "volume 'fs' is busy \(open\)" remove fs
refuses_open "volume 'fs' is busy \(open\)" deactivate fs
refuses_open "volume 'fs' is busy \(open\)" rollback fs fs-snap
refuses_open "volume 'fs' of thin pool 'tp' is busy \(open\)" repair tp
refuses_open "volume 'fs' is busy \(open\)" clone src fs
refuses_open "volume 'fs' is busy \(open\)" clone lsrc fs
[ "$n" -eq 6 ] || fail "only $n cases"

umount fsmnt
fsck.ext4 -n -f "$loop" >fsck.log 2>&1 || { cat fsck.log >&2; fail "fsck finds the file system damaged"; }
detach_loop "$loop"

# Closed, the clone goes through (that no file opens while it runs is
# test_linear's volume_held_alone_admits_no_other_holder).
mapperctl clone lsrc fs >/dev/null || fail "clone into a closed volume failed"
cmp data "$MNT/fs" || fail "the clone does not read back"
mapperctl check >/dev/null || fail "check fails after the refusals and the clone"
