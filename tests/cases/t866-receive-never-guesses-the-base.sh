#!/usr/bin/env bash
# t866-receive-never-guesses-the-base.sh: one identity has one holder in
# a pool.  A stream whose snapshot the pool holds already is refused (a
# copy is a snapshot); a received volume made writable or rolled back
# forgets the identity it came with, so no incremental stream lands on
# it; status
# shows a volume's identity and what it was received as; and in a pool
# that holds one identity twice (as older versions allowed), the copy
# named as the sender's base is taken, and if none is, the receive is
# refused naming the candidates.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq
requires sqlite3

send_pools
MA=$T_DIR/ma MB=$T_DIR/mb
start_daemon "$A" "$MA"
start_daemon "$B" "$MB"
identity() { "$1" status "$2" --json | json_get .identity; }

dd if=/dev/urandom of="$MA/v" bs=64K count=32 conv=notrunc,fsync status=none
ca snapshot v s1 --active >/dev/null
dd if=/dev/urandom of="$MA/v" bs=64K seek=4 count=2 conv=notrunc,fsync status=none
ca snapshot v s2 --active >/dev/null
ca send s1 -o full.stream
ca send s2 --since s1 -o inc.stream

cb receive s1 --from full.stream >/dev/null
[ "$(identity cb s1)" = "$(identity ca s1)" ] || fail "status shows another identity on each side"
[ "$(cb status s1 --json | json_get .received_from)" = s1 ] || fail "status does not say what s1 came as"
expect_fail -m "^mapperctl: receive: volume 's1' holds the stream's snapshot already \('s1' of the sender, identity $(identity ca s1)\): a copy of it is 'mapperctl snapshot s1 dup'$" \
	cb receive dup --from full.stream
[ "$(cb list --json | jq -r '.[].name' | grep -c .)" -eq 2 ] || fail "a refused receive left a volume: $(cb list)"

# Writable, written: no longer the sender's s1.
cb set s1 --read-write >/dev/null
cb activate s1 >/dev/null
dd if=/dev/zero of="$MB/s1" bs=64K count=1 conv=notrunc,fsync status=none
cb status s1 --json | jq -e 'has("received_from") | not' >/dev/null ||
	fail "a volume made writable still says it was received"
[ "$(identity cb s1)" != "$(identity ca s1)" ] || fail "a volume made writable kept the sender's identity"
cb set s1 --read-only >/dev/null	# read-only again does not bring it back
expect_fail -m "the stream's base $(identity ca s1) \(snapshot 's1' of the sender\) is not in this pool" \
	cb receive b2 --from inc.stream

# A pool holding one identity twice: the copy named as the base is taken.
cb receive r1 --from full.stream >/dev/null
cb snapshot r1 s1x >/dev/null
cb snapshot r1 s1y >/dev/null
sql() { sqlite3 "$B/pool.db" "$1"; }
twin() {
	sql "INSERT INTO thin_received (volume, source_uuid, source_name)
	     SELECT v.id, r.source_uuid, r.source_name FROM volume v, thin_received r
	     WHERE v.name = '$1' AND r.volume = (SELECT id FROM volume WHERE name = 'r1');"
}
twin s1x
twin s1y
expect_fail -m "^mapperctl: receive: the stream's base $(identity ca s1) \(snapshot 's1' of the sender\) is held by 3 volumes here, 'r1', 's1x', 's1y': remove the copies that are not the base, or rename the base 's1'$" \
	cb receive b2 --from inc.stream
cb list --json | jq -e 'all(.[]; .name != "b2" and (.name | startswith(".recv.") | not))' >/dev/null ||
	fail "a refused receive left a volume: $(cb list)"
cb remove s1 >/dev/null
cb rename r1 s1 >/dev/null
cb receive b2 --from inc.stream --active >recv.out
grep -q "^received 'b2' (a snapshot of 's1'): .* of stream, 1 record: 128.00 KiB of data, 0 B of holes$" recv.out || fail "receive said: $(cat recv.out)"
cmp "$MA/s2" "$MB/b2" || fail "b2 does not read as s2"

# Rolled back, b2 holds another snapshot's blocks: no longer the sender's s2.
cb snapshot s1 back >/dev/null
cb rollback b2 back >/dev/null
cb status b2 --json | jq -e 'has("received_from") | not' >/dev/null ||
	fail "a volume rolled back still says it was received"
[ "$(identity cb b2)" != "$(identity ca s2)" ] || fail "a volume rolled back kept the sender's identity"
cb check >check.log || { cat check.log >&2; fail "check failed"; }
