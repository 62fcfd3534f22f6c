#!/usr/bin/env bash
# t860-send-receive-full-then-incremental-are-byte-identical.sh: a snapshot
# sent whole into a second pool (a second daemon) reads there as it does
# here, holes as holes; what changed since, sent with --since (written
# blocks and a discarded one), makes a snapshot there that reads as the
# new one does, from a stream only as large as the blocks that changed;
# and `send | receive` through a pipe does the same as through a file.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

send_pools 128
BS=65536
start_daemon "$A" "$T_DIR/ma"
start_daemon "$B" "$T_DIR/mb"
MA=$T_DIR/ma MB=$T_DIR/mb

mapped() { "$1" list --json | json_get ".[] | select(.name == \"$2\") | .mapped_bytes"; }
same() {	# same NAME_A NAME_B: the two volumes read alike and map alike
	ca activate "$1" >/dev/null
	cb activate "$2" >/dev/null
	cmp "$MA/$1" "$MB/$2" || fail "'$2' received does not read as '$1' sent"
	[ "$(mapped ca "$1")" -eq "$(mapped cb "$2")" ] ||
		fail "'$2' maps $(mapped cb "$2") bytes, '$1' $(mapped ca "$1"): holes were not kept holes"
}

# Data at the start, in the middle, at the end; holes between.
dd if=/dev/urandom of="$MA/v" bs=1M count=8 conv=notrunc status=none
dd if=/dev/urandom of="$MA/v" bs=64K seek=600 count=5 conv=notrunc status=none
dd if=/dev/urandom of="$MA/v" bs=64K seek=1023 count=1 conv=notrunc,fsync status=none
ca snapshot v s1 >/dev/null

ca send s1 -o full.stream
cb receive b1 --from full.stream >recv.out
grep -q "^received 'b1': .* records: 8.38 MiB of data, 0 B of holes$" recv.out ||
	fail "receive said: $(cat recv.out)"
[ "$(cb list --json | json_get '.[] | select(.name == "b1") | .read_only')" = true ] ||
	fail "a received volume is not read-only"
same s1 b1
[ "$(stat -c %s full.stream)" -lt $((8 * MiB + 6 * BS + 4096)) ] ||
	fail "a full stream of 8.38 MiB of data took $(stat -c %s full.stream) bytes"

# Three blocks written, one that s1 maps discarded: four blocks changed.
dd if=/dev/urandom of="$MA/v" bs=64K seek=3 count=1 conv=notrunc status=none
dd if=/dev/urandom of="$MA/v" bs=64K seek=601 count=1 conv=notrunc status=none
dd if=/dev/urandom of="$MA/v" bs=64K seek=900 count=1 conv=notrunc status=none
fallocate -p -o $((1023 * BS)) -l $BS "$MA/v"
sync "$MA/v"
ca snapshot v s2 >/dev/null
ca send s2 --since s1 -o inc.stream --verbose 2>send.err
grep -q "^mapperctl: send: sent 's2' since 's1': .* 4 records: 192.00 KiB of data, 64.00 KiB of holes$" send.err ||
	fail "send --verbose said: $(cat send.err)"
size=$(stat -c %s inc.stream)
[ "$size" -lt $((3 * BS + 1024)) ] ||
	fail "an incremental stream of 3 changed blocks and a hole took $size bytes"
log "incremental stream of 3 changed blocks and 1 discarded: $size bytes"
cb receive b2 --from inc.stream --json >recv.json
[ "$(json_get .snapshot_of <recv.json)" = b1 ] || fail "b2 is not a snapshot of b1: $(cat recv.json)"
[ "$(cb list --json | json_get '.[] | select(.name == "b2") | .origin')" = b1 ] ||
	fail "list does not show b2 as a snapshot of b1"
same s2 b2

# Through a pipe, as through ssh.
dd if=/dev/urandom of="$MA/v" bs=64K seek=20 count=2 conv=notrunc,fsync status=none
ca snapshot v s3 >/dev/null
ca send s3 --since s2 | cb receive b3 >recv.out || fail "send | receive failed"
grep -q "^received 'b3' (a snapshot of 'b2'): " recv.out || fail "receive said: $(cat recv.out)"
same s3 b3
# One identity has one holder: s3 again is refused, a copy is a snapshot.
ca send s3 -o full3.stream
expect_fail -m "^mapperctl: receive: volume 'b3' holds the stream's snapshot already \('s3' of the sender, identity [0-9a-f-]+\): a copy of it is 'mapperctl snapshot b3 c3'$" \
	cb receive c3 --from full3.stream
# A full stream through a pipe too, into a volume of its own.
ca snapshot v s4 --active >/dev/null
ca send s4 | cb receive c4 --active >/dev/null
cmp "$MA/s4" "$MB/c4" || fail "a full stream through a pipe does not read as its volume"

ca check >check.log || { cat check.log >&2; fail "check of the sending pool failed"; }
cb check >check.log || { cat check.log >&2; fail "check of the receiving pool failed"; }
