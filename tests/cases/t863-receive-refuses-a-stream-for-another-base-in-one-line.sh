#!/usr/bin/env bash
# t863-receive-refuses-a-stream-for-another-base-in-one-line.sh: an
# incremental stream whose base this pool never received is refused in
# one line naming the base's identity and its name on the sender, and
# changes nothing; so are a name taken, a volume that is open, a send
# since itself or since a volume that is not there, a send to a terminal
# and a receive from one, and a full stream into a pool of several thin
# pools without --pool.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq script

send_pools 64 32
start_daemon "$A" "$T_DIR/ma"
start_daemon "$B" "$T_DIR/mb"

dd if=/dev/urandom of="$T_DIR/ma/v" bs=1M count=2 conv=notrunc,fsync status=none
ca snapshot v s1 >/dev/null
dd if=/dev/urandom of="$T_DIR/ma/v" bs=64K count=1 conv=notrunc,fsync status=none
ca snapshot v s2 >/dev/null
ca snapshot v s3 >/dev/null
ca send s2 --since s1 -o inc.stream
names() { cb list --json | jq -c '[.[].name] | sort'; }
before=$(names)
expect_fail -s 1 -m "^mapperctl: receive: the stream's base [0-9a-f]{8}-[0-9a-f-]{27} \(snapshot 's1' of the sender\) is not in this pool$" \
	cb receive b2 --from inc.stream
[ "$(names)" = "$before" ] || fail "a refused stream left $(names)"

# With s1 received, a stream since s2 still has no base here.
ca send s1 | cb receive b1 >/dev/null
ca send s3 --since s2 -o inc3.stream
expect_fail -m "the stream's base .* \(snapshot 's2' of the sender\) is not in this pool$" \
	cb receive b3 --from inc3.stream
cb receive b2 --from inc.stream >/dev/null
cb receive b3 --from inc3.stream >/dev/null

expect_fail -m "volume 'b1' exists" cb receive b1 --from inc.stream
expect_fail -m "invalid name '-x'" cb receive --from inc.stream -- -x
expect_fail -m "invalid name '.recv.b9'" cb receive .recv.b9 --from inc.stream
exec 3<"$T_DIR/ma/v"
expect_fail -m "volume 'v' is open: send reads a volume nobody writes" ca send v -o x.stream
exec 3<&-
[ ! -e x.stream ] || fail "a refused send left its output file"
expect_fail -m "'s1' cannot be sent since itself" ca send s1 --since s1 -o x.stream
# A terminal gets no binary (script gives the command one).
! script -qec "$MAPPERFS_BUILD/bin/mapperctl --pool $A send s1" /dev/null >tty.out ||
	fail "send wrote a stream to a terminal"
[ "$(tr -d '\r' <tty.out)" = "mapperctl: send: refusing to write the stream to a terminal: pipe it (| ssh HOST mapperctl receive NAME) or give -o FILE" ] ||
	fail "send to a terminal said: $(cat tty.out)"
! script -qec "$MAPPERFS_BUILD/bin/mapperctl --pool $B receive t1" /dev/null >tty.out ||
	fail "receive read a stream from a terminal"
[ "$(tr -d '\r' <tty.out)" = "mapperctl: receive: refusing to read the stream from a terminal: pipe it (mapperctl send VOLUME | ...) or give --from FILE" ] ||
	fail "receive from a terminal said: $(cat tty.out)"
expect_fail -m "no volume 'nope'" ca send s1 --since nope -o x.stream
expect_fail -m "volume 'tp' is a thin pool, not a thin volume" ca send tp -o x.stream
mapperctl --pool "$B" create thin-pool tp2 --size 16M >/dev/null
cb remove b1 >/dev/null		# it holds s1: one identity has one holder
ca send s1 -o full.stream
expect_fail -m "this pool has 2 thin pools: name one with --pool" cb receive c1 --from full.stream
ca send s1 | cb receive c1 --pool tp2 >/dev/null
[ "$(cb list --json | json_get '.[] | select(.name == "c1") | .pool')" = tp2 ] ||
	fail "--pool did not choose the thin pool"
# An incremental stream lands where its base is: --pool naming another is refused.
expect_fail -m "^mapperctl: receive: the stream is incremental: it lands in thin pool 'tp2', where its base 'c1' is, not in 'tp' \(leave out --pool\)$" \
	cb receive c2 --from inc.stream --pool tp
expect_fail -m "no volume 'nope'" cb receive c2 --from inc.stream --pool nope
# A path to --pool after the command is the pool directory put there.
expect_fail -s 2 -m "^mapperctl: receive: --pool $B: after the command, --pool names a thin pool \(a volume\), not a path; the pool directory goes before it: mapperctl --pool DIR receive \.\.\.$" \
	cb receive c3 --from full.stream --pool "$B"
expect_fail -m "^mapperctl: receive: no pool at '$T_DIR/nowhere' \(run 'mapperctl init', or name the pool with --pool DIR before the command, or MAPPERFS_POOL; a --pool after the command names a thin pool\)$" \
	env MAPPERFS_POOL="$T_DIR/nowhere" "$MAPPERFS_BUILD/bin/mapperctl" receive c3 --from full.stream --pool "$B"
cb check >check.log || { cat check.log >&2; fail "check failed"; }
