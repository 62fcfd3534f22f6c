#!/usr/bin/env bash
# t847-striped-move-survives-kill9-at-any-moment.sh: a volume of 2
# stripes (d0, d1) is moved off d0 (pvmove) while a writer writes and
# fsyncs, and the daemon is killed with SIGKILL at a random moment, 20
# rounds; each start serves the move's mirror again and resumes the copy
# from where its log says.  After each restart every write an fsync
# acknowledged reads back (or a later one to the same block), and check
# passes; at the end the move is done, stripe 0 is on d2, the raw devices
# hold what the volume reads, and d0 is free to leave the pool.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq python3

ROUNDS=${T_CRASH_ROUNDS:-20}
make_pool
add_file_device d0 40M >/dev/null
add_file_device d1 40M >/dev/null
add_file_device d2 40M >/dev/null
mapperctl create linear v --size 32M --stripes 2 --stripe-size 64K --on d0,d1 >/dev/null

: >acks.log
# Every region holds chunks of both stripes, so the whole 32 MiB is copied:
# at 2 MiB/s, 16 s in all, so the kills land in the copy.
start() { start_daemon "$POOL" "$T_DIR/mnt" -o sync_rate=2; }
start
mapperctl move d0 >/dev/null
stop_daemon
ack_crash_rounds v "$ROUNDS"
start
wait_log "volume 'v': moved off device 'd0'"
python3 "$T_SRC/tests/lib/ack_verify.py" "$MNT/v" acks.log || fail "after the move: an fsync-acknowledged write was lost"
mapperctl check >check.log 2>&1 || { cat check.log >&2; fail "check after the move failed"; }
[ "$(mapperctl status v --json | jq -c '[.segments[] | [.stripe, .device]]')" = '[[0,"d2"],[1,"d1"]]' ] ||
	fail "stripes after the move: $(mapperctl status v --json | jq -c .segments)"
stripes_from_devices v | cmp - "$MNT/v" || fail "the stripes' devices do not hold what the volume reads"
mapperctl device remove d0 >/dev/null || fail "d0 is still in use after the move"
log "$ROUNDS rounds, $(grep -c '^A' acks.log) acknowledged writes verified, $(grep -c "resynced" "$POOL/mapperfs.log") resyncs, $(grep -c "rebuilding leg 1" "$POOL/mapperfs.log") starts of the copy"
stop_daemon
