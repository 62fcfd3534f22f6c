#!/usr/bin/env bash
# t851-move-carries-a-thin-pools-data-off-a-device.sh: `mapperctl move d0`
# (pvmove) of a thin pool's data while fio writes and verifies a thin
# volume of it, whose snapshot shares its blocks: the pool runs on a
# mirror of where its data is and where it goes, then on the new place.
# fio sees no error, the snapshot reads what it held, the pool's extents
# leave d0, check is clean and d0 leaves the pool.  An aborted move leaves
# the data where it was.  Then a move killed with SIGKILL at random
# moments, some rounds, loses no write an fsync acknowledged and resumes
# until it is done.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires fio jq python3

ROUNDS=${T_CRASH_ROUNDS:-20}
ROUNDS=$((ROUNDS / 4 + 1))	# t844 and t847 do the 20 rounds; the resume is the same code
make_pool
add_file_device d0 40M >/dev/null
add_file_device d1 40M >/dev/null
add_file_device d2 40M >/dev/null
mapperctl create thin-pool tp --size 32M --on d0 >/dev/null
mapperctl create thin v --pool tp --size 64M >/dev/null
start_daemon "$POOL" "$T_DIR/mnt" -o sync_rate=8	# 32 MiB copied in 4 s: fio runs through it

head -c $((16 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=1M oflag=direct conv=notrunc,fsync status=none
mapperctl snapshot --active v s >/dev/null
fio --name=move --filename="$MNT/v" --rw=randwrite --bs=4k --size=8M --direct=1 \
	--ioengine=libaio --iodepth=8 --verify=crc32c --verify_fatal=1 --verify_state_save=0 \
	--output=fio.out &
fio=$!
mark=$(log_mark)
mapperctl move d0 --to d1 >move.out
grep -q "moving 1 volume" move.out || fail "move says: $(cat move.out)"
[ "$(mapperctl status tp --json | json_get '.move.from')" = d0 ] ||
	fail "status does not show the move: $(mapperctl status tp --json | jq -c .)"
expect_fail -s 1 -m "is being moved" mapperctl extend tp --size 36M
wait_log "volume 'tp': moved off device 'd0'" "$mark"
wait "$fio" || fail "fio failed: $(tail -5 fio.out)"
grep -q "err= 0" fio.out || fail "fio saw errors during the move: $(grep err= fio.out)"
cmp -n $((16 * MiB)) data "$MNT/s" || fail "the snapshot changed in the move"

mapperctl status tp --json >st.json
jq -e '[.segments[].device] | index("d0") == null' st.json >/dev/null ||
	fail "the pool still uses d0: $(jq -c .segments st.json)"
jq -e 'has("move") | not' st.json >/dev/null || fail "status still shows a move"
mapperctl check >check.out 2>&1 || fail "check after the move: $(cat check.out)"
mapperctl device remove d0 >/dev/null || fail "d0 is still in use after the move"
mapperctl extend tp --size 36M >/dev/null || fail "the moved pool does not grow"

# An aborted move leaves the data where it was, the copy freed.
mapperctl move d1 --to d2 >/dev/null
mapperctl move d1 --abort >/dev/null
mapperctl status tp --json >st.json
jq -e '[.segments[].device] | index("d2") == null' st.json >/dev/null ||
	fail "an aborted move moved the pool: $(jq -c .segments st.json)"
cmp -n $((16 * MiB)) data "$MNT/s" || fail "the snapshot changed in the aborted move"
mapperctl check >check.out 2>&1 || fail "check after the abort: $(cat check.out)"
stop_daemon

# Killed at random moments: every start resumes the copy where its log says.
: >acks.log
start() { start_daemon "$POOL" "$T_DIR/mnt" -o sync_rate=4; }
start
mapperctl move d1 --to d2 >/dev/null
stop_daemon
for round in $(seq 1 "$ROUNDS"); do
	start
	python3 "$T_SRC/tests/lib/ack_writer.py" "$MNT/v" acks.log "$round" 128 &	# 8 MiB: no new blocks
	writer=$!
	sleep "0.$((RANDOM % 9 + 1))"	# the random moment of the crash (not a synchronisation)
	pid=$(daemon_pid)
	kill -KILL "$pid"
	wait_pid "$pid"
	fusermount3 -uz "$MNT" 2>/dev/null || umount -l "$MNT"
	wait "$writer" 2>/dev/null || true
	start
	python3 "$T_SRC/tests/lib/ack_verify.py" "$MNT/v" acks.log ||
		fail "round $round: an fsync-acknowledged write was lost"
	mapperctl check >check.log 2>&1 || { cat check.log >&2; fail "round $round: check failed"; }
	stop_daemon
done
start
wait_log "volume 'tp': moved off device 'd1'"
python3 "$T_SRC/tests/lib/ack_verify.py" "$MNT/v" acks.log ||
	fail "after the move: an fsync-acknowledged write was lost"
cmp -n $((16 * MiB)) data "$MNT/s" || fail "the snapshot changed across the kills"
mapperctl check >check.log 2>&1 || { cat check.log >&2; fail "check after the move failed"; }
mapperctl device remove d1 >/dev/null || fail "d1 is still in use after the move"
log "$ROUNDS rounds, $(grep -c '^A' acks.log) acknowledged writes verified, $(grep -c "rebuilding leg 1" "$POOL/mapperfs.log") starts of the copy"
stop_daemon
