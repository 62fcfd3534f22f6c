#!/usr/bin/env bash
# t854-nbd-server-killed-mid-write-loses-nothing.sh: the NBD server under
# a volume dies (kill -9) twice while fio writes and verifies, and comes
# back on the same socket.  Meanwhile the device and the volume say
# "reconnecting" in status and list; the requests in flight are sent
# again on a new connection, so fio sees no error and every acknowledged
# write reads back; status counts the reconnects.  With a server that
# stays away, a request fails with EIO once -o nbd_timeout has passed,
# instead of hanging, the daemon stops when asked, and when the server is
# back the volume serves again, its bytes intact.
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs
requires nbdkit fio jq

make_pool
uri=$(nbd_server r1 192M)
mapperctl device add "$uri" --name r1 >/dev/null
mapperctl create linear v --size 128M >/dev/null
start_daemon "$POOL" "$T_DIR/mnt" -o nbd_timeout=60

fio --name=w --filename="$MNT/v" --rw=randwrite --bs=64k --direct=1 --ioengine=libaio \
	--iodepth=8 --size=96M --rate=24m --verify=crc32c --verify_fatal=1 \
	--verify_state_save=0 --output=fio.out &
fio_pid=$!
cleanup_fn end_pid "$fio_pid"
for round in 1 2; do
	mark=$(nbd_mark r1)
	nbd_wait_request r1 "Write" "$mark"
	mark=$(log_mark)
	nbd_server_kill r1
	wait_log "NBD device '.*': connection lost; reconnecting" "$mark"
	[ "$(mapperctl status --json | json_get '.devices[0].state')" = reconnecting ] ||
		fail "round $round: the device does not say reconnecting"
	[ "$(mapperctl list --noheadings -o state -S 'name == v' | tr -d ' ')" = reconnecting ] ||
		fail "round $round: list does not say reconnecting: $(mapperctl list)"
	nbd_server_start r1
	wait_log "NBD device '.*' reconnected" "$mark"
	log "round $round: the server died and came back"
done
wait "$fio_pid" || fail "fio failed: $(tail -5 fio.out)"
grep -q "err= 0" fio.out || fail "fio saw errors: $(grep err= fio.out)"
mapperctl status --json >st.json
[ "$(json_get '.devices[0].state' <st.json)" = ok ] || fail "the device is not ok again"
[ "$(json_get '.devices[0].nbd.reconnects' <st.json)" -ge 2 ] ||
	fail "status does not count 2 reconnects: $(jq -c '.devices[0].nbd' st.json)"
[ "$(json_get '.devices[0].nbd.failed' <st.json)" = 0 ] ||
	fail "requests failed: $(jq -c '.devices[0].nbd' st.json)"
log "status: $(jq -c '.devices[0].nbd' st.json)"
mapperctl check >check.out 2>&1 || fail "check: $(cat check.out)"
want=$(sha "$MNT/v")
stop_daemon

# A server that stays away: requests fail after the timeout, no hang.
start_daemon "$POOL" "$T_DIR/mnt" -o nbd_timeout=2
nbd_server_kill r1
mark=$(log_mark)
read_fails_eio "$MNT/v" "while the server was away"
wait_log "the NBD server did not come back within the timeout" "$mark"
nbd_server_start r1
[ "$(sha "$MNT/v")" = "$want" ] || fail "the volume reads otherwise once the server is back"
nbd_server_kill r1
stop_daemon	# within 30 s, or it fails
