#!/usr/bin/env bash
# t830-striped-volume-spreads-chunks-over-its-devices.sh: a volume made
# with --stripes 3 --stripe-size 64K puts chunk c of what is written
# through the mount on stripe c mod 3, at (c div 3) x 64 KiB into that
# stripe's device range, which the raw device files show byte for byte;
# extend grows every stripe on its own device and moves no chunk; the
# bytes, the stripes and the layout archive survive a daemon restart;
# list, status and check say what it is; a truncate that grows it gets
# whole rows exactly, or fails (EINVAL), never a size rounded up.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq python3 cmp

make_pool
add_file_device d0 64M >/dev/null
add_file_device d1 64M >/dev/null
add_file_device d2 64M >/dev/null
add_file_device d3 64M >/dev/null
mapperctl create linear pad --size 3M --on d1 >/dev/null	# stripes need not start at 0
mapperctl create linear sv --size 12160K --stripes 3 --stripe-size 64K --on d1,d2,d3 >out.txt
grep -q "created linear volume 'sv' (12.00 MiB, 3 stripes of 64.00 KiB, the size rounded up" out.txt ||
	fail "create says: $(cat out.txt)"
[ "$(mapperctl list -o name,stripes,stripe_size --json | jq -c '.[] | select(.name == "sv")')" = \
	'{"name":"sv","stripes":3,"stripe_size":65536}' ] || fail "list: $(mapperctl list -o name,stripes,stripe_size --json)"
[ "$(mapperctl status sv --json | jq -c '[.segments[] | [.stripe, .device]]')" = \
	'[[0,"d1"],[1,"d2"],[2,"d3"]]' ] || fail "status segments: $(mapperctl status sv --json | jq -c .segments)"

start_daemon
head -c $((12 * MiB)) /dev/urandom >data
dd if=data of="$MNT/sv" bs=1M conv=notrunc,fsync status=none
cmp data "$MNT/sv" || fail "the volume does not read back what was written"
stripes_from_devices sv >raw
cmp data raw || fail "the raw devices do not hold chunk c on stripe c mod 3"
# A request inside one chunk, and one across many, at odd offsets.
head -c 5000 /dev/urandom >small
dd if=small of="$MNT/sv" bs=5000 seek=1 oflag=seek_bytes conv=notrunc,fsync status=none
dd if=small of=data bs=5000 seek=1 oflag=seek_bytes conv=notrunc status=none
head -c $((700 * 1024 + 512)) /dev/urandom >big
dd if=big of="$MNT/sv" bs=1M seek=$((3 * MiB + 4096)) oflag=seek_bytes conv=notrunc,fsync status=none
dd if=big of=data bs=1M seek=$((3 * MiB + 4096)) oflag=seek_bytes conv=notrunc status=none
stripes_from_devices sv | cmp data - || fail "odd-sized writes landed in the wrong places"

# Extend: each stripe grows by 2 MiB on its own device; nothing moves.
mapperctl extend sv --size 18M >out.txt
grep -qx "extended volume 'sv' to 18.00 MiB" out.txt || fail "extend says: $(cat out.txt)"
[ "$(size_of "$MNT/sv")" -eq $((18 * MiB)) ] || fail "the file is $(size_of "$MNT/sv") bytes after extend"
mapperctl status sv --json | jq -e '[.segments[] | select(.stripe == 0) | .device] | unique == ["d1"]' \
	>/dev/null || fail "stripe 0 left its device: $(mapperctl status sv --json | jq -c .segments)"
for k in 0 1 2; do
	[ "$(mapperctl status sv --json | jq "[.segments[] | select(.stripe == $k) | .length] | add")" \
		-eq $((6 * MiB)) ] || fail "stripe $k does not hold 6 MiB"
done
head -c $((6 * MiB)) /dev/urandom >>data
dd if=data of="$MNT/sv" bs=1M skip=12 seek=12 conv=notrunc,fsync status=none
cmp data "$MNT/sv" || fail "the extended volume does not read back"
stripes_from_devices sv | cmp data - || fail "after extend, chunks are not where the stripes say"
mapperctl check sv >/dev/null || fail "check: $(mapperctl check sv)"
expect_fail -s 1 -m "--on does not apply to striped volume 'sv'" mapperctl extend sv --size 24M --on d0

# A restart: the same volume, the same bytes; the archive keeps the row.
stop_daemon
grep -q "^stripe volume=[0-9]* stripes=3 stripe_size=65536$" \
	"$(ls -1 "$POOL"/archive/*.layout | sort -V | tail -1)" ||
	fail "the layout archive has no stripe record"
mapperctl check >/dev/null || fail "check fails offline"
start_daemon
cmp data "$MNT/sv" || fail "the volume reads otherwise after a restart"
[ "$(mapperctl list -o name,stripes --json | jq -c '.[] | select(.name == "sv") | .stripes')" = 3 ] ||
	fail "the stripes are gone after a restart"

# Refusals, in one line each, before anything changes.
expect_fail -s 1 -m "power of two" mapperctl create linear x --size 4M --stripes 2 --stripe-size 48K
expect_fail -s 1 -m "--stripes .*2\.\.16" mapperctl create linear x --size 4M --stripes 1
expect_fail -s 1 -m "need 4 devices with that much free; 1 of the 4 open devices have it" \
	mapperctl create linear x --size 240M --stripes 4
expect_fail -s 2 -m "--stripes and --stripe-size go with --size" \
	mapperctl create linear x --segment d0:0:1M --stripes 2

# A truncate gets the size it asks for, or fails: a growth that is not
# whole rows (3 x 64 KiB) is EINVAL, logged with the volume and the row,
# never rounded up as extend rounds; whole rows grow it to exactly that.
mark=$(log_mark)
expect_fail -m "Invalid argument" truncate -s $((18 * MiB + 64 * 1024)) "$MNT/sv"
[ "$(size_of "$MNT/sv")" -eq $((18 * MiB)) ] || fail "a refused truncate made sv $(size_of "$MNT/sv") bytes"
wait_log "info: volume 'sv' is striped: a truncate takes it to whole rows of 192.00 KiB \(3 stripes x 64.00 KiB\) only \(truncate refused\)$" "$mark"
truncate -s $((18 * MiB + 192 * 1024)) "$MNT/sv" || fail "a truncate to whole rows failed"
[ "$(size_of "$MNT/sv")" -eq $((18 * MiB + 192 * 1024)) ] || fail "a truncate to whole rows made sv $(size_of "$MNT/sv") bytes"
[ "$(mapperctl status sv --json | json_get .size)" -eq $((18 * MiB + 192 * 1024)) ] ||
	fail "the pool does not know sv grew"
cmp -n $((18 * MiB)) data "$MNT/sv" || fail "a truncate changed sv's bytes"
mapperctl check sv >/dev/null || fail "check after the truncates: $(mapperctl check sv)"
