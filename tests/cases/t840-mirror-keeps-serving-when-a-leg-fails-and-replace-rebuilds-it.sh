#!/usr/bin/env bash
# t840-mirror-keeps-serving-when-a-leg-fails-and-replace-rebuilds-it.sh: a
# linear volume of two legs (create --mirrors 1), the second on a device
# the test can break (nbdkit behind nbdfuse).  A new mirror syncs its
# second leg in the background; written, both legs hold the bytes written
# (read off the raw devices where status says each leg lies).  Then the
# second leg's device fails every request while fio writes and verifies:
# no error reaches fio, the leg is marked failed with its reason, status
# says degraded.  Healed, `refresh` takes the leg back and it catches up
# on the regions written while it was away only (the log kept their
# bits), after which both legs are equal.  `replace --leg BAD --to NEW`
# then rebuilds the leg whole on a third device, online, and check finds
# the pool clean.
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs
requires nbdkit nbdfuse fio jq

make_pool
add_file_device d0 48M >/dev/null
add_file_device d2 48M >/dev/null
bad=$(nbd_device bad 48M)
mapperctl device add "$bad" --name bad >/dev/null
expect_fail -s 1 -m "needs a device for each leg" \
	mapperctl create linear m --size 32M --mirrors 1 --on d0
mapperctl create linear m --size 32M --mirrors 1 --on d0,bad >create.out
grep -q "2 legs" create.out || fail "create does not say the legs: $(cat create.out)"
start_daemon
wait_log "volume 'm': resynced 16 dirty region"

head -c $((32 * MiB)) /dev/urandom >data
dd if=data of="$MNT/m" bs=1M oflag=direct conv=notrunc,fsync status=none
cmp data "$MNT/m" || fail "the mirror does not read back what was written"
leg_from_devices m 0 | cmp - data || fail "leg 0 does not hold what was written"
dd if="$bad" iflag=nocache count=0 status=none
leg_from_devices m 1 | cmp - data || fail "leg 1 does not hold what was written"
[ "$(mapperctl status m --json | json_get '.mirror.sync_percent')" = 100 ] ||
	fail "a synced mirror does not say 100%"
[ "$(mapperctl list --noheadings -o sync_percent -S 'name == m' | tr -d ' ')" = 100.00 ] ||
	fail "list does not say Cpy%Sync 100: $(mapperctl list -o name,legs,sync_percent)"

mark=$(log_mark)
wait_log "volume 'm': every region clean in its log" "$mark"
mark=$(log_mark)
nbd_fail bad
fio --name=degraded --filename="$MNT/m" --rw=randwrite --bsrange=4k-256k --blockalign=4k \
	--direct=1 --ioengine=libaio --iodepth=8 --size=8M --verify=crc32c --verify_fatal=1 \
	--verify_state_save=0 --output=fio.out || fail "fio failed: $(tail -5 fio.out)"
grep -q "err= 0" fio.out || fail "fio saw errors while a leg failed: $(grep err= fio.out)"
wait_log "volume 'm': leg 1 \(bad\) failed: a write failed; serving degraded from 1 leg" "$mark"
mapperctl status m --json >st.json
[ "$(json_get '.mirror.degraded' <st.json)" = true ] || fail "status does not say degraded"
[ "$(json_get '.mirror.leg_list[1].state' <st.json)" = failed ] ||
	fail "status does not say leg 1 failed: $(jq -c .mirror st.json)"
[ "$(mapperctl list --noheadings -o state,legs -S 'name == m' | awk '{ print $1, $2 }')" = "degraded 2" ] ||
	fail "list does not say degraded: $(mapperctl list -o name,state,legs,sync_percent)"
kill -0 "$(daemon_pid)" || fail "the daemon died"

expect_fail -s 1 -m "only one in sync" mapperctl replace m --leg d0 --to d2

# Healed, the leg is taken back: it copies what it missed, no more.
nbd_heal bad
mark=$(log_mark)
mapperctl refresh m >/dev/null
n=$(leg_caught_up m 1 bad "$mark")
[ "$n" -ge 1 ] && [ "$n" -le 4 ] || fail "the leg caught up on $n regions, want 1 to 4 of 16"
log "leg 1 caught up on $n of 16 regions"
leg_from_devices m 0 >leg0
leg_from_devices m 1 | cmp - leg0 || fail "the leg taken back differs from leg 0"
mapperctl refresh m | grep -q "no leg is failed" || fail "refresh of a whole mirror says otherwise"

mark=$(log_mark)
mapperctl replace m --leg bad --to d2 >/dev/null
wait_log "volume 'm': leg 1 \(d2\) rebuilt, in sync" "$mark"
mapperctl status m --json >st.json
[ "$(json_get '.mirror.degraded' <st.json)" = false ] || fail "still degraded after the rebuild"
[ "$(json_get '.mirror.leg_list[1].segments[0].device' <st.json)" = d2 ] ||
	fail "leg 1 is not on d2: $(jq -c .mirror st.json)"
leg_from_devices m 0 >leg0
leg_from_devices m 1 | cmp - leg0 || fail "the rebuilt leg differs from leg 0"
cmp leg0 "$MNT/m" || fail "the volume does not read what its legs hold"
mapperctl check >check.out 2>&1 || fail "check after the rebuild: $(cat check.out)"

# The leg on 'bad' is free again: the device can leave the pool.
mapperctl device remove bad >/dev/null || fail "the replaced leg's device is still in use"
stop_daemon
