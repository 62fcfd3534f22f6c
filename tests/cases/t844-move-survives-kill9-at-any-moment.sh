#!/usr/bin/env bash
# t844-move-survives-kill9-at-any-moment.sh: a volume is moved off d0
# (pvmove) while a writer writes and fsyncs, and the daemon is killed
# with SIGKILL at a random moment, 20 rounds; each start resumes the move
# from where its log says.  After each restart every write an fsync
# acknowledged reads back (or a later one to the same block), and check
# passes; at the end the move is done and d0 is free to leave the pool.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq python3

ROUNDS=${T_CRASH_ROUNDS:-20}
make_pool
add_file_device d0 40M >/dev/null
add_file_device d1 40M >/dev/null
mapperctl create linear v --size 32M --on d0 >/dev/null

cat >writer.py <<'PY'
# Writes 64 KiB blocks tagged with a sequence number into the first 512
# blocks (32 MiB); logs "I seq block" before a write and "A seq" once an fsync
# covering it returned.  Stops at the first error (the daemon died).
import os, random, sys
path, log, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
rnd = random.Random(seed)
fd = os.open(path, os.O_RDWR)
out = open(log, "a")
seq = seed * 1000000
pending = []
try:
    while True:
        seq += 1
        b = rnd.randrange(512)
        out.write("I %d %d\n" % (seq, b)); out.flush()
        os.pwrite(fd, (b"%020d" % seq) * 3276 + b"\0" * 16, b * 65536)
        pending.append(seq)
        if len(pending) >= rnd.randrange(1, 6):
            os.fsync(fd)
            for s in pending:
                out.write("A %d\n" % s)
            out.flush()
            pending = []
except OSError:
    pass
PY

cat >verify.py <<'PY'
# For each block: its content must carry the last acknowledged sequence
# number written to it, or a later one that was issued to it.
import sys
path, log = sys.argv[1], sys.argv[2]
issued, acked = {}, set()
for line in open(log):
    f = line.split()
    if f[0] == "I":
        issued[int(f[1])] = int(f[2])
    elif f[0] == "A":
        acked.add(int(f[1]))
per_block = {}
for s, b in sorted(issued.items()):
    per_block.setdefault(b, []).append(s)
bad = 0
with open(path, "rb") as f:
    for b, seqs in per_block.items():
        f.seek(b * 65536)
        head = f.read(20)
        got = int(head) if head.strip(b"\0") else 0
        last_acked = max([s for s in seqs if s in acked], default=None)
        if last_acked is None:
            continue
        allowed = {s for s in seqs if s >= last_acked}
        if got not in allowed:
            print("block %d holds %d, want one of %s" % (b, got, sorted(allowed)[:5]))
            bad += 1
sys.exit(1 if bad else 0)
PY

: >acks.log
# Every start copies at 4 MiB/s: 8 s in all, so the kills land in the copy.
start() { start_daemon "$POOL" "$T_DIR/mnt" -o sync_rate=4; }
start
mapperctl move d0 --to d1 >/dev/null
stop_daemon
for round in $(seq 1 "$ROUNDS"); do
	start
	python3 writer.py "$MNT/v" acks.log "$round" &
	writer=$!
	# The random moment of the crash (not a synchronisation).
	sleep "0.$((RANDOM % 9 + 1))"
	pid=$(daemon_pid)
	kill -KILL "$pid"
	wait_pid "$pid"
	fusermount3 -uz "$MNT" 2>/dev/null || umount -l "$MNT"
	wait "$writer" 2>/dev/null || true
	start
	python3 verify.py "$MNT/v" acks.log || fail "round $round: an fsync-acknowledged write was lost"
	mapperctl check >check.log 2>&1 || { cat check.log >&2; fail "round $round: check failed"; }
	stop_daemon
done
start
wait_log "volume 'v': moved off device 'd0'"
python3 verify.py "$MNT/v" acks.log || fail "after the move: an fsync-acknowledged write was lost"
mapperctl check >check.log 2>&1 || { cat check.log >&2; fail "check after the move failed"; }
mapperctl device remove d0 >/dev/null || fail "d0 is still in use after the move"
log "$ROUNDS rounds, $(grep -c '^A' acks.log) acknowledged writes verified, $(grep -c "resynced" "$POOL/mapperfs.log") resyncs, $(grep -c "rebuilding leg 1" "$POOL/mapperfs.log") starts of the copy"
stop_daemon
