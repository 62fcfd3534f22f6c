#!/usr/bin/env bash
# t856-mirror-with-an-nbd-leg-keeps-serving-and-resyncs.sh: a mirrored
# linear volume with one leg on a local file and the other on an NBD
# export (another host's disk, as it would be).  Both legs hold what is
# written (read off the local file and the server's file).  The server
# dies while fio writes and verifies: after -o nbd_timeout the remote leg
# fails and the volume serves degraded from the local leg, fio sees no
# error.  The server comes back; `refresh` takes the leg back and it
# copies only the regions written meanwhile; both legs are equal again.
# Back serving another disk first, the leg is refused by refresh.
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs
requires nbdkit fio jq

make_pool
add_file_device d0 48M >/dev/null
uri=$(nbd_server r1 48M)
mapperctl device add "$uri" --name r1 >/dev/null
mapperctl create linear m --size 32M --mirrors 1 --on d0,r1 >/dev/null
start_daemon "$POOL" "$T_DIR/mnt" -o nbd_timeout=2
wait_log "volume 'm': resynced 16 dirty region"

head -c $((32 * MiB)) /dev/urandom >data
dd if=data of="$MNT/m" bs=1M oflag=direct conv=notrunc,fsync status=none
leg_from_devices m 0 | cmp - data || fail "the local leg does not hold what was written"
leg_from_devices m 1 | cmp - data || fail "the NBD leg does not hold what was written"
mark=$(log_mark)
wait_log "volume 'm': every region clean in its log" "$mark"

mark=$(log_mark)
nbd_server_kill r1
fio --name=degraded --filename="$MNT/m" --rw=randwrite --bs=64k --offset=4M --size=8M \
	--direct=1 --ioengine=libaio --iodepth=8 --verify=crc32c --verify_fatal=1 \
	--verify_state_save=0 --output=fio.out || fail "fio failed: $(tail -5 fio.out)"
grep -q "err= 0" fio.out || fail "fio saw errors while the remote leg was away: $(grep err= fio.out)"
wait_log "volume 'm': leg 1 \(r1\) failed: a write failed; serving degraded from 1 leg" "$mark"
[ "$(mapperctl list --noheadings -o state -S 'name == m' | tr -d ' ')" = degraded ] ||
	fail "list does not say degraded: $(mapperctl list -o name,state,legs)"

# Back, but serving another disk (restarted empty): the leg is not taken
# back, in one line, rather than taken and failed again by the resync.
mv "$T_DIR/nbd/r1/disk" disk.kept
truncate -s 48M "$T_DIR/nbd/r1/disk"
nbd_server_start r1
expect_fail -s 1 -m "leg 1 of 'm' is not taken back: its device 'r1' is reconnecting: .*another disk" \
	mapperctl refresh m
nbd_server_kill r1
mv -f disk.kept "$T_DIR/nbd/r1/disk"

nbd_server_start r1
mark=$(log_mark)
mapperctl refresh m >/dev/null
n=$(leg_caught_up m 1 r1 "$mark")
[ "$n" -ge 1 ] && [ "$n" -le 6 ] || fail "the leg caught up on $n regions, want 1 to 6 of 16"
log "the NBD leg caught up on $n of 16 regions"
leg_from_devices m 0 >leg0
cmp leg0 "$MNT/m" || fail "the volume does not read what its local leg holds"
leg_from_devices m 1 | cmp - leg0 || fail "the NBD leg differs from the local leg after the resync"
mapperctl check >check.out 2>&1 || fail "check: $(cat check.out)"
stop_daemon
