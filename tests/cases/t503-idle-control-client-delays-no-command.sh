#!/usr/bin/env bash
# t503-idle-control-client-delays-no-command.sh: clients that connect to
# POOL/control.sock and send nothing (a hung mapperctl, a forgotten socat)
# do not delay anyone else's commands, which answer at once; the daemon
# closes such a client after its request timeout and says so in its log.
# Nor do 300 of them at once (a script that leaks connections): a command
# answers before the daemon closed any of them for its timeout.
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
wait_log "control: (a client \(pid [0-9]+\)|[0-9]+ clients \(the first pid [0-9]+\)) sent no request within [0-9]+ s"

# many_idle N: N clients at once, in one process that says "connected"
# once all are, then, at each line it reads, how many of them the daemon
# has closed, and "all closed" once it closed every one.
many_idle()
{
	exec python3 -c '
import select, socket, sys
path, n = sys.argv[1], int(sys.argv[2])
socks = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    socks.append(s)
print("connected", flush=True)
sys.stdin.readline()
r, _, _ = select.select(socks, [], [], 0)
print(sum(1 for s in r if s.recv(1) == b""), flush=True)
for s in socks:
    s.settimeout(60)
    if s.recv(1) != b"":
        print("data", flush=True)
        sys.exit(1)
print("all closed", flush=True)
' "$POOL/control.sock" "$1"
}

# idle_crowd N: N idle clients connect; list answers (within 60 s: hang
# detection) and prints how many of them the daemon had closed by then;
# then the daemon closes all of them.
idle_crowd()
{
	local n=$1 t0 line closed

	rm -f many.in many.out
	mkfifo many.in many.out
	many_idle "$n" <many.in >many.out &
	many=$!
	cleanup_fn end_pid "$many"
	exec {many_in}>many.in {many_out}<many.out
	read -r -t 120 line <&"$many_out" && [ "$line" = connected ] ||
		fail "$n idle clients could not connect"
	t0=$(date +%s%N)
	timeout 60 "$MAPPERFS_BUILD/bin/mapperctl" list --json | jq -e 'length == 1' >/dev/null ||
		fail "list did not answer while $n clients sat idle"
	echo >&"$many_in"
	read -r -t 60 closed <&"$many_out" || fail "the idle clients stopped answering"
	log "list answered in $((($(date +%s%N) - t0) / 1000000)) ms with $n idle clients connected, $closed of them closed"
	read -r -t 60 line <&"$many_out" && [ "$line" = "all closed" ] ||
		fail "the daemon did not close every idle client ($line)"
	wait "$many" || fail "an idle client got data"
	exec {many_in}>&- {many_out}<&-
	echo "$closed"
}

# 200 idle clients, fewer than the daemon holds: it closed none of them
# (for their timeout) before list answered.
[ "$(idle_crowd 200)" -eq 0 ] || fail "list waited for idle clients to time out"
# 400, more than it holds: the oldest make room, list answers all the same.
idle_crowd 400 >/dev/null
