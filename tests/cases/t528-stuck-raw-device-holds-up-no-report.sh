#!/usr/bin/env bash
# t528-stuck-raw-device-holds-up-no-report.sh: a raw device that hangs
# (nbdkit's pause filter holds every request) while `device add` reads
# and labels it, or while `device remove` wipes its label, holds up
# nothing else: list, status and device list answer, a volume is made,
# all while the add or remove still waits on the device.  A second device
# add waits for the first and, after about a second, says so in one line
# naming it.  Once the device answers again, the adds and the remove
# finish as usual.  Offline, where one process holds the pool at a time,
# a list waits for a stuck device add, says for whom, and gives up after
# 10 s naming it.
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs
requires nbdkit nbdfuse jq python3

make_pool
add_file_device d0 64M >/dev/null
stuck=$(nbd_device stuck 32M)
start_daemon

# ctl ARGS...: mapperctl as a process of its own, for `ctl ... &` and $!.
ctl() { exec "$MAPPERFS_BUILD/bin/mapperctl" "$@"; }

ms() { echo $(($(date +%s%N) / 1000000)); }

# answers_while PID WHAT: reports and a change answer (each within 20 s:
# hang detection, not a measure) while PID, stuck on the device, runs.
answers_while()
{
	local pid=$1 what=$2 t0

	t0=$(ms)
	timeout 20 "$MAPPERFS_BUILD/bin/mapperctl" list --json >list.json ||
		fail "list did not answer while $what waited on its device"
	log "list answered in $(($(ms) - t0)) ms while $what waited on its device"
	timeout 20 "$MAPPERFS_BUILD/bin/mapperctl" status >/dev/null ||
		fail "status did not answer while $what waited on its device"
	timeout 20 "$MAPPERFS_BUILD/bin/mapperctl" device list --json >devices.json ||
		fail "device list did not answer while $what waited on its device"
	jq -e 'all(.name != "stuck")' devices.json >/dev/null ||
		fail "device list shows 'stuck' while $what waited on its device"
	kill -0 "$pid" 2>/dev/null || fail "$what did not wait for its device"
}

# device add: it waits on the label's first read, holding up no one.
mark=$(nbd_mark stuck)
nbd_pause stuck
ctl device add "$stuck" --name stuck >add.out 2>&1 &
adder=$!
cleanup_fn end_pid "$adder"
nbd_wait_request stuck 'Read id=[0-9]+ offset=0x0 ' "$mark"
answers_while "$adder" "device add"
timeout 20 "$MAPPERFS_BUILD/bin/mapperctl" create linear v --size 4M >/dev/null ||
	fail "create did not answer while device add waited on its device"
[ -f "$MNT/v" ] || fail "the volume made meanwhile is not served"
ctl device add "$T_DIR/d1.img" --create 32M --name d1 >add2.out 2>add2.err &
adder2=$!
cleanup_fn end_pid "$adder2"
wait_line add2.err "^mapperctl: waiting for 'device add' \(pid $adder\) \.\.\.$"
kill -0 "$adder2" 2>/dev/null || fail "the second device add did not wait for the first"
kill -0 "$adder" 2>/dev/null || fail "device add did not wait for its device"
nbd_resume stuck
wait "$adder" || fail "device add failed once its device answered: $(cat add.out)"
wait "$adder2" || fail "the second device add failed: $(cat add2.err)"
[ "$(wc -l <add2.err)" -eq 1 ] || fail "the second device add said more than it waits: $(cat add2.err)"
[ "$(mapperctl device list --json | json_get '.[] | select(.name == "stuck") | .state')" = ok ] ||
	fail "the device is not registered after its add"

# device remove: unregistered at once, it then waits on the label's wipe.
mark=$(nbd_mark stuck)
nbd_pause stuck
ctl device remove stuck >remove.out 2>&1 &
remover=$!
cleanup_fn end_pid "$remover"
nbd_wait_request stuck '(Read|Write|Zero|Trim|Flush) id=[0-9]+ ' "$mark"
answers_while "$remover" "device remove"
nbd_resume stuck
wait "$remover" || fail "device remove failed once its device answered: $(cat remove.out)"
mapperctl device add "$stuck" --name stuck >/dev/null ||
	fail "the removed device's label was not wiped: it cannot be added again"
mapperctl check >check.log || { cat check.log >&2; fail "check failed"; }

# Offline: the add holds the pool's lock while it waits on its device.
stop_daemon
mapperctl device remove stuck >/dev/null
mark=$(nbd_mark stuck)
nbd_pause stuck
ctl device add "$stuck" --name stuck >add.out 2>&1 &
adder=$!
cleanup_fn end_pid "$adder"
nbd_wait_request stuck 'Read id=[0-9]+ offset=0x0 ' "$mark"
expect_fail -s 1 -m "pool '.*' is in use by 'device add' \(pid $adder\)$" mapperctl list
grep -q "^mapperctl: waiting for 'device add' (pid $adder) \.\.\.$" "$T_DIR/.stderr.all" ||
	fail "list did not say for whom it waited: $(cat "$T_DIR/.stderr.all")"
nbd_resume stuck
wait "$adder" || fail "the offline device add failed once its device answered: $(cat add.out)"
mapperctl device list --json | jq -e 'any(.name == "stuck")' >/dev/null ||
	fail "the offline device add did not register the device"
