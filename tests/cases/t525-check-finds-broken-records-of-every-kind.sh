#!/usr/bin/env bash
# t525-check-finds-broken-records-of-every-kind.sh: records damaged behind
# the pool's back (extents overlapping, running past a device's end, not
# adding up to the size; a switch path naming a device the pool does not
# have, a switch path placed over another volume's extent) are found by
# check, each once, naming the volume; the daemon keeps those volumes out
# of service and serves the rest.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq sqlite3

make_pool
add_file_device d0 64M >/dev/null
add_file_device d1 64M >/dev/null
mapperctl create linear a --segment d0:0:8M >/dev/null
mapperctl create linear b --segment d0:8M:8M >/dev/null
mapperctl create linear c --segment d0:16M:8M >/dev/null
mapperctl create linear d --segment d0:24M:8M >/dev/null
mapperctl create linear ok --segment d1:0:8M >/dev/null
mapperctl create switch sw --size 4M --region-size 1M --path d1:16M --path d1:20M >/dev/null
mapperctl create linear e --segment d1:32M:8M >/dev/null
mapperctl create switch sw2 --size 4M --region-size 1M --path d1:48M --path d1:52M >/dev/null
mapperctl check >/dev/null || fail "check fails on a healthy pool"
expect_fail -s 1 -m "no volume 'nosuch'" mapperctl check nosuch

sql() { sqlite3 "$POOL/pool.db" "$1"; }
id() { sql "SELECT id FROM volume WHERE name = '$1'"; }
sql "UPDATE extent SET dev_offset = dev_offset - 4194304 WHERE volume = $(id b)"	# into a
sql "UPDATE extent SET dev_offset = 70000000 WHERE volume = $(id c)"		# past d0's end
sql "UPDATE volume SET size = size + 4096 WHERE id = $(id d)"			# size != extents
sql "UPDATE switch_path SET device = 99 WHERE volume = $(id sw) AND idx = 1"	# no such device
sql "UPDATE switch_path SET dev_offset = dev_offset - 16777216 WHERE volume = $(id sw2) AND idx = 1"	# over e

expect_fail -s 1 -m "5 breaches found" mapperctl check
out=$T_DIR/.stdout
for want in "volume 'b': its extent 0 overlaps extent 0 of volume 'a'" \
	    "volume 'c': extent 0 .* is outside the data area of device 'd0'" \
	    "volume 'd': its extents add up to 8388608 bytes, its size is 8392704" \
	    "volume 'sw': path 1 names device 99" \
	    "volume 'sw2': its path 1 overlaps extent 0 of volume 'e' on device 'd1'" \
	    "pool '$POOL': 5 breaches found"; do
	[ "$(grep -c -E "^$want" "$out")" -eq 1 ] || fail "check did not say once: $want"
done
[ "$(wc -l <"$out")" -eq 6 ] || fail "check said more than each fault once: $(cat "$out")"
! grep -q "volume 'ok'" "$out" || fail "check blamed a healthy volume"
# Checked alone, each volume of an overlap is told it, once.
expect_fail -s 1 -m "1 breach found" mapperctl check a
grep -q "^volume 'a': its extent 0 overlaps extent 0 of volume 'b'" "$out" ||
	fail "check a said: $(cat "$out")"
expect_fail -s 1 -m "1 breach found" mapperctl check e
grep -q "^volume 'e': its extent 0 overlaps path 1 of volume 'sw2'" "$out" ||
	fail "check e said: $(cat "$out")"
for v in a b c d sw e sw2; do
	[ "$(mapperctl status "$v" --json | json_get .state)" = failed ] || fail "$v is not failed"
done
start_daemon
for v in a b c d sw e sw2; do
	[ ! -e "$MNT/$v" ] || fail "$v, whose records are broken, is served"
done
[ -e "$MNT/ok" ] || fail "the healthy volume is not served"
dd if=/dev/zero of="$MNT/ok" bs=1M count=1 conv=notrunc,fsync status=none
