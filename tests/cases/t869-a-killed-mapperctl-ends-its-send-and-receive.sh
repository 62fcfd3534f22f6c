#!/usr/bin/env bash
# t869-a-killed-mapperctl-ends-its-send-and-receive.sh: the daemon runs a
# send or a receive for the mapperctl that asked; when that mapperctl is
# killed while the stream waits on its pipe, the stream ends as a local
# command's would, instead of running on for nobody: the daemon says so
# in its log, a receive keeps what it applied (the same receive goes on
# from there), and a send closes the stream, so its reader sees the end.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs

send_pools
start_daemon "$A" "$T_DIR/ma"
start_daemon "$B" "$T_DIR/mb"

dd if=/dev/urandom of="$T_DIR/ma/v" bs=1M count=6 conv=notrunc,fsync status=none
ca snapshot v s1 --active >/dev/null
ca send s1 -o full.stream

# A receive from a FIFO whose writer sends half the stream and stays.
mkfifo half.fifo
# (exec: $! is mapperctl itself, not a shell that waits for it)
(exec "$MAPPERFS_BUILD/bin/mapperctl" --pool "$B" receive b1 --from half.fifo 2>/dev/null) &
receiver=$!
exec 7>half.fifo
mark=$(log_mark)
head -c $(($(stat -c %s full.stream) / 2)) full.stream >&7
wait_log "created thin volume '.recv.b1'" "$mark"
kill -9 "$receiver"
wait "$receiver" 2>/dev/null || true
wait_log "receive of 'b1': its caller went away \(mapperctl was killed\): nothing is applied; its first [0-9]+ bytes are kept in '.recv.b1'" "$mark"
exec 7>&-
cb list --json | jq -e '[.[].name] | index("b1") == null' >/dev/null ||
	fail "the killed receive made b1: $(cb list --json | jq -c '[.[].name]')"
cb receive b1 --from full.stream --active >recv.out
grep -q "went on from byte" recv.out || fail "the receive started over: $(cat recv.out)"
cmp "$T_DIR/ma/s1" "$T_DIR/mb/b1" || fail "b1 does not read as s1"

# A send into a FIFO whose reader read 8 bytes and then waits.
mkfifo out.fifo
exec 8<>out.fifo
mark=$(POOL=$A log_mark)
(exec "$MAPPERFS_BUILD/bin/mapperctl" --pool "$A" send s1 -o out.fifo 2>/dev/null) &
sender=$!
head -c 8 <&8 >/dev/null
kill -9 "$sender"
wait "$sender" 2>/dev/null || true
POOL=$A wait_log "send of 's1': its caller went away \(mapperctl was killed\): the stream is cut short after [0-9]+ bytes" "$mark"
exec 8<&-
ca check >check.log || { cat check.log >&2; fail "check of A failed"; }
cb check >check.log || { cat check.log >&2; fail "check of B failed"; }
