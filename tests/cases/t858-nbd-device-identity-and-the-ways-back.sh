#!/usr/bin/env bash
# t858-nbd-device-identity-and-the-ways-back.sh: what the newcomer's
# replay of NBD devices hit.  The pool's own export is refused as a raw
# device (its label would land in the volume, through the daemon's own
# mount); a socket path given relative is made absolute by mapperctl.  A
# server restarted empty behind the same socket is refused on reconnect,
# never served: reads fail with EIO, device list says why, and the bytes
# are there again once the right disk is back.  A device whose server was
# down when the daemon started says it is tried again, and comes back by
# itself once its server answers (the monitor, pool_reload.c).
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs
requires nbdkit jq

make_pool
add_file_device d0 64M >/dev/null
mapperctl create linear own --size 16M --on d0 >/dev/null
uri=$(nbd_server r1 64M)
(cd "$T_DIR/nbd/r1" && mapperctl device add "nbd+unix:///?socket=sock" --name r1) >/dev/null
[ "$(mapperctl device list --json | json_get '.[] | select(.name == "r1") | .path')" = "$uri" ] ||
	fail "the relative socket path was not made absolute: $(mapperctl device list)"
mapperctl create linear v --size 32M --on r1 >/dev/null
start_daemon "$POOL" "$T_DIR/mnt" -o nbd_timeout=2
mapperctl export own --unix "$T_DIR/own.sock" >/dev/null
expect_fail -s 1 -m "this pool's own export of volume 'own'" \
	mapperctl device add "nbd+unix:///?socket=$T_DIR/own.sock" --name self
head -c 64 "$MNT/own" | grep -q MAPPERFS && fail "a label landed in the exported volume"
for u in "nbd+ssh://host/x" "NBD+UNIX:///x?socket=/s" "http://host/x"; do
	expect_fail -s 1 -m "^mapperctl: device add: '.*' is not a device mapperfs can use: a URI must be nbd://" \
		mapperctl device add "$u" --name other
done
expect_fail -s 1 -m "the socket path in 'nbd\+unix:///x' is missing \(socket=PATH\)" \
	mapperctl device add "nbd+unix:///x" --name other
for u in "nbd://h:99999/x" "nbd://h:0/x" "nbd://:10809/x"; do
	expect_fail -s 1 -m "^mapperctl: device add: '.*' names no host and port to reach: nbd://HOST\[:PORT\]/EXPORT, the port 1..65535$" \
		mapperctl device add "$u" --name other
done

head -c $((4 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=1M oflag=direct conv=notrunc status=none
cp "$T_DIR/nbd/r1/disk" "$T_DIR/disk.kept"
nbd_server_kill r1
: >"$T_DIR/nbd/r1/disk"		# the same address, an empty disk behind it
truncate -s 64M "$T_DIR/nbd/r1/disk"
nbd_server_start r1
mark=$(log_mark)
read_fails_eio "$MNT/v" "from a disk that is not the device"
wait_log "NBD device '.*': cannot connect: the server serves another disk now" "$mark"
mapperctl device list -o name,state,reason --noheadings -S 'name == r1' >list.out
grep -q "reconnecting.*another disk" list.out || fail "device list does not say why: $(cat list.out)"
nbd_server_kill r1
cp "$T_DIR/disk.kept" "$T_DIR/nbd/r1/disk"
nbd_server_start r1
cmp -n $((4 * MiB)) data "$MNT/v" || fail "the right disk back, the volume does not read its bytes"
mapperctl unexport own >/dev/null
stop_daemon

nbd_server_kill r1
start_daemon "$POOL" "$T_DIR/mnt" -o nbd_timeout=2
mapperctl device list -o name,state,reason --noheadings -S 'name == r1' >list.out
grep -q "failed.*tried again every few seconds.*'mapperctl reload' tries now" list.out ||
	fail "a device down at start does not say how it comes back: $(cat list.out)"
mark=$(log_mark)
nbd_server_start r1
wait_log "raw device answers again: [1-9][0-9]* raw devices and volumes recovered, 0 still failed" "$mark"
[ "$(mapperctl device list --json | json_get '.[] | select(.name == "r1") | .state')" = ok ] ||
	fail "the monitor did not take the device back"
cmp -n $((4 * MiB)) data "$MNT/v" || fail "back, the volume does not read its bytes"
mapperctl check >check.out 2>&1 || fail "check: $(cat check.out)"
stop_daemon
