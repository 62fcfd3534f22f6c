#!/usr/bin/env bash
# t849-move-carries-a-switch-volume-off-a-device.sh: `mapperctl move d0`
# (pvmove) while fio writes and then verifies a switch volume of 3 paths
# (d0, d1, d2) routed 1 0 2 0 ...: path 0 goes whole to the first device
# with room for it in one piece (d3: d1 and d2 have too little), writes
# going to both places, then the volume uses d3, d1 and d2.  fio sees no
# error and verifies every block; the raw devices hold, region by region,
# what the volume reads; status and list showed the move; switch-map and
# extend were refused meanwhile (--dump was not); check is clean during
# and after it, and d0 leaves the pool.  --to a device without room in
# one piece is refused; a path placed by hand (DEVICE:OFFSET) is refused
# by name; --abort of a move in flight leaves the volume where it was,
# its pieces freed; two paths on one device move together.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires fio jq python3

make_pool
add_file_device d0 33M >/dev/null	# 32 MiB of data area
add_file_device d1 33M >/dev/null
add_file_device d2 40M >/dev/null
add_file_device d3 40M >/dev/null
add_file_device d4 10M >/dev/null
mapperctl create switch sw --size 24M --region-size 1M --path d0 --path d1 --path d2 >/dev/null
mapperctl switch-map sw 0:1 :0 :2 :0 R4,14 >/dev/null	# 24 regions: 1 0 2 0 ...
# Every 2 MiB region of the copy holds a region of path 0: 24 MiB are
# copied, at 6 MiB/s 4 s, so fio writes through the move.
start_daemon "$POOL" "$T_DIR/mnt" -o sync_rate=6

paths() { mapperctl status sw --json | jq -c '[.paths[] | .device]'; }
expect_fail -s 1 -m "switch volume 'sw' moves each of its extents whole, and device 'd1' has no 24.00 MiB free in one piece" \
	mapperctl move d0 --to d1
fio --name=move --filename="$MNT/sw" --rw=randwrite --bs=4k --size=24M --direct=1 \
	--ioengine=libaio --iodepth=8 --verify=crc32c --verify_fatal=1 --verify_state_save=0 \
	--output=fio.out &
fio=$!
mark=$(log_mark)
mapperctl move d0 >move.out
grep -q "moving 1 volume" move.out || fail "move says: $(cat move.out)"
mapperctl status sw --json >st.json
[ "$(json_get '.move.from' <st.json)" = d0 ] || fail "status does not show the move: $(cat st.json)"
mapperctl list -o name,copy_percent --json | jq -e '.[] | select(.name == "sw") | .sync_percent != null' \
	>/dev/null || fail "list does not show the copy: $(mapperctl list -o name,copy_percent --json)"
mapperctl check >check.out 2>&1 || fail "check during the move: $(cat check.out)"
expect_fail -s 1 -m "switch volume 'sw' is being moved off 'd0': change its region table once" \
	mapperctl switch-map sw 0:0
expect_fail -s 1 -m "is being moved off 'd0': extend it once" mapperctl extend sw --size 26M
mapperctl switch-map sw --dump >dump.out || fail "switch-map --dump during the move failed"
[ "$(tr '\n' ' ' <dump.out)" = "0:1 :0 :2 :0 R4,14 " ] || fail "dump during the move: $(cat dump.out)"
wait_log "volume 'sw': moved off device 'd0'" "$mark"
wait "$fio" || fail "fio failed: $(tail -5 fio.out)"
grep -q "err= 0" fio.out || fail "fio saw errors during the move: $(grep err= fio.out)"

[ "$(paths)" = '["d3","d1","d2"]' ] || fail "paths after the move: $(paths)"
mapperctl status sw --json | jq -e 'has("move") | not' >/dev/null || fail "status still shows a move"
switch_from_devices sw | cmp - "$MNT/sw" || fail "the paths' devices do not hold what the volume reads"
mapperctl check >check.out 2>&1 || fail "check after the move: $(cat check.out)"
sha "$MNT/sw" >moved
stop_daemon

# The new places are recorded: a restart serves the same bytes from them.
start_daemon "$POOL" "$T_DIR/mnt" -o sync_rate=1
[ "$(paths)" = '["d3","d1","d2"]' ] || fail "paths after a restart: $(paths)"
sha "$MNT/sw" | cmp - moved || fail "after a restart the volume reads other bytes"

# An aborted move leaves the volume where it was, the copy freed (path
# 1's regions lie in 6 of the copy's 2 MiB regions: 12 s at 1 MiB/s).
free_d0() { mapperctl device list --json | jq '.[] | select(.name == "d0") | .free'; }
d0_free=$(free_d0)
mapperctl move d1 --to d0 >/dev/null
[ "$(free_d0)" -lt "$d0_free" ] || fail "the move took no room on d0"
mapperctl move d1 --abort >/dev/null
[ "$(paths)" = '["d3","d1","d2"]' ] || fail "an aborted move moved the volume: $(paths)"
mapperctl status sw --json | jq -e 'has("move") | not' >/dev/null || fail "status still shows the aborted move"
[ "$(free_d0)" = "$d0_free" ] || fail "the aborted move's piece on d0 is not freed: $(mapperctl device list --json)"
sha "$MNT/sw" | cmp - moved || fail "the aborted move changed what the volume reads"
switch_from_devices sw | cmp - "$MNT/sw" || fail "after the abort, the paths do not hold what the volume reads"
mapperctl check >check.out 2>&1 || fail "check after the abort: $(cat check.out)"
mapperctl device remove d0 >/dev/null || fail "d0 is still in use after the move"

# A path placed by hand stays where it was put: refused by name, nothing starts.
mapperctl create switch mp --size 4M --region-size 1M --path d4:0 --path d4:0 >/dev/null
expect_fail -s 1 -m "cannot move off 'd4': 'mp' \(placed there by hand, as DEVICE:OFFSET\); a place chosen by hand stays where it was put" \
	mapperctl move d4
mapperctl status mp --json | jq -e 'has("move") | not' >/dev/null || fail "the refused move started"
mapperctl remove mp >/dev/null

# Two paths on one device move together, each whole, carved around each
# other: d1's last 8 MiB hold both.
mapperctl create switch two --size 4M --region-size 1M --path d4 --path d4 >/dev/null
head -c 4M /dev/urandom >two.data
dd if=two.data of="$MNT/two" bs=1M oflag=direct conv=notrunc status=none
mark=$(log_mark)
mapperctl move d4 --to d1 >/dev/null
wait_log "volume 'two': moved off device 'd4'" "$mark"
[ "$(mapperctl status two --json | jq -c '[.paths[] | .device]')" = '["d1","d1"]' ] ||
	fail "paths of 'two' after the move: $(mapperctl status two --json | jq -c .paths)"
cmp two.data "$MNT/two" || fail "'two' reads other bytes after its move"
switch_from_devices two | cmp - two.data || fail "the paths of 'two' do not hold what it reads"
mapperctl check >check.out 2>&1 || fail "check after moving 'two': $(cat check.out)"
mapperctl device remove d4 >/dev/null || fail "d4 is still in use after the move"
stop_daemon
