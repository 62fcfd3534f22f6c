#!/usr/bin/env bash
# t536-trickling-control-clients-hold-no-worker.sh: as many clients as
# the daemon has control workers each send a request one byte a second,
# so that no single read ever waits long: each holds its worker only
# until the request's deadline, not for as long as it trickles; a command
# sent meanwhile answers within that deadline, and the daemon closes every
# trickling client and says so in its log.  (t503 covers clients that
# send nothing at all.)
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs
requires python3 jq

make_pool
add_file_device d0 32M >/dev/null
mapperctl create linear v --size 4M >/dev/null
start_daemon

# trickle N: N clients each send a valid header ("MPFS", argc 1) and then
# the bytes of an argument that never ends, one byte per client a second,
# for 60 s.  Says "started" once every client sent its first byte, then
# "all closed" once the daemon closed every one (a send fails), or
# "still open" after 60 s.
trickle()
{
	exec python3 -c '
import socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
socks = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.send(b"M")
    socks.append(s)
print("started", flush=True)
msg = b"PFS\x01\x00\x00\x00" + b"x" * 1000
open_ = set(range(n))
for i in range(60):
    time.sleep(1)
    for k in list(open_):
        try:
            socks[k].send(msg[i:i + 1])
        except OSError:
            open_.discard(k)
    if not open_:
        print("all closed", flush=True)
        sys.exit(0)
print("still open", flush=True)
' "$POOL/control.sock" "$1"
}

mkfifo trickle.out
trickle 16 >trickle.out &
tpid=$!
cleanup_fn end_pid "$tpid"
exec {tout}<trickle.out
read -r -t 30 line <&"$tout" && [ "$line" = started ] || fail "the trickling clients could not connect"

t0=$(date +%s%N)
timeout 20 "$MAPPERFS_BUILD/bin/mapperctl" list --json | jq -e 'length == 1' >/dev/null ||
	fail "list did not answer within 20 s while 16 clients trickled their requests"
ms=$((($(date +%s%N) - t0) / 1000000))
log "list answered in $ms ms while 16 clients trickled"
[ "$ms" -lt 10000 ] || fail "list took $ms ms: the trickling clients held the workers past their deadline"

read -r -t 90 line <&"$tout" || fail "the trickling clients stopped answering"
[ "$line" = "all closed" ] || fail "the daemon did not close every trickling client ($line)"
wait "$tpid" || fail "the trickling clients failed"
wait_log "control: a client \(pid [0-9]+\) did not send its whole request within [0-9]+ s; closing it"
