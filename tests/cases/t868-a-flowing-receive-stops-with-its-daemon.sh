#!/usr/bin/env bash
# t868-a-flowing-receive-stops-with-its-daemon.sh: SIGTERM to a daemon
# whose receive reads a stream that flows slowly but never stalls (a
# slow ssh) stops the receive between two reads, not at the stream's
# end: the daemon is gone within seconds, the receive fails in one line
# keeping its place, and the same receive again goes on and gives a
# volume that reads as the one sent.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires python3

send_pools
start_daemon "$A" "$T_DIR/ma"
start_daemon "$B" "$T_DIR/mb"

dd if=/dev/urandom of="$T_DIR/ma/v" bs=1M count=24 conv=notrunc,fsync status=none
ca snapshot v s1 --active >/dev/null
ca send s1 -o full.stream

# 8 KiB every 5 ms: about 15 s for the whole stream, never silent for
# the 250 ms a stalled pipe waits before it asks whether to stop.
mkfifo slow.fifo
cb receive b1 --from slow.fifo 2>recv.err &
receiver=$!
mark=$(log_mark)
python3 - full.stream slow.fifo <<'PY' &
import sys, time
src, dst = sys.argv[1], sys.argv[2]
with open(src, "rb") as f, open(dst, "wb", buffering=0) as out:
    try:
        while chunk := f.read(8192):
            out.write(chunk)
            time.sleep(0.005)		# the pace of a slow link
    except BrokenPipeError:
        pass
PY
writer=$!
stop_writer() { kill "$writer" 2>/dev/null || true; }
cleanup_fn stop_writer
wait_log "created thin volume '.recv.b1'" "$mark"
pid=$(daemon_pid "$B")
start=$(date +%s%N)
kill -TERM "$pid"
wait_pid "$pid" || fail "the daemon did not exit within 30 s of SIGTERM"
took_ms=$((($(date +%s%N) - start) / 1000000))
[ "$took_ms" -lt 5000 ] || fail "the daemon took $took_ms ms to stop: the flowing receive held it"
rc=0
wait "$receiver" || rc=$?
[ "$rc" -eq 1 ] || fail "the cut receive exited $rc"
[ "$(wc -l <recv.err)" -eq 1 ] && grep -q "^mapperctl: receive: the daemon is stopping: nothing is applied; its first [0-9]* bytes are kept in '.recv.b1'" recv.err ||
	fail "the cut receive said: $(cat recv.err)"
wait "$writer" || true
fusermount3 -uz "$T_DIR/mb" 2>/dev/null || true

start_daemon "$B" "$T_DIR/mb"
cb receive b1 --from full.stream --active >recv.out
grep -q "went on from byte" recv.out || fail "the receive started over: $(cat recv.out)"
cmp "$T_DIR/ma/s1" "$T_DIR/mb/b1" || fail "b1 does not read as s1"
cb check >check.log || { cat check.log >&2; fail "check failed"; }
