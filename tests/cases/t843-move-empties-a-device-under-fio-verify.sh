#!/usr/bin/env bash
# t843-move-empties-a-device-under-fio-verify.sh: `mapperctl move d0`
# (pvmove) while fio writes and then verifies a linear volume that lies on
# d0 and d1: the daemon copies the d0 part to d2 with writes going to both
# places, then the volume uses d2 alone.  fio sees no error and verifies
# every block, the volume reads what its new extents hold, status showed
# the move, check told it and is clean, and d0 leaves the pool; --abort of a move in
# flight leaves the volume where it was.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires fio jq

make_pool
add_file_device d0 33M >/dev/null	# 32 MiB of data area
add_file_device d1 40M >/dev/null
add_file_device d2 40M >/dev/null
add_file_device d3 40M >/dev/null
mapperctl create linear v --size 48M --on d0,d1 >/dev/null
start_daemon "$POOL" "$T_DIR/mnt" -o sync_rate=8	# a copy of 32 MiB takes 4 s: fio runs through it

fio --name=move --filename="$MNT/v" --rw=randwrite --bs=4k --size=48M --direct=1 \
	--ioengine=libaio --iodepth=8 --verify=crc32c --verify_fatal=1 --verify_state_save=0 \
	--output=fio.out &
fio=$!
mark=$(log_mark)
mapperctl move d0 --to d2 >move.out
grep -q "moving 1 volume" move.out || fail "move says: $(cat move.out)"
mapperctl status v --json >st.json
[ "$(json_get '.move.from' <st.json)" = d0 ] || fail "status does not show the move: $(cat st.json)"
expect_fail -s 1 -m "is being moved" mapperctl extend v --size 52M
# check tells the move in flight, as a summary line, not a breach.
mapperctl check >check.out 2>&1 || fail "check during the move: $(cat check.out)"
grep -Eq "^volume 'v': moving off 'd0', copy [0-9]+\.[0-9]{2}% done$" check.out ||
	fail "check does not tell the move in flight: $(cat check.out)"
wait_log "volume 'v': moved off device 'd0'" "$mark"
wait "$fio" || fail "fio failed: $(tail -5 fio.out)"
grep -q "err= 0" fio.out || fail "fio saw errors during the move: $(grep err= fio.out)"

mapperctl status v --json >st.json
jq -e '[.segments[].device] | index("d0") == null' st.json >/dev/null ||
	fail "the volume still uses d0: $(jq -c .segments st.json)"
jq -e 'has("move") | not' st.json >/dev/null || fail "status still shows a move"
vol_from_devices v | cmp - "$MNT/v" || fail "the new extents do not hold what the volume reads"
mapperctl check >check.out 2>&1 || fail "check after the move: $(cat check.out)"
! grep -q "moving off" check.out || fail "check still tells a finished move: $(cat check.out)"
mapperctl device remove d0 >/dev/null || fail "d0 is still in use after the move"

# An aborted move leaves the volume where it was, the copy freed.
mapperctl move d1 --to d3 >/dev/null
mapperctl move d1 --abort >/dev/null
mapperctl status v --json >st.json
jq -e '[.segments[].device] | index("d1") != null' st.json >/dev/null ||
	fail "an aborted move moved the volume: $(jq -c .segments st.json)"
jq -e 'has("move") | not' st.json >/dev/null || fail "status still shows the aborted move"
mapperctl check >check.out 2>&1 || fail "check after the abort: $(cat check.out)"
stop_daemon

# Offline, a move is recorded and copies nothing until a daemon serves the pool.
mapperctl move d1 --to d3 | grep -q "the copy starts when one does" ||
	fail "an offline move does not say the copy waits for a daemon"
[ "$(mapperctl status v --json | json_get '.move.copy_percent')" = 0 ] ||
	fail "mapperctl copied part of a move itself: $(mapperctl status v --json | jq -c .move)"
mapperctl move d1 --abort >/dev/null
mapperctl check >check.out 2>&1 || fail "check after an offline move and its abort: $(cat check.out)"
