#!/usr/bin/env bash
# t063-daemon-refuses-swapped-or-shrunk-device.sh: if a raw device file is
# missing, was replaced by another file of the same size (no label), or was
# truncated, the daemon still starts and serves everything else, but the
# volume on that device is failed, by name, with the device named in
# status, list and the log; it is not in the mount, and nothing is written
# to the impostor.  `mapperctl reload` meanwhile fails in one line naming
# d1 and why; once the real device is back, it serves the volume again
# with its data, without a restart.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 32M >/dev/null
d1=$(add_file_device d1 16M)
mapperctl create linear v --size 24M --on d1,d0
mapperctl create linear w --size 4M --on d0
start_daemon
head -c $((24 * MiB)) /dev/urandom >data
head -c $((4 * MiB)) /dev/urandom >wdata
dd if=data of="$MNT/v" bs=1M conv=notrunc,fsync status=none
dd if=wdata of="$MNT/w" bs=1M conv=notrunc,fsync status=none
stop_daemon
mv "$d1" d1.real

# failed_on_d1 WHAT: v is failed naming d1, w is served, the mount has no v.
failed_on_d1()
{
	[ "$(mapperctl status v --json | json_get .state)" = failed ] ||
		fail "with $1, v is not failed"
	mapperctl status v --json | json_get .reason | grep -q "'d1'" ||
		fail "with $1, v's reason does not name d1"
	[ "$(mapperctl device list --json | json_get '.[] | select(.name == "d1") | .state')" = failed ] ||
		fail "with $1, device d1 is not failed"
	mapperctl list | grep -q '^v .*failed' || fail "with $1, list does not show v failed"
	[ ! -e "$MNT/v" ] || fail "with $1, v is in the mount"
	cmp wdata "$MNT/w" || fail "with $1, w does not read back"
}

# reload_fails WHY: reload says in one line, and nothing more, that d1 (for
# WHY, a regex) and one more (v) are still failed.
reload_fails()
{
	expect_fail -s 1 -m "^mapperctl: reload: 0 recovered, 2 still failed: raw device 'd1' $1, and 1 more \(see 'mapperctl status'\)$" \
		mapperctl reload
	[ ! -s "$T_DIR/.stdout" ] || fail "reload also wrote: $(cat "$T_DIR/.stdout")"
}

start_daemon
failed_on_d1 "d1 missing"
grep -q "raw device 'd1'.*refusing to use it" "$POOL/mapperfs.log" ||
	fail "the log does not name d1"

# Each impostor is put in place whole (mv): the daemon's monitor looks at
# an absent device every few seconds, and must never catch one half made.
head -c $((16 * MiB)) /dev/urandom >d1.new	# same size, no label
mv d1.new "$d1"
sum=$(sha "$d1")
reload_fails 'carries no mapperfs label'
failed_on_d1 "d1 replaced by an unlabelled file"
[ "$(sha "$d1")" = "$sum" ] || fail "mapperfs wrote to the file that replaced d1"

cp d1.real d1.new				# the right label, but shorter
truncate -s 12M d1.new
mv d1.new "$d1"
sum=$(sha "$d1")
reload_fails 'is smaller than recorded \(12582912 bytes, expected 16777216\)'
failed_on_d1 "d1 truncated to 12M"
[ "$(sha "$d1")" = "$sum" ] || fail "mapperfs wrote to the truncated d1"

# With the real device back, reload serves v again, no restart.
mv -f d1.real "$d1"
mapperctl reload >/dev/null || fail "reload failed with the real d1 back"
[ "$(mapperctl status v --json | json_get .state)" = ok ] || fail "v is still failed"
cmp data "$MNT/v" || fail "data differs after the real d1 came back"
