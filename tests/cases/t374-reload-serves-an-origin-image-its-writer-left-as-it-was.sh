#!/usr/bin/env bash
# t374-reload-serves-an-origin-image-its-writer-left-as-it-was.sh: a
# program that opens a thin volume's origin image for writing fences it
# (t372), though it may change no byte.  reload counts the fenced volume
# as failed, not "nothing failed"; once nobody has the image open for
# writing and it is as recorded (size and mtime), reload leases it again
# and serves the volume, without a restart.  An image still open for
# writing, or changed, keeps it failed: reload exits 1 naming it and why,
# and the image put back as it was serves it.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq python3

make_pool
add_file_device d0 64M >/dev/null
head -c $((4 * MiB)) /dev/urandom >g.img
cp g.img g.orig
mapperctl create thin-pool tp --size 32M >/dev/null
mapperctl create thin gx --pool tp --size 16M --origin g.img >/dev/null
start_daemon
pid=$(daemon_pid)
ino=$(stat -c %i g.img)
head -c 4096 /dev/urandom >page
dd if=page of="$MNT/gx" bs=4K seek=1 conv=notrunc,fsync status=none
expected() { cat <(head -c 4096 g.orig) page <(tail -c +$((8192 + 1)) g.orig); }
leased() { grep -Eq "LEASE +ACTIVE +READ +$pid [0-9a-f]+:[0-9a-f]+:$ino " /proc/locks; }
fence_reason="its origin '$T_DIR/g.img' was opened for writing or truncated by another program while served"

# fenced MARK: the daemon fenced the image after MARK (log_mark); reads fail.
fenced()
{
	wait_log "thin volume 'gx': $fence_reason" "$1"
	expect_fail -m "Input/output error" dd if="$MNT/gx" of=/dev/null bs=4K skip=100 count=1 status=none
}

# The tester's case: opened for writing, not a byte changed.
mark=$(log_mark)
python3 -c "import os; os.close(os.open('g.img', os.O_RDWR))"	# its open waits for the fence
fenced "$mark"
mapperctl list --json | jq -e '.[] | select(.name == "gx") | .state == "failed"' >/dev/null ||
	fail "list does not show gx failed: $(mapperctl list --json)"
out=$(mapperctl reload) || fail "reload failed though the image is as it was"
[ "$out" = "1 recovered, nothing failed" ] || fail "reload said: $out"
mapperctl status gx --json | jq -e '.state != "failed"' >/dev/null ||
	fail "gx is still failed: $(mapperctl status gx --json)"
cmp <(head -c $((4 * MiB)) "$MNT/gx") <(expected) || fail "gx does not read its image again"
leased || fail "the image is served again without its lease: $(cat /proc/locks)"
mapperctl check >/dev/null || fail "check fails once gx is served again"

# Still open for writing: it stays failed, and says so; closed, it serves.
mark=$(log_mark)
exec 4<>g.img
fenced "$mark"
expect_fail -s 1 -m "^mapperctl: reload: 0 recovered, 1 still failed: volume 'gx': its origin '$T_DIR/g.img' is open for writing by another program" \
	mapperctl reload
mapperctl status gx --json | jq -e '.state == "failed" and (.reason | test("is open for writing"))' >/dev/null ||
	fail "status does not say why gx still fails: $(mapperctl status gx --json)"
exec 4>&-
[ "$(mapperctl reload --json | jq -c .)" = '{"recovered":1,"failed":0}' ] ||
	fail "reload did not serve gx once the writer closed the image"
cmp <(head -c $((4 * MiB)) "$MNT/gx") <(expected) || fail "gx does not read its image again"

# Changed: reload names the change (and counts it, --json too).
mark=$(log_mark)
dd if=/dev/zero of=g.img bs=4K seek=100 count=1 conv=notrunc status=none
fenced "$mark"
expect_fail -s 1 -m "^mapperctl: reload: 0 recovered, 1 still failed: volume 'gx': its origin '$T_DIR/g.img' changed since the volume was made: modified " \
	mapperctl reload
reason=$(cat "$T_DIR/.stderr")
rc=0
mapperctl reload --json >json 2>/dev/null || rc=$?
[ "$rc" -eq 1 ] || fail "reload --json exited $rc with gx still failed"
jq -e '.recovered == 0 and .failed == 1 and (.first_failed | test("changed since the volume was made"))' json >/dev/null ||
	fail "reload --json says: $(cat json)"
expect_fail -m "Input/output error" dd if="$MNT/gx" of=/dev/null bs=4K skip=100 count=1 status=none

# Put back as it was, it serves again.
cp g.orig g.img
when=$(printf '%s\n' "$reason" | sed -n "s/.*'touch -d @\([0-9.]*\) .*/\1/p")
touch -d "@$when" g.img
out=$(mapperctl reload) || fail "reload did not serve gx once its image was put back"
[ "$out" = "1 recovered, nothing failed" ] || fail "reload said: $out"
cmp <(head -c $((4 * MiB)) "$MNT/gx") <(expected) || fail "gx does not read the image put back"
leased || fail "the image put back is served without its lease: $(cat /proc/locks)"
mapperctl check >/dev/null || fail "check fails at the end"
