#!/usr/bin/env bash
# t872-export-survives-restarts-and-stops-with-the-daemon.sh: an export
# made offline is "stopped" until a daemon serves the pool, then served;
# unmounting stops its nbdkit (by pid, none left) and removes its socket;
# the next daemon serves it again (it is in pool.db); an nbdkit killed is
# shown restarting and started again on the same socket; SIGTERM to the
# daemon stops it too; kill -9 of the daemon takes nbdkit with it, and the
# next daemon replaces the socket left; unexport stops it at once and
# removes the socket.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires nbdkit nbdinfo jq
requires_that nbdkit file --version

make_pool
add_file_device d0 256M >/dev/null
mapperctl create thin-pool tp --size 128M >/dev/null
mapperctl create thin vm --pool tp --size 16M >/dev/null
sock=$T_DIR/vm.sock
uri="nbd+unix:///?socket=$sock"
state() { mapperctl status vm --json | json_get .export.state; }

mapperctl export vm --unix "$sock" >out
grep -q "served once a daemon serves the pool" out || fail "offline export said: $(cat out)"
[ "$(state)" = stopped ] || fail "offline, the export is $(state), not stopped"
[ ! -e "$sock" ] || fail "offline export made its socket"

no_nbdkit_left
start_daemon
[ "$(state)" = serving ] || fail "the export made offline is $(state) once the daemon runs"
pid1=$(export_pid vm)
nbdinfo --size "$uri" >/dev/null || fail "cannot connect to the export"

stop_daemon
! kill -0 "$pid1" 2>/dev/null || fail "nbdkit $pid1 still runs after the daemon stopped"
[ -z "$(nbdkits_under "$T_DIR")" ] || fail "an nbdkit is left: $(nbdkits_under "$T_DIR")"
[ ! -e "$sock" ] || fail "the socket is left after the daemon stopped"
[ "$(state)" = stopped ] || fail "after the daemon stopped the export is $(state)"

start_daemon
pid2=$(export_pid vm)
[ "$pid2" != "$pid1" ] && [ "$(state)" = serving ] || fail "not served again after a restart"
nbdinfo --size "$uri" >/dev/null || fail "cannot connect after the restart"

# Killed: shown restarting (or already served again), then served by a new nbdkit.
mark=$(log_mark)
kill -KILL "$pid2"
wait_log "export of volume 'vm' on .*nbdkit serves it" "$mark"
grep -q "nbdkit (pid $pid2) was killed by signal 9" "$POOL/mapperfs.log" ||
	fail "the log does not say nbdkit $pid2 was killed"
pid3=$(export_pid vm)
[ "$pid3" != "$pid2" ] && [ "$(cat "/proc/$pid3/comm")" = nbdkit ] || fail "no new nbdkit ($pid3)"
nbdinfo --size "$uri" >/dev/null || fail "cannot connect after nbdkit was restarted"

# SIGTERM to the daemon stops it as well.
daemon=$(daemon_pid)
kill -TERM "$daemon"
wait_pid "$daemon" || fail "the daemon did not exit on SIGTERM"
! kill -0 "$pid3" 2>/dev/null || fail "nbdkit $pid3 still runs after SIGTERM to the daemon"
[ ! -e "$sock" ] || fail "the socket is left after SIGTERM"

# kill -9: nbdkit goes with its parent (--exit-with-parent); the socket
# file stays, nobody listening, and the next daemon takes its place.
start_daemon
pid4=$(export_pid vm)
crash_daemon
wait_pid "$pid4" || fail "nbdkit $pid4 outlived the daemon's kill -9"
[ -S "$sock" ] || fail "no stale socket left by kill -9 (the case this covers)"
start_daemon
[ "$(state)" = serving ] || fail "after kill -9 and a start the export is $(state)"
grep -q "removing the stale socket '$sock'" "$POOL/mapperfs.log" || fail "the stale socket was not replaced"
nbdinfo --size "$uri" >/dev/null || fail "cannot connect after kill -9 and a start"
pid4=$(export_pid vm)
mapperctl unexport vm >out || fail "unexport failed"
grep -q "^volume 'vm' is no longer exported$" out || fail "unexport said: $(cat out)"
! kill -0 "$pid4" 2>/dev/null || fail "nbdkit $pid4 still runs after unexport"
[ ! -e "$sock" ] || fail "the socket is left after unexport"
[ "$(mapperctl status vm --json | jq -r '.export // "none"')" = none ] || fail "status still shows an export"
nbdinfo --size "$uri" >/dev/null 2>&1 && fail "the export still answers after unexport"
stop_daemon
start_daemon
[ -z "$(nbdkits_under "$T_DIR")" ] || fail "an unexported volume is served after a restart"
