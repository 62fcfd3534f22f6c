#!/usr/bin/env bash
# t508-sigterm-again-says-how-to-force-the-stop.sh: a daemon that drains
# after SIGTERM, asked again (SIGTERM or SIGINT), serves on and logs one
# line per signal naming the volumes still open and how to stop at once;
# following it (kill -9) fails the open file's I/O rather than hanging it,
# leaves nothing mounted and frees the pool.
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs
requires flock

make_pool
add_file_device d0 64M >/dev/null
mapperctl create linear v --size 8M >/dev/null
head -c $((8 * MiB)) /dev/urandom >data

start_daemon
pid=$(daemon_pid)
dd if=data of="$MNT/v" bs=1M conv=notrunc,fsync status=none
exec 3<"$MNT/v"
kill -TERM "$pid"
wait_log "SIGTERM: .* still serving the open volumes 'v' \(1\)" >/dev/null

advice="still serving the open volumes 'v' \(1\); to stop now, failing their I/O: kill -9 $pid$"
mark=$(log_mark)
kill -TERM "$pid"
wait_log "^$LOG_TIME warning: SIGTERM again: $advice" "$mark"
mark=$(log_mark)
kill -INT "$pid"
wait_log "^$LOG_TIME warning: SIGINT again: $advice" "$mark"
timeout 2 cmp data /dev/fd/3 || fail "the open file read wrong data after a second signal"
pool_locked "$POOL" || fail "the daemon exited on a second signal with v open"
[ "$(grep -c ' again: ' "$POOL/mapperfs.log")" -eq 2 ] ||
	fail "two signals should log two lines: $(grep ' again: ' "$POOL/mapperfs.log")"

# The advice works: the open file fails at once, nothing is left mounted.
kill -9 "$pid"
wait_pid "$pid" || fail "kill -9 did not end the daemon"
rc=0
timeout 5 dd bs=1M count=1 status=none <&3 >/dev/null 2>&1 || rc=$?
[ "$rc" -ne 124 ] || fail "a read of the open file hung after kill -9"
[ "$rc" -ne 0 ] || fail "the open file still read after kill -9"
exec 3<&-
wait_unlocked "$POOL" 5
! mountpoint -q "$MNT" || fail "$MNT is still mounted after kill -9"
