#!/usr/bin/env bash
# t848-mirrored-thin-pool-keeps-its-volumes-when-a-leg-fails.sh: a thin
# pool whose data has two legs (create thin-pool --mirrors 1), the second
# on a device the test can break (nbdkit behind nbdfuse).  Written through
# a thin volume and a snapshot, both legs hold the same bytes.  Then the
# second leg's device fails every request while fio writes and verifies
# through the thin volume: no error reaches fio, the pool is degraded with
# the leg's reason.  Healed, `refresh` catches the leg up; `replace`
# rebuilds it on a third device, online; the pool grows on both legs;
# after a kill -9 during writes only dirty regions are resynced; the legs
# are equal at every step and check finds the pool clean.
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs
requires nbdkit nbdfuse fio jq

legs_equal()
{
	leg_from_devices tp 0 >leg0
	leg_from_devices tp 1 | cmp - leg0 || fail "$1: the legs of the pool's data differ"
}

make_pool
add_file_device d0 48M >/dev/null
add_file_device d2 48M >/dev/null
bad=$(nbd_device bad 48M)
mapperctl device add "$bad" --name bad >/dev/null
expect_fail -s 1 -m "needs a device for each leg" \
	mapperctl create thin-pool tp --size 32M --mirrors 1 --on d0
expect_fail -s 1 -m "mirrors" mapperctl create thin-pool tp --size 32M --mirrors 4
mapperctl create thin-pool tp --size 32M --mirrors 1 --on d0,bad >create.out
grep -q "2 legs" create.out || fail "create does not say the legs: $(cat create.out)"
mapperctl create thin v --pool tp --size 64M >/dev/null
start_daemon
wait_log "volume 'tp': resynced 16 dirty region"

head -c $((16 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=1M oflag=direct conv=notrunc,fsync status=none
mapperctl snapshot --active v s >/dev/null
dd if=/dev/urandom of="$MNT/v" bs=64k count=8 oflag=direct conv=notrunc,fsync status=none
cmp -n $((16 * MiB)) data "$MNT/s" || fail "the snapshot does not read what was written before it"
legs_equal "written"
[ "$(mapperctl status tp --json | json_get '.mirror.sync_percent')" = 100 ] ||
	fail "a synced pool does not say 100%"
[ "$(mapperctl list --noheadings -o legs -S 'name == tp' | tr -d ' ')" = 2 ] ||
	fail "list does not say 2 legs: $(mapperctl list -o name,legs,sync_percent)"

mark=$(log_mark)
nbd_fail bad
fio --name=degraded --filename="$MNT/v" --rw=randwrite --bsrange=4k-256k --blockalign=4k \
	--direct=1 --ioengine=libaio --iodepth=8 --size=8M --verify=crc32c --verify_fatal=1 \
	--verify_state_save=0 --output=fio.out || fail "fio failed: $(tail -5 fio.out)"
grep -q "err= 0" fio.out || fail "fio saw errors while a leg failed: $(grep err= fio.out)"
wait_log "volume 'tp': leg 1 \(bad\) failed: .*; serving degraded from 1 leg" "$mark"
mapperctl status tp --json >st.json
[ "$(json_get '.mirror.degraded' <st.json)" = true ] || fail "status does not say degraded"
[ "$(json_get '.mirror.leg_list[1].state' <st.json)" = failed ] ||
	fail "status does not say leg 1 failed: $(jq -c .mirror st.json)"
[ "$(mapperctl list --noheadings -o state -S 'name == tp' | tr -d ' ')" = degraded ] ||
	fail "list does not say degraded: $(mapperctl list -o name,state,legs,sync_percent)"
cmp -n $((16 * MiB)) data "$MNT/s" || fail "the snapshot changed while a leg failed"
mapperctl check >check.out 2>&1 || fail "check of a degraded pool: $(cat check.out)"
grep -q "mirror 'tp': leg 1 failed" check.out || fail "check does not name the failed leg"

nbd_heal bad
mark=$(log_mark)
mapperctl refresh tp >/dev/null
wait_log "volume 'tp': leg 1 \(bad\) caught up, in sync" "$mark"
legs_equal "caught up"

mark=$(log_mark)
mapperctl replace tp --leg bad --to d2 >/dev/null
wait_log "volume 'tp': leg 1 \(d2\) rebuilt, in sync" "$mark"
[ "$(mapperctl status tp --json | json_get '.mirror.degraded')" = false ] ||
	fail "still degraded after the rebuild"
legs_equal "rebuilt"
mapperctl device remove bad >/dev/null || fail "the replaced leg's device is still in use"

# Grown on both legs, and the new blocks are used.
expect_fail -s 1 -m "own devices" mapperctl extend tp --size 40M --on d0
mapperctl extend tp --size 40M >/dev/null
[ "$(mapperctl status tp --json | json_get '.data_total_bytes')" = $((40 * MiB)) ] ||
	fail "the pool did not grow to 40M: $(mapperctl status tp --json | jq -c .)"
dd if=/dev/urandom of="$MNT/v" bs=1M seek=40 count=12 oflag=direct conv=notrunc,fsync \
	status=none || fail "cannot write into the grown pool"

# Killed while writing: only what was being written is resynced.  Written
# once first (their bits set when it returns), then by fio when the kill
# comes, which may be before fio wrote anything.
mark=$(log_mark)
wait_log "volume 'tp': every region clean in its log" "$mark"
dd if=/dev/urandom of="$MNT/v" bs=1M count=4 oflag=direct conv=notrunc status=none
fio --name=w --filename="$MNT/v" --rw=randwrite --bs=64k --size=8M --time_based --runtime=60 \
	--direct=1 --ioengine=libaio --iodepth=8 --output=fio.out >/dev/null 2>&1 &
fio=$!
sleep "0.$((RANDOM % 9 + 1))"	# the random moment of the kill (not a synchronisation)
crash_daemon "$fio"
mark=$(log_mark)
start_daemon
wait_log "volume 'tp': resynced [0-9]+ dirty region" "$mark"
n=$(tail -c +$((mark + 1)) "$POOL/mapperfs.log" |
	sed -nE "s/.*volume 'tp': resynced ([0-9]+) dirty region.*/\1/p" | head -1)
[ "$n" -ge 1 ] && [ "$n" -lt 20 ] || fail "resynced $n regions after the kill, want 1 to 19 of 20"
log "after kill -9: $n of 20 regions resynced"
legs_equal "after the kill"
cmp -n $((16 * MiB)) data "$MNT/s" || fail "the snapshot changed across the kill"
mapperctl check >check.out 2>&1 || fail "check after the kill: $(cat check.out)"
stop_daemon
