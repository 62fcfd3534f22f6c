#!/usr/bin/env bash
# t865-receive-goes-on-after-the-daemon-was-killed.sh: the daemon killed
# (SIGKILL) in the middle of a receive leaves no NAME, only the staging
# volume, and check passes; once it serves again the same receive goes on
# from the place it recorded, and the result reads as the sent volume.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

send_pools
start_daemon "$A" "$T_DIR/ma"
start_daemon "$B" "$T_DIR/mb"

dd if=/dev/urandom of="$T_DIR/ma/v" bs=1M count=8 conv=notrunc,fsync status=none
ca snapshot v s1 --active >/dev/null
ca send s1 -o full.stream

mkfifo half.fifo
cb receive b1 --from half.fifo 2>/dev/null &
receiver=$!
exec 7>half.fifo
mark=$(log_mark)
head -c $(($(stat -c %s full.stream) / 2)) full.stream >&7
wait_log "created thin volume '.recv.b1'" "$mark"
crash_daemon "$receiver"
exec 7>&-
cb list --json | jq -e '[.[].name] | index("b1") == null and index(".recv.b1") != null' >/dev/null ||
	fail "after the kill the pool has $(cb list --json | jq -c '[.[].name]')"
cb check >check.log || { cat check.log >&2; fail "check failed after the kill"; }

start_daemon "$B" "$T_DIR/mb"
cb receive b1 --from full.stream --active >recv.out
grep -q "; went on from byte " recv.out || fail "the receive started over: $(cat recv.out)"
cmp "$T_DIR/ma/s1" "$T_DIR/mb/b1" || fail "b1, received across a kill, does not read as s1"
cb check >check.log || { cat check.log >&2; fail "check failed"; }
