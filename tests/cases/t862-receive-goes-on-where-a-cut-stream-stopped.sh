#!/usr/bin/env bash
# t862-receive-goes-on-where-a-cut-stream-stopped.sh: a receive whose
# stream stops early keeps what it applied; the same receive again, of
# the whole stream through a pipe (read and checked up to there) or from
# a file (seeked), goes on from there and the result reads as the sent
# volume; a cut incremental stream goes on the same way; another stream
# received under the name of a cut one starts afresh.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

A=$T_DIR/a B=$T_DIR/b
make_pool "$A"
add_file_device d0 96M >/dev/null
mapperctl create thin-pool tp --size 64M >/dev/null
mapperctl create thin v --pool tp --size 32M >/dev/null
make_pool "$B"
add_file_device e0 96M >/dev/null
mapperctl create thin-pool tp --size 64M >/dev/null
ca() { mapperctl --pool "$A" "$@"; }
cb() { mapperctl --pool "$B" "$@"; }
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

# A cut stream's staging volume does not take another stream's place.
head -c $(($(stat -c %s full.stream) / 2)) full.stream >cut.stream
expect_fail -m "kept in '.recv.c'" cb receive c --from cut.stream
ca send s2 | cb receive c --active >recv.out
! grep -q "went on" recv.out || fail "another stream went on from a cut one: $(cat recv.out)"
cmp "$MA/s2" "$MB/c" || fail "c does not read as s2"
[ -z "$(cb list --json | jq -r '.[].name | select(startswith(".recv."))')" ] ||
	fail "a staging volume is left: $(cb list)"
cb check >check.log || { cat check.log >&2; fail "check failed"; }
