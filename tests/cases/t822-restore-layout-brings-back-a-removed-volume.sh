#!/usr/bin/env bash
# t822-restore-layout-brings-back-a-removed-volume.sh: before every change
# the pool archives its layout (POOL/archive/SEQ.layout, naming the
# command that followed); `restore-layout` of the entry written before a
# `remove` brings the linear volume back with its extents exactly, its
# tag, and its bytes intact, removes what the entry lacks, keeps thin pools and thin
# volumes, and is refused while the daemon serves the pool, for a thin
# volume that is gone (unless --force), and for a file that is not a
# layout.  `backup` writes the same format, never over the archive.  Old entries are pruned by
# count and age, as lvm.conf's retain_min and retain_days.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 64M >/dev/null
mapperctl create linear keep --size 4M >/dev/null
mapperctl create linear lv --size 8M >/dev/null
mapperctl create thin-pool tp --size 16M >/dev/null
mapperctl create thin tv --pool tp --size 16M >/dev/null
start_daemon
dd if=/dev/urandom of="$MNT/lv" bs=1M count=8 conv=notrunc,fsync status=none
mapperctl set lv --addtag web >/dev/null
sum=$(sha "$MNT/lv")
mapperctl status lv --json | jq -c .segments >"$T_DIR/lv.segs"
mapperctl backup -o "$T_DIR/before.layout" >/dev/null
grep -q '^volume .* name=lv kind=linear' "$T_DIR/before.layout" || fail "backup lacks lv"
mapperctl remove lv >/dev/null
entry=$(grep -l 'command="mapperctl remove lv"' "$POOL"/archive/*.layout) ||
	fail "no archive entry names the remove"
grep -q '^volume .* name=lv kind=linear' "$entry" || fail "the entry before the remove lacks lv"
sum_entry=$(sha "$entry")
expect_fail -s 1 -m "is in the pool's archive" mapperctl backup -o "$entry"
[ "$(sha "$entry")" = "$sum_entry" ] || fail "backup -o wrote over an archive entry"
mapperctl backup | grep -q '^volume .* name=keep kind=linear' || fail "backup to standard output lacks keep"
mapperctl create linear later --size 4M >/dev/null
mapperctl create thin gone --pool tp --size 4M >/dev/null
mapperctl backup -o "$T_DIR/with-gone.layout" >/dev/null
mapperctl remove gone >/dev/null
expect_fail -s 1 -m "in use by mapperfs .*: stop it first" mapperctl restore-layout "$entry"
stop_daemon

echo "not a layout" >"$T_DIR/junk"
expect_fail -s 1 -m "is not a layout: line 1: not a mapperfs layout" mapperctl restore-layout "$T_DIR/junk"
expect_fail -s 1 -m "1 thin volume of the layout cannot be restored" \
	mapperctl restore-layout "$T_DIR/with-gone.layout"
mapperctl restore-layout --dry-run "$entry" >"$T_DIR/plan" || fail "dry run failed"
grep -q "restores linear 'lv'" "$T_DIR/plan" || fail "the plan does not restore lv: $(cat "$T_DIR/plan")"
grep -q "removes linear 'later'" "$T_DIR/plan" || fail "the plan does not remove later: $(cat "$T_DIR/plan")"
mapperctl list --json | jq -e 'map(.name) | index("lv") == null' >/dev/null || fail "the dry run changed the pool"

mapperctl restore-layout "$entry" >/dev/null || fail "restore-layout failed"
start_daemon
mapperctl status lv --json | jq -c .segments | cmp -s - "$T_DIR/lv.segs" ||
	fail "lv's extents differ: $(mapperctl status lv --json | jq -c .segments)"
[ "$(sha "$MNT/lv")" = "$sum" ] || fail "lv's bytes differ after restore-layout"
mapperctl list --json | jq -e '.[] | select(.name == "lv") | .tags == ["web"]' >/dev/null ||
	fail "lv's tag did not come back"
mapperctl list --json | jq -e '(map(.name) | index("later") == null) and
	(map(.name) | index("tv") != null) and (map(.name) | index("keep") != null)' >/dev/null ||
	fail "after the restore: $(mapperctl list --json | jq -c 'map(.name)')"
stop_daemon

# The restore archived the layout before it: restoring that undoes it.
undo=$(grep -l 'command="mapperctl restore-layout ' "$POOL"/archive/*.layout) ||
	fail "restore-layout archived nothing"
mapperctl restore-layout "$undo" >/dev/null || fail "undoing the restore failed"
mapperctl list --json | jq -e '(map(.name) | index("later") != null) and
	(map(.name) | index("lv") == null)' >/dev/null || fail "the undo did not undo"

# Retention: the newest 10 stay whatever their age; older ones go after 30 days.
touch -d '40 days ago' "$POOL"/archive/*.layout
n=$(ls "$POOL"/archive/*.layout | wc -l)
[ "$n" -ge 11 ] || fail "only $n archive entries to prune"
mapperctl create linear one-more --size 4M >/dev/null
n=$(ls "$POOL"/archive/*.layout | wc -l)
[ "$n" -eq 10 ] || fail "$n archive entries after pruning, expected 10"
