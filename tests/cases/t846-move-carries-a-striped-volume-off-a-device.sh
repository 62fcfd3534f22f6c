#!/usr/bin/env bash
# t846-move-carries-a-striped-volume-off-a-device.sh: `mapperctl move d0`
# (pvmove) while fio writes and then verifies a volume of 2 stripes, one
# on d0 and one on d1: the daemon copies stripe 0 to a device of its own
# (d2; never d1, which holds stripe 1), writes going to both places, then
# the volume uses d2 and d1.  fio sees no error and verifies every block,
# the raw devices hold chunk c on stripe c mod 2, status and list showed
# the move, check is clean during and after it, and d0 leaves the pool.
# --to a device of the other stripe is refused, a switch volume with a
# path placed by hand is refused by name; --abort of a move in flight
# leaves the volume where it was, its pieces freed.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires fio jq python3

make_pool
add_file_device d0 33M >/dev/null	# 32 MiB of data area
add_file_device d1 33M >/dev/null
add_file_device d2 40M >/dev/null
add_file_device d3 40M >/dev/null
mapperctl create linear sv --size 48M --stripes 2 --stripe-size 64K --on d0,d1 >/dev/null
# A copy of 24 MiB at 6 MiB/s takes 4 s: fio writes through it.
start_daemon "$POOL" "$T_DIR/mnt" -o sync_rate=6

expect_fail -s 1 -m "device 'd1' holds another stripe of 'sv'" mapperctl move d0 --to d1
fio --name=move --filename="$MNT/sv" --rw=randwrite --bs=4k --size=48M --direct=1 \
	--ioengine=libaio --iodepth=8 --verify=crc32c --verify_fatal=1 --verify_state_save=0 \
	--output=fio.out &
fio=$!
mark=$(log_mark)
mapperctl move d0 >move.out
grep -q "moving 1 volume" move.out || fail "move says: $(cat move.out)"
mapperctl status sv --json >st.json
[ "$(json_get '.move.from' <st.json)" = d0 ] || fail "status does not show the move: $(cat st.json)"
mapperctl list -o name,copy_percent --json | jq -e '.[] | select(.name == "sv") | .sync_percent != null' \
	>/dev/null || fail "list does not show the copy: $(mapperctl list -o name,copy_percent --json)"
mapperctl check >check.out 2>&1 || fail "check during the move: $(cat check.out)"
expect_fail -s 1 -m "is being moved" mapperctl extend sv --size 52M
wait_log "volume 'sv': moved off device 'd0'" "$mark"
wait "$fio" || fail "fio failed: $(tail -5 fio.out)"
grep -q "err= 0" fio.out || fail "fio saw errors during the move: $(grep err= fio.out)"

mapperctl status sv --json >st.json
[ "$(jq -c '[.segments[] | [.stripe, .device]]' st.json)" = '[[0,"d2"],[1,"d1"]]' ] ||
	fail "stripes after the move: $(jq -c .segments st.json)"
jq -e 'has("move") | not' st.json >/dev/null || fail "status still shows a move"
stripes_from_devices sv | cmp - "$MNT/sv" || fail "the stripes' devices do not hold what the volume reads"
mapperctl check >check.out 2>&1 || fail "check after the move: $(cat check.out)"
mapperctl device remove d0 >/dev/null || fail "d0 is still in use after the move"

# What cannot move is named, with why; nothing starts.
mapperctl create switch sw --size 4M --region-size 1M --path d3:0 --path d3 >/dev/null
expect_fail -s 1 -m "cannot move off 'd3': 'sw' \(placed there by hand, as DEVICE:OFFSET\)" \
	mapperctl move d3
mapperctl remove sw >/dev/null

# An aborted move leaves the volume where it was, the copy freed.
sha "$MNT/sv" >before
free_d3() { mapperctl device list --json | jq '.[] | select(.name == "d3") | .free'; }
d3_free=$(free_d3)
mapperctl move d1 --to d3 >/dev/null
mapperctl move d1 --abort >/dev/null
mapperctl status sv --json >st.json
[ "$(jq -c '[.segments[] | [.stripe, .device]]' st.json)" = '[[0,"d2"],[1,"d1"]]' ] ||
	fail "an aborted move moved the volume: $(jq -c .segments st.json)"
jq -e 'has("move") | not' st.json >/dev/null || fail "status still shows the aborted move"
[ "$(free_d3)" = "$d3_free" ] || fail "the aborted move's pieces on d3 are not freed: $(mapperctl device list --json)"
sha "$MNT/sv" | cmp - before || fail "the aborted move changed what the volume reads"
stripes_from_devices sv | cmp - "$MNT/sv" || fail "after the abort, the stripes do not hold what the volume reads"
mapperctl check >check.out 2>&1 || fail "check after the abort: $(cat check.out)"
stop_daemon
