#!/usr/bin/env bash
# t503-idle-control-client-delays-no-command.sh: clients that connect to
# POOL/control.sock and send nothing (a hung mapperctl, a forgotten socat)
# do not delay anyone else's commands, which answer at once; the daemon
# closes such a client after its request timeout and says so in its log.
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs
requires python3

make_pool
add_file_device d0 32M >/dev/null
start_daemon

# idle_client: a client that connects, says "connected", and then reports
# whether the daemon closed the connection ("closed") without a word.
idle_client()
{
	exec python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
print("connected", flush=True)
print("closed" if s.recv(1) == b"" else "data", flush=True)
' "$POOL/control.sock"
}

declare -a idle_out idle_pid
for i in 0 1 2; do
	mkfifo "idle$i"
	idle_client >"idle$i" &
	idle_pid[i]=$!
	cleanup_fn end_pid "${idle_pid[i]}"
	exec {fd}<"idle$i"
	idle_out[i]=$fd
	read -r -t 10 line <&"$fd" && [ "$line" = connected ] ||
		fail "idle client $i could not connect"
done

# Commands answer while three clients sit idle (a bound, not a measure:
# today's daemon never answers them).
timeout 5 "$MAPPERFS_BUILD/bin/mapperctl" create linear v --size 4M >/dev/null ||
	fail "a command did not answer while clients sat idle"
timeout 5 "$MAPPERFS_BUILD/bin/mapperctl" list --json | jq -e 'length == 1' >/dev/null ||
	fail "list did not answer while clients sat idle"
[ -f "$MNT/v" ] || fail "the volume made while clients sat idle is not served"

for i in 0 1 2; do
	read -r -t 30 line <&"${idle_out[i]}" || fail "idle client $i was never closed"
	[ "$line" = closed ] || fail "idle client $i got '$line' instead of a close"
	wait "${idle_pid[i]}" || fail "idle client $i failed"
done
wait_log "control: a client \(pid [0-9]+\) sent no request within [0-9]+ s"
