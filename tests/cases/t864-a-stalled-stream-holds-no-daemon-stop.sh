#!/usr/bin/env bash
# t864-a-stalled-stream-holds-no-daemon-stop.sh: a receive whose writer
# stalls (an ssh that hangs) and a send whose reader stalls do not hold
# their daemons when these stop: each command fails in one line, the
# receive keeping what it applied, which the same receive goes on from
# once the daemon serves again.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs

send_pools
start_daemon "$A" "$T_DIR/ma"
start_daemon "$B" "$T_DIR/mb"

dd if=/dev/urandom of="$T_DIR/ma/v" bs=1M count=6 conv=notrunc,fsync status=none
ca snapshot v s1 --active >/dev/null
ca send s1 -o full.stream

# A receive from a FIFO whose writer sends half the stream and then hangs.
mkfifo half.fifo
cb receive b1 --from half.fifo 2>recv.err &
receiver=$!
exec 7>half.fifo
mark=$(log_mark)
head -c $(($(stat -c %s full.stream) / 2)) full.stream >&7
wait_log "created thin volume '.recv.b1'" "$mark"
stop_daemon "$T_DIR/mb" "$B"
rc=0
wait "$receiver" || rc=$?
exec 7>&-
[ "$rc" -eq 1 ] || fail "the stalled receive exited $rc"
[ "$(wc -l <recv.err)" -eq 1 ] && grep -q "^mapperctl: receive: the daemon is stopping: nothing is applied; its first [0-9]* bytes are kept in '.recv.b1'" recv.err ||
	fail "the stalled receive said: $(cat recv.err)"
start_daemon "$B" "$T_DIR/mb"
cb receive b1 --from full.stream --active >recv.out
grep -q "went on from byte" recv.out || fail "the receive started over: $(cat recv.out)"
cmp "$T_DIR/ma/s1" "$T_DIR/mb/b1" || fail "b1 does not read as s1"

# A send into a FIFO whose reader read 8 bytes and then hangs.
mkfifo out.fifo
exec 8<>out.fifo
ca send s1 -o out.fifo 2>send.err &
sender=$!
head -c 8 <&8 >/dev/null
stop_daemon "$T_DIR/ma" "$A"
rc=0
wait "$sender" || rc=$?
exec 8<&-
[ "$rc" -eq 1 ] || fail "the stalled send exited $rc"
grep -q "^mapperctl: send: the daemon is stopping: the stream is cut short after [0-9]* bytes$" send.err ||
	fail "the stalled send said: $(cat send.err)"
cb check >check.log || { cat check.log >&2; fail "check failed"; }
