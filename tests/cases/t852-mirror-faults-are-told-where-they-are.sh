#!/usr/bin/env bash
# t852-mirror-faults-are-told-where-they-are.sh: three faults a newcomer
# met, each said where it is.  A mirror's second leg fails reads only (no
# write comes): the reads still return the data, and the leg is marked
# failed and the mirror degraded, with the reason in status and list (it
# used to be passed over, the volume said "ok" with one copy).  A move off
# a device that cannot be read waits, saying so in status, blames nothing
# else, and finishes once the device reads again.  A leg whose device
# could not be opened at start is taken back by `refresh` once `reload`
# opened the device, with no restart.
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs
requires nbdkit nbdfuse jq

make_pool
add_file_device d0 40M >/dev/null
d1=$(add_file_device d1 40M)
bad=$(nbd_device bad 40M)
mapperctl device add "$bad" --name bad >/dev/null
mapperctl create linear m --size 16M --mirrors 1 --on d0,bad >/dev/null
mapperctl create linear src --size 8M --on bad >/dev/null
mapperctl create linear n --size 8M --mirrors 1 --on d0,d1 >/dev/null
start_daemon

# Reads alone find the failing leg.
wait_log "volume 'm': resynced 8 dirty region"
head -c $((16 * MiB)) /dev/urandom >data
dd if=data of="$MNT/m" bs=1M oflag=direct conv=notrunc,fsync status=none
head -c $((8 * MiB)) /dev/urandom >srcdata
dd if=srcdata of="$MNT/src" bs=1M oflag=direct conv=notrunc,fsync status=none
mark=$(log_mark)
nbd_fail bad
dd if="$MNT/m" bs=1M iflag=direct status=none | cmp - data ||
	fail "a mirror with a leg failing reads does not read its data"
wait_log "volume 'm': leg 1 \(bad\) failed: a read failed; serving degraded from 1 leg" "$mark"
[ "$(mapperctl status m --json | json_get '.mirror.degraded')" = true ] ||
	fail "status does not say degraded after a read failed on leg 1"
mapperctl list --noheadings -o state,reason -S 'name == m' | grep -q "degraded.*leg 1 failed: a read failed" ||
	fail "list does not say why m is degraded: $(mapperctl list -o name,state,reason)"

# A move off the unreadable device waits and says why; it finishes once healed.
mark=$(log_mark)
mapperctl move bad --volume src --to d1 >/dev/null
wait_log "volume 'src': the copy to leg 1 \(to d1\) waits: region [0-9]+ cannot be read" "$mark"
mapperctl status src --json | json_get '.move.copy_stalled' | grep -q "cannot be read" ||
	fail "status does not say the move waits: $(mapperctl status src --json | jq -c .move)"
mapperctl check 2>&1 | grep -q "volume 'src': moving off 'bad', copy .* done; it waits: region" ||
	fail "check does not say the move waits: $(mapperctl check 2>&1)"
grep -q "volume 'src': leg 1 (to d1) failed" "$POOL/mapperfs.log" &&
	fail "the move blamed its new place for its source's read errors"
nbd_heal bad
wait_log "volume 'src': moved off device 'bad'" "$mark"
cmp srcdata "$MNT/src" || fail "the moved volume does not read what was written"
mapperctl check >check.out 2>&1 || fail "check after the move: $(cat check.out)"
stop_daemon

# A leg whose device could not be opened at start: reload opens it, refresh takes it back.
mv "$d1" "$d1.away"
mark=$(log_mark)
start_daemon
wait_log "volume 'n': leg 1 \(d1\) failed: its device could not be opened" "$mark"
mv "$d1.away" "$d1"
mapperctl reload >/dev/null
mapperctl refresh n >/dev/null || fail "refresh after reload opened the device: $(mapperctl refresh n 2>&1)"
wait_log "volume 'n': leg 1 \(d1\) caught up, in sync" "$mark"
leg_from_devices n 0 >leg0
leg_from_devices n 1 | cmp - leg0 || fail "the leg taken back differs from leg 0"
stop_daemon
