#!/usr/bin/env bash
# t845-a-copy-onto-a-failing-device-fails-cleanly.sh: the background
# copies never trust a device that failed them.  A mirror's leg replaced
# onto a device that fails every write is failed, not said to be in
# sync, and the volume reads what was written (from the leg that has
# it); a move onto such a device aborts by itself, the volume staying
# where it was, its data intact.  And a mirror that grows resyncs what
# it grew by, so both legs hold the same bytes there too.  check names a
# failed leg and what the write-intent log holds, without calling either a
# breach.
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs
requires nbdkit nbdfuse jq

make_pool
add_file_device d0 48M >/dev/null
add_file_device d1 48M >/dev/null
bad=$(nbd_device bad 48M)
mapperctl device add "$bad" --name bad >/dev/null
mapperctl create linear m --size 8M --mirrors 1 --on d0,d1 >/dev/null
mapperctl create linear v --size 8M --on d0 >/dev/null
start_daemon
wait_log "volume 'm': resynced 4 dirty region"
head -c $((8 * MiB)) /dev/urandom >data
dd if=data of="$MNT/m" bs=1M oflag=direct conv=notrunc,fsync status=none
dd if=data of="$MNT/v" bs=1M oflag=direct conv=notrunc,fsync status=none
nbd_fail bad

mark=$(log_mark)
mapperctl replace m --leg d1 --to bad >/dev/null
wait_log "volume 'm': leg 1 \(bad\) failed: a write of the resync failed" "$mark"
mapperctl status m --json >st.json
[ "$(json_get '.mirror.leg_list[1].state' <st.json)" = failed ] ||
	fail "a leg rebuilt onto a failing device is not failed: $(jq -c .mirror st.json)"
[ "$(json_get '.state' <st.json)" = degraded ] || fail "status does not say degraded"
json_get '.mirror.leg_list[1].reason' <st.json | grep -q "write" ||
	fail "status does not say why the leg failed: $(jq -c .mirror st.json)"
! grep -q "leg 1 (bad) rebuilt" "$POOL/mapperfs.log" || fail "the failing leg was said rebuilt"
echo 3 >/proc/sys/vm/drop_caches
cmp data "$MNT/m" || fail "the mirror reads wrong data after a failed rebuild"
expect_fail -s 1 -m "on 'd0' already" mapperctl replace m --leg d0 --to d0
mapperctl check >check.out 2>&1 || fail "a degraded mirror is a breach of check: $(cat check.out)"
grep -q "mirror 'm': leg 1 failed: a write of the resync failed" check.out ||
	fail "check does not name the failed leg: $(cat check.out)"
grep -q "mirror 'm': [0-9]* region(s) marked in its write-intent log" check.out ||
	fail "check does not read the write-intent log: $(cat check.out)"

mark=$(log_mark)
mapperctl move d0 --volume v --to bad >/dev/null
wait_log "volume 'v': its move off 'd0' failed .*aborted" "$mark"
mapperctl status v --json >st.json
jq -e 'has("move") | not' st.json >/dev/null || fail "the failed move is still in flight"
[ "$(jq -r '[.segments[].device] | unique | join(",")' st.json)" = d0 ] ||
	fail "the volume left d0: $(jq -c .segments st.json)"
cmp data "$MNT/v" || fail "the volume's data changed in the failed move"

# Healed and rebuilt, the mirror grows, and what it grew by is resynced.
nbd_heal bad
mark=$(log_mark)
mapperctl replace m --leg bad --to d1 >/dev/null
wait_log "volume 'm': leg 1 \(d1\) rebuilt, in sync" "$mark"
mark=$(log_mark)
mapperctl extend m --size 12M >/dev/null
wait_log "volume 'm': resynced 2 dirty region" "$mark"
leg_from_devices m 0 >leg0
leg_from_devices m 1 | cmp - leg0 || fail "the legs differ where the mirror grew"
mapperctl check >check.out 2>&1 || fail "check: $(cat check.out)"
stop_daemon
