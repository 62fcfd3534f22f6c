#!/usr/bin/env bash
# t842-mirror-starts-degraded-without-a-leg-device.sh: the raw device of a
# mirror's second leg is gone when the daemon starts.  The mirror is
# served all the same, from its first leg, and says so (the log names the
# leg and why; status says degraded, the leg failed); what is written
# reads back.  The device back, the leg stays failed (it missed writes);
# pool.db records it too, so that with the write-intent log lost it comes
# back failed again, and `refresh` copies it whole.  `replace` rebuilds it
# on a third device; the legs are then equal and the old device free to
# leave the pool.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 48M >/dev/null
d1=$(add_file_device d1 48M)
add_file_device d2 48M >/dev/null
mapperctl create linear m --size 32M --mirrors 1 --on d0,d1 >/dev/null
start_daemon
wait_log "volume 'm': resynced 16 dirty region"
stop_daemon

mv "$d1" "$d1.away"
mark=$(log_mark)
start_daemon
wait_log "volume 'm': leg 1 \(d1\) failed: its device could not be opened; serving degraded from 1 leg" "$mark"
head -c $((32 * MiB)) /dev/urandom >data
dd if=data of="$MNT/m" bs=1M oflag=direct conv=notrunc,fsync status=none
cmp data "$MNT/m" || fail "a degraded mirror does not read back what was written"
mapperctl status m --json >st.json
[ "$(json_get '.mirror.degraded' <st.json)" = true ] || fail "status does not say degraded"
[ "$(json_get '.mirror.leg_list[1].state' <st.json)" = failed ] || fail "leg 1 is not failed"
[ "$(json_get '.mirror.leg_list[1].reason' <st.json)" = "its device could not be opened" ] ||
	fail "status does not say why leg 1 failed: $(jq -c .mirror st.json)"
stop_daemon

mv "$d1.away" "$d1"
mark=$(log_mark)
start_daemon
mapperctl status m --json >st.json
[ "$(json_get '.mirror.leg_list[1].state' <st.json)" = failed ] ||
	fail "a leg that missed writes came back in sync: $(jq -c .mirror st.json)"
json_get '.mirror.leg_list[1].reason' <st.json | grep -q "failed before this start" ||
	fail "status gives no reason for a leg failed in an earlier run: $(jq -c .mirror st.json)"
cmp data "$MNT/m" || fail "the volume reads the stale leg"
stop_daemon

# The log lost (pool.db still says leg 1 is not in sync): leg 1 comes back
# failed, not trusted as the source of a resync; refresh copies it whole.
grep -q "volume 'm': legs not in sync as pool.db records them: 1" "$POOL/mapperfs.log" ||
	fail "pool.db was not told that leg 1 is not in sync"
rm "$POOL/mirrors/"*.log
mark=$(log_mark)
start_daemon
wait_log "volume 'm': leg 1 was not in sync when its log was lost" "$mark"
[ "$(mapperctl status m --json | json_get '.mirror.leg_list[1].state')" = failed ] ||
	fail "a stale leg came back in sync with a new log: $(mapperctl status m --json | jq -c .mirror)"
cmp data "$MNT/m" || fail "the volume reads the stale leg after its log was lost"
mapperctl refresh m >/dev/null
wait_log "volume 'm': leg 1 \(d1\) caught up, in sync" "$mark"
leg_from_devices m 1 | cmp - data || fail "the leg taken back does not hold the data"
wait_log "volume 'm': legs not in sync as pool.db records them: none" "$mark"
mark=$(log_mark)
mapperctl replace m --leg d1 --to d2 >/dev/null
wait_log "volume 'm': leg 1 \(d2\) rebuilt, in sync" "$mark"
cmp data "$MNT/m" || fail "the volume changed in the rebuild"
mapperctl device remove d1 >/dev/null || fail "the replaced leg's device is still in use"
mapperctl check >check.out 2>&1 || fail "check: $(cat check.out)"
stop_daemon
