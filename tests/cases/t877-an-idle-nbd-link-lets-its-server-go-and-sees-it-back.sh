#!/usr/bin/env bash
# t877-an-idle-nbd-link-lets-its-server-go-and-sees-it-back.sh: what the
# link does while no request comes (the monitor's tick, nbd_link_tick).
# nbdkit told to stop (SIGTERM) waits for its clients: the daemon closes
# idle connections, so the server exits though the pool is idle.  A
# server that went away past the timeout (a read failed with EIO, the
# device says reconnecting) and came back is seen back by the daemon on
# its own, before any request: status says ok, and the log says so.
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs
requires nbdkit jq

make_pool
uri=$(nbd_server r1 64M)
mapperctl device add "$uri" --name r1 >/dev/null
mapperctl create linear v --size 16M --on r1 >/dev/null
start_daemon "$POOL" "$T_DIR/mnt" -o nbd_timeout=2
head -c $((4 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=1M oflag=direct conv=notrunc status=none

# SIGTERM with the pool idle: the server goes (its idle clients closed).
pid=$(cat "$T_DIR/nbd/r1/nbdkit.pid")
kill -TERM "$pid"
wait_pid "$pid" ||
	fail "nbdkit stopped with SIGTERM did not exit within 30 s of an idle pool"
read_fails_eio "$MNT/v" "while the server was away"
state() { mapperctl device list --json | json_get '.[] | select(.name == "r1") | .state'; }
[ "$(state)" = reconnecting ] || fail "with its server away r1 is $(state)"

# Back, and no request comes: the daemon sees it all the same.
mark=$(log_mark)
nbd_server_start r1
wait_log "NBD device '.*' reconnected" "$mark"
[ "$(state)" = ok ] || fail "with its server back r1 is $(state)"
cmp -n $((4 * MiB)) data "$MNT/v" || fail "the volume does not read its bytes once back"
stop_daemon
