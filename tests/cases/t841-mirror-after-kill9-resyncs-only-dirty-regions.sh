#!/usr/bin/env bash
# t841-mirror-after-kill9-resyncs-only-dirty-regions.sh: a mirror of two
# legs, synced and idle until its write-intent log is clean, then written
# in its first 8 MiB (4 regions of 2 MiB) by fio when the daemon is
# killed with SIGKILL.  At the next start only the regions whose bits were
# set are copied (the log says how many, at most those 4 of 32), the legs
# are equal after it, and check finds the pool clean.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires fio jq

make_pool
add_file_device d0 80M >/dev/null
add_file_device d1 80M >/dev/null
mapperctl create linear m --size 64M --mirrors 1 >/dev/null
start_daemon
wait_log "volume 'm': resynced 32 dirty region"
wait_log "volume 'm': every region clean in its log"

# Written once (their bits set when it returns), then again by fio when
# the kill comes.
dd if=/dev/urandom of="$MNT/m" bs=1M count=8 oflag=direct conv=notrunc status=none
[ "$(mapperctl status m --json | json_get '.mirror.dirty_regions')" = 4 ] ||
	fail "8 MiB written left $(mapperctl status m --json | jq .mirror.dirty_regions) regions dirty, not 4"
fio --name=w --filename="$MNT/m" --rw=randwrite --bs=64k --size=8M --time_based --runtime=60 \
	--direct=1 --ioengine=libaio --iodepth=8 --output=fio.out >/dev/null 2>&1 &
fio=$!
sleep "0.$((RANDOM % 9 + 1))"	# the random moment of the kill (not a synchronisation)
crash_daemon "$fio"

mark=$(log_mark)
start_daemon
wait_log "volume 'm': resynced [0-9]+ dirty region" "$mark"
n=$(tail -c +$((mark + 1)) "$POOL/mapperfs.log" |
	sed -nE "s/.*volume 'm': resynced ([0-9]+) dirty region.*/\1/p" | head -1)
[ "$n" -ge 1 ] && [ "$n" -le 4 ] || fail "resynced $n regions after the kill, want 1 to 4 of 32"
log "resynced $n of 32 regions after kill -9"

leg_from_devices m 0 >leg0
leg_from_devices m 1 | cmp - leg0 || fail "the legs differ after the resync"
mapperctl check >check.out 2>&1 || fail "check: $(cat check.out)"
stop_daemon
