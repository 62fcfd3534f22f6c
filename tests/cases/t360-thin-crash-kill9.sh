#!/usr/bin/env bash
# t360-thin-crash-kill9.sh: the daemon is killed with SIGKILL at a random
# moment while a writer (fsync every few writes, first writes, overwrites
# and copy-on-write) and a snapshot maker run, 20 rounds.  After each
# restart every write an fsync acknowledged reads back (or a later write
# to the same block, which may have landed without an fsync), and
# `mapperctl check` passes.  This is the proof of the commit order: data
# fdatasync'ed before the metadata COMMIT, freed blocks reused only after
# it.  The daemon runs on a memory budget of one leaf (-o cache_size=2K),
# so leaves are unloaded and loaded again all along (snapshots' leaves,
# then the volume's own once committed): the test fails if none was.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq python3

ROUNDS=${T_CRASH_ROUNDS:-20}
evictions=0
# evicted: adds the running daemon's count of unloaded leaves to $evictions.
evicted()
{
	local n

	n=$(mapperctl status tp --json | json_get .cache_evictions) || fail "status failed"
	evictions=$((evictions + n))
}
make_pool
add_file_device d0 64M >/dev/null
mapperctl create thin-pool tp --size 48M >/dev/null
mapperctl create thin v --pool tp --size 8M >/dev/null

: >acks.log			# a crash before the first write is a round too
for round in $(seq 1 "$ROUNDS"); do
	start_daemon "$POOL" "$T_DIR/mnt" -o cache_size=2K
	python3 "$T_SRC/tests/lib/ack_writer.py" "$MNT/v" acks.log "$round" &
	writer=$!
	ack_writer_started "$round"
	# Offline, mapperctl would go on without the daemon: stop with it.
	touch running
	(n=0; while [ -e running ] && mapperctl snapshot v "s$round-$n" >/dev/null 2>&1; do
		[ $n -lt 2 ] || mapperctl remove "s$round-$((n - 2))" >/dev/null 2>&1 || break
		n=$((n + 1))
	done) &
	snapper=$!
	# The random moment of the crash (not a synchronisation).
	sleep "0.$((RANDOM % 9 + 1))"
	evicted
	pid=$(daemon_pid)
	rm running
	kill -KILL "$pid"
	wait_pid "$pid"
	fusermount3 -uz "$MNT" 2>/dev/null || umount -l "$MNT"
	wait "$writer" "$snapper" 2>/dev/null || true
	start_daemon "$POOL" "$T_DIR/mnt" -o cache_size=2K
	python3 "$T_SRC/tests/lib/ack_verify.py" "$MNT/v" acks.log || fail "round $round: an fsync-acknowledged write was lost"
	mapperctl check >check.log 2>&1 || { cat check.log >&2; fail "round $round: check failed"; }
	evicted
	stop_daemon
done
[ "$evictions" -gt 0 ] || fail "a budget of one leaf unloaded nothing in $ROUNDS rounds"
log "$ROUNDS rounds, $(grep -c '^A' acks.log) acknowledged writes verified, $evictions leaves unloaded"
mapperctl check >check.log 2>&1 || { cat check.log >&2; fail "offline check failed"; }
