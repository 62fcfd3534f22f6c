#!/usr/bin/env bash
# t850-switch-move-survives-kill9-at-any-moment.sh: a switch volume of 2
# paths (d0, d1, regions routed 0 1 0 1 ...) is moved off d0 (pvmove)
# while a writer writes and fsyncs, and the daemon is killed with SIGKILL
# at a random moment, 20 rounds; each start serves the move's mirror of
# two switch targets again and resumes the copy from where its log says.
# After each restart every write an fsync acknowledged reads back (or a
# later one to the same block), and check passes; at the end the move is
# done, path 0 is on d2 (its row rewritten with its extent), the raw
# devices hold what the volume reads, and d0 is free to leave the pool.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq python3

ROUNDS=${T_CRASH_ROUNDS:-20}
make_pool
add_file_device d0 40M >/dev/null
add_file_device d1 40M >/dev/null
add_file_device d2 40M >/dev/null
mapperctl create switch v --size 32M --region-size 1M --path d0 --path d1 >/dev/null

: >acks.log
# Every 2 MiB region of the copy holds a region of path 0, so the whole
# 32 MiB is copied: at 2 MiB/s, 16 s in all, so the kills land in the copy.
start() { start_daemon "$POOL" "$T_DIR/mnt" -o sync_rate=2; }
start
mapperctl move d0 >/dev/null
stop_daemon
ack_crash_rounds v "$ROUNDS"
start
wait_log "volume 'v': moved off device 'd0'"
python3 "$T_SRC/tests/lib/ack_verify.py" "$MNT/v" acks.log || fail "after the move: an fsync-acknowledged write was lost"
mapperctl check >check.log 2>&1 || { cat check.log >&2; fail "check after the move failed"; }
[ "$(mapperctl status v --json | jq -c '[.paths[] | .device]')" = '["d2","d1"]' ] ||
	fail "paths after the move: $(mapperctl status v --json | jq -c .paths)"
switch_from_devices v | cmp - "$MNT/v" || fail "the paths' devices do not hold what the volume reads"
mapperctl device remove d0 >/dev/null || fail "d0 is still in use after the move"
log "$ROUNDS rounds, $(grep -c '^A' acks.log) acknowledged writes verified, $(grep -c "resynced" "$POOL/mapperfs.log") resyncs, $(grep -c "rebuilding leg 1" "$POOL/mapperfs.log") starts of the copy"
stop_daemon
