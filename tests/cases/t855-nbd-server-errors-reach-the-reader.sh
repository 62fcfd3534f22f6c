#!/usr/bin/env bash
# t855-nbd-server-errors-reach-the-reader.sh: an NBD server that answers
# every request with an error (nbdkit's error filter) on a live
# connection: each read and write of the volume fails at once with EIO,
# not after the reconnect timeout (the connection is fine: the device
# failed the sector), the daemon keeps serving, status counts the failed
# requests, and when the server answers again the volume reads what it
# held before; the writes that failed changed nothing.
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs
requires nbdkit jq

make_pool
uri=$(nbd_server r1 64M)
mapperctl device add "$uri" --name r1 >/dev/null
mapperctl create linear v --size 32M >/dev/null
start_daemon "$POOL" "$T_DIR/mnt" -o nbd_timeout=120

head -c $((4 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=1M oflag=direct conv=notrunc,fsync status=none
nbd_fail r1
read_fails_eio "$MNT/v" "while the server fails every request"
rc=0
timeout 60 dd if=/dev/zero of="$MNT/v" bs=64k count=4 oflag=direct conv=notrunc status=none \
	2>dd.err || rc=$?
[ "$rc" -ne 124 ] || fail "a write waited for a server that answers"
[ "$rc" -ne 0 ] || fail "a write succeeded while the server fails every request"
grep -q "Input/output error" dd.err || fail "the write did not fail with EIO: $(cat dd.err)"
kill -0 "$(daemon_pid)" || fail "the daemon died"
mapperctl status --json >st.json
[ "$(json_get '.devices[0].state' <st.json)" = ok ] ||
	fail "a server that answers errors is not a lost connection: $(jq -c '.devices[0]' st.json)"
[ "$(json_get '.devices[0].nbd.failed' <st.json)" -ge 2 ] ||
	fail "status does not count the failed requests: $(jq -c '.devices[0].nbd' st.json)"
grep -q "of 'nbd+unix://.*' failed" "$POOL/mapperfs.log" || fail "the log does not name the device"
nbd_heal r1
cmp -n $((4 * MiB)) data "$MNT/v" || fail "the volume does not read what it held"
mapperctl check >check.out 2>&1 || fail "check: $(cat check.out)"
stop_daemon
