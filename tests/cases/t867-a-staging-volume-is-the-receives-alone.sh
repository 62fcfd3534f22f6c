#!/usr/bin/env bash
# t867-a-staging-volume-is-the-receives-alone.sh: a receive's staging
# volume (.recv.NAME), under way or cut short, is refused by every admin
# command in one line that says what it is and how to go on or drop it,
# so nothing but the stream writes it and nothing half applied becomes a
# volume; status and check still read it.  An --abort while the receive
# runs says it is under way; once cut short, --abort drops it.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

send_pools
MA=$T_DIR/ma MB=$T_DIR/mb
start_daemon "$A" "$MA"
start_daemon "$B" "$MB"

dd if=/dev/urandom of="$MA/v" bs=64K count=64 conv=notrunc,fsync status=none
ca snapshot v s1 --active >/dev/null
ca send s1 -o full.stream
cb create thin other --pool tp --size 4M >/dev/null
head -c $(($(stat -c %s full.stream) / 2)) full.stream >cut.stream
expect_fail -m "kept in '.recv.y1'" cb receive y1 --from cut.stream

said="^mapperctl: [a-z-]+: '.recv.y1' is a receive under way or cut short: run the receive again to go on, or 'mapperctl receive y1 --abort'$"
expect_fail -m "$said" cb activate .recv.y1
expect_fail -m "$said" cb deactivate .recv.y1
expect_fail -m "$said" cb rename .recv.y1 y1half
expect_fail -m "$said" cb remove .recv.y1
expect_fail -m "$said" cb set .recv.y1 --read-only
expect_fail -m "$said" cb snapshot .recv.y1 snap
expect_fail -m "$said" cb clone .recv.y1 other
expect_fail -m "$said" cb clone other .recv.y1
expect_fail -m "$said" cb extend .recv.y1 --size +1M
expect_fail -m "$said" cb reduce .recv.y1 --size 1M --yes
expect_fail -m "$said" cb export .recv.y1 --unix "$T_DIR/y1.sock"
expect_fail -m "$said" cb send .recv.y1 -o x.stream
expect_fail -m "$said" cb diff .recv.y1 other
[ ! -e "$MB/.recv.y1" ] || fail "the staging volume is a file in the mount"
[ "$(cb status .recv.y1 --json | json_get .active)" = false ] || fail "the staging volume is active"
cb check .recv.y1 >check.log || { cat check.log >&2; fail "check of the staging volume failed"; }
cb list --json | jq -e '[.[].name] | index("y1half") == null and index("snap") == null' >/dev/null ||
	fail "a refused command made a volume: $(cb list)"
cb receive y1 --from full.stream --active >recv.out
grep -q "; went on from byte " recv.out || fail "the receive started over: $(cat recv.out)"
cmp "$MA/s1" "$MB/y1" || fail "y1 does not read as s1"

# --abort while the receive runs: under way, not "busy".
ca snapshot v s2 >/dev/null
ca send s2 -o full2.stream
mkfifo half.fifo
cb receive y2 --from half.fifo 2>receiver.err &
receiver=$!
exec 7>half.fifo
mark=$(log_mark)
head -c 100000 full2.stream >&7
wait_log "created thin volume '.recv.y2'" "$mark"
expect_fail -m "^mapperctl: receive: a receive of 'y2' is under way: stop its sender, then abort it$" \
	cb receive y2 --abort
exec 7>&-
! wait "$receiver" || fail "a receive of half a stream succeeded"
grep -q "kept in '.recv.y2'" receiver.err || fail "the cut receive said: $(cat receiver.err)"
cb receive y2 --abort
cb list --json | jq -e 'all(.[]; .name | startswith(".recv.") | not)' >/dev/null ||
	fail "--abort left a staging volume: $(cb list)"
cb check >check.log || { cat check.log >&2; fail "check failed"; }
