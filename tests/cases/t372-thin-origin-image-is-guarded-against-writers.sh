#!/usr/bin/env bash
# t372-thin-origin-image-is-guarded-against-writers.sh: an external origin
# image is opened read-only and leased; a writer (root's dd, which mode
# 0444 does not stop) waits until the daemon has fenced it, so the thin
# volume never shows the image half changed: its reads of the image fail
# with EIO, what it wrote itself still reads, status and check say why.
# After a restart the changed image fails the volume, naming the change
# (size or mtime, recorded when it was made); the image put back as it
# was serves it again.  An image open for writing, and a block device
# that can be written, are refused as new origins, and an origin image
# as a raw device.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires_loop
requires jq blockdev

make_pool
add_file_device d0 64M >/dev/null
head -c $((4 * MiB)) /dev/urandom >base.img
cp base.img base.orig
chmod 0444 base.img
mapperctl create thin-pool tp --size 32M >/dev/null
mapperctl create thin vm1 --pool tp --size 8M --origin base.img >/dev/null
start_daemon
pid=$(daemon_pid)

# The daemon holds the image read-only, with a read lease on it.
n=0
for fd in /proc/"$pid"/fd/*; do
	[ "$(readlink "$fd")" = "$T_DIR/base.img" ] || continue
	flags=$(awk '/^flags:/ { print $2 }' "/proc/$pid/fdinfo/${fd##*/}")
	[ $((8#$flags & 3)) -eq 0 ] || fail "the daemon holds the image with flags $flags, not read-only"
	n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "the daemon holds no descriptor of the image"
ino=$(stat -c %i base.img)
grep -Eq "LEASE +ACTIVE +READ +$pid [0-9a-f]+:[0-9a-f]+:$ino " /proc/locks ||
	fail "no read lease of the daemon's on the image: $(cat /proc/locks)"

# Nor can the pool take it as a raw device, whose label would land in it.
expect_fail -m "'$T_DIR/base.img' is the external origin of thin volume 'vm1'" \
	mapperctl device add base.img --force
cmp base.img base.orig || fail "a refused device add changed the image"

head -c 4096 /dev/urandom >page
dd if=page of="$MNT/vm1" bs=4K seek=1 conv=notrunc,fsync status=none

# A writer: its open waits for the fence, then it writes.
mark=$(log_mark)
dd if=/dev/zero of=base.img bs=4K seek=100 count=1 conv=notrunc status=none ||
	fail "root could not write the image"
wait_log "thin volume 'vm1': its origin '$T_DIR/base.img' was opened for writing or truncated by another program while served: its reads fail" "$mark"
expect_fail -m "Input/output error" dd if="$MNT/vm1" of=/dev/null bs=4K skip=100 count=1 status=none
cmp page <(dd if="$MNT/vm1" bs=4K skip=1 count=1 status=none) ||
	fail "what the volume wrote itself does not read back"
mapperctl status vm1 --json | jq -e '.state == "failed" and (.reason | test("was opened for writing"))' >/dev/null ||
	fail "status does not say vm1 fails: $(mapperctl status vm1 --json)"
expect_fail -s 1 mapperctl check
grep -q "^volume 'vm1': its origin '$T_DIR/base.img' was opened for writing" "$T_DIR/.stdout" ||
	fail "check does not name the image: $(cat "$T_DIR/.stdout")"

# Restarted, the image is found changed; put back as it was, it serves.
stop_daemon
start_daemon
reason=$(mapperctl status vm1 --json | json_get .reason)
case $reason in
"its origin '$T_DIR/base.img' changed since the volume was made: modified "*", it was "*"; if its bytes are as they were, 'touch -d @"*" $T_DIR/base.img' says so") ;;
*) fail "after the restart vm1's reason is: $reason" ;;
esac
expect_fail -s 1 -m "^mapperctl: check: .*breach" mapperctl check
cp base.orig base.img
when=$(printf '%s\n' "$reason" | sed -n "s/.*'touch -d @\([0-9.]*\) .*/\1/p")
touch -d "@$when" base.img
mapperctl reload >/dev/null || fail "reload did not bring vm1 back"
cmp <(head -c $((4 * MiB)) "$MNT/vm1") <(cat <(head -c 4096 base.orig) page \
	<(tail -c +$((8192 + 1)) base.orig)) || fail "vm1 does not read the image put back"
mapperctl check >/dev/null || fail "check fails once the image is as it was"

# New origins: one open for writing, a writable block device.
head -c $MiB /dev/urandom >other.img
exec 4<>other.img
expect_fail -m "its origin '$T_DIR/other.img' is open for writing by another program" \
	mapperctl create thin vm2 --pool tp --size 4M --origin other.img
exec 4>&-
head -c $MiB /dev/urandom >disk.img
loop=$(attach_loop disk.img)
expect_fail -m "origin '$loop' is a block device that can be written, which would show through: make it read-only first \('blockdev --setro $loop'\)" \
	mapperctl create thin vm3 --pool tp --size 4M --origin "$loop"
cleanup_fn blockdev --setrw "$loop"	# the flag outlives the loop device's file
blockdev --setro "$loop"
mapperctl create thin vm3 --pool tp --size 4M --origin "$loop" >/dev/null ||
	fail "a read-only block device is refused as an origin"
mapperctl remove vm3 >/dev/null
mapperctl create thin vm2 --pool tp --size 4M --origin other.img >/dev/null ||
	fail "an image nobody writes is refused as an origin"
mapperctl check >/dev/null || fail "check fails at the end"
