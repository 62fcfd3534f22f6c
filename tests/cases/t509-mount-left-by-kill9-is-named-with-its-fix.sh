#!/usr/bin/env bash
# t509-mount-left-by-kill9-is-named-with-its-fix.sh: after kill -9 of the
# daemon its mount stays behind, dead; starting mapperfs on it again fails
# in one line that says so and names the fix, and after that fix the pool
# serves again with its data.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs

make_pool
add_file_device d0 64M >/dev/null
mapperctl create linear v --size 8M >/dev/null
head -c $((8 * MiB)) /dev/urandom >data

start_daemon
dd if=data of="$MNT/v" bs=1M conv=notrunc,fsync status=none
pid=$(daemon_pid)
kill -9 "$pid"
# Reaped, not only exited (tail --pid, not wait_pid): the kernel drops a
# killed daemon's io_uring rings after its exit, and with them the FUSE
# connection that the next start finds dead.
timeout 30 tail --pid="$pid" -f /dev/null || fail "kill -9 did not end the daemon"

expect_fail -s 1 -m "^mapperfs: error: mount point '$MNT' is a FUSE mount whose daemon is gone \(Transport endpoint is not connected\): unmount it with 'fusermount3 -u $MNT'$" \
	mapperfs --pool "$POOL" "$MNT"
fusermount3 -u "$MNT" || fail "the fix named did not work: fusermount3 -u $MNT failed"
start_daemon
cmp data "$MNT/v" || fail "v read wrong data after the restart"
stop_daemon
