#!/usr/bin/env bash
# t862-receive-goes-on-where-a-cut-stream-stopped.sh: a receive whose
# stream stops early keeps what it applied; the same receive again, of
# the whole stream through a pipe (read and checked up to there) or from
# a file (seeked), goes on from there and the result reads as the sent
# volume; a cut incremental stream goes on the same way; so does the rest
# of the stream alone (send --resume-at), only from where the receive
# stopped; another stream received under the name of a cut one starts
# afresh.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

send_pools
start_daemon "$A" "$T_DIR/ma"
start_daemon "$B" "$T_DIR/mb"
MA=$T_DIR/ma MB=$T_DIR/mb

dd if=/dev/urandom of="$MA/v" bs=1M count=6 conv=notrunc,fsync status=none
ca snapshot v s1 --active >/dev/null
dd if=/dev/urandom of="$MA/v" bs=64K seek=7 count=20 conv=notrunc,fsync status=none
ca snapshot v s2 --active >/dev/null
ca send s1 -o full.stream
ca send s2 --since s1 -o inc.stream
kept() { sed -n "s/.*its first \([0-9]*\) bytes are kept.*/\1/p" "$T_DIR/.stderr"; }

head -c $(($(stat -c %s full.stream) * 2 / 3)) full.stream >cut.stream
expect_fail -m "kept in '.recv.b1': the same receive again goes on from there" cb receive b1 --from cut.stream
at=$(kept)
[ "$at" -gt $((3 * MiB)) ] || fail "a cut stream kept only $at bytes"
cat full.stream | cb receive b1 --active >recv.out
grep -q "; went on from byte " recv.out || fail "the receive started over: $(cat recv.out)"
cmp "$MA/s1" "$MB/b1" || fail "b1, received in two goes through a pipe, does not read as s1"

head -c $(($(stat -c %s inc.stream) / 2)) inc.stream >cut.stream
expect_fail -m "kept in '.recv.b2'" cb receive b2 --from cut.stream
cb receive b2 --from inc.stream --active --json >recv.json
[ "$(json_get .resumed_at <recv.json)" -gt 0 ] || fail "the incremental receive started over"
cmp "$MA/s2" "$MB/b2" || fail "b2, received in two goes from a file, does not read as s2"

# Only the rest travels: send --resume-at where the receive stopped.  (b1
# and b2 hold s1 and s2, and one identity has one holder: out of the way.)
cb remove b2 >/dev/null
cb remove b1 >/dev/null
head -c $(($(stat -c %s full.stream) / 3)) full.stream >cut.stream
expect_fail -m "\(send --resume-at [0-9]+\)" cb receive d --from cut.stream
at=$(kept)
ca send s1 --resume-at $((at - 28)) -o wrong.stream
expect_fail -m "the stream goes on from byte $((at - 28)), but the receive stopped at byte $at: send it with --resume-at $at: nothing is applied$" \
	cb receive d --from wrong.stream
cb list --json | jq -e 'any(.[]; .name == ".recv.d")' >/dev/null ||
	fail "the rest of the stream from another place dropped the receive it did not fit"
ca send s1 --resume-at "$at" | tee rest.stream | cb receive d --active >recv.out
rest=$(stat -c %s rest.stream)
[ "$rest" -lt $(($(stat -c %s full.stream) - at + 256)) ] ||
	fail "the rest from byte $at took $rest bytes of a stream of $(stat -c %s full.stream)"
grep -q "; went on from byte $at (" recv.out || fail "the resumed receive said: $(cat recv.out)"
cmp "$MA/s1" "$MB/d" || fail "d, received as a cut stream and its rest, does not read as s1"
expect_fail -m "no receive of it was cut short here" cb receive e --from rest.stream
expect_fail -m "cannot resume at byte 10: that is inside its header" ca send s1 --resume-at 10 -o x.stream
# Past the end: refused before a byte reaches standard output.
end=$(stat -c %s full.stream)
for n in "$end" $((end + 1000)); do
	expect_fail -m "^mapperctl: send: the stream cannot resume at byte $n: that is past its end$" \
		sh -c "'$MAPPERFS_BUILD/bin/mapperctl' --pool '$A' send s1 --resume-at $n >past.out"
	[ ! -s past.out ] || fail "send --resume-at $n wrote $(stat -c %s past.out) bytes before it refused"
done

# A cut stream's staging volume does not take another stream's place.
cb remove d >/dev/null		# it holds s1
head -c $(($(stat -c %s full.stream) / 2)) full.stream >cut.stream
expect_fail -m "kept in '.recv.c'" cb receive c --from cut.stream
ca send s2 | cb receive c --active >recv.out
! grep -q "went on" recv.out || fail "another stream went on from a cut one: $(cat recv.out)"
cmp "$MA/s2" "$MB/c" || fail "c does not read as s2"
[ -z "$(cb list --json | jq -r '.[].name | select(startswith(".recv."))')" ] ||
	fail "a staging volume is left: $(cb list)"
cb check >check.log || { cat check.log >&2; fail "check failed"; }
