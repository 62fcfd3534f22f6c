#!/usr/bin/env bash
# t604-thin-pool-policies-change-online.sh: a thin pool's metadata limit
# holds (a write that needs one more map page fails with ENOSPC and raises
# the event metadata-full, logged at warning, what is mapped stays writable, META% shows
# 100), `change` raises it online and
# refuses to set it below what the maps take; autoextend turned on online
# grows the pool once it is past the new threshold.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 256M >/dev/null
mapperctl create thin-pool tp --size 32M --metadata-limit 64K \
	--on-event "echo \"\$MAPPERFS_EVENT \$MAPPERFS_METADATA_PERCENT\" >>'$T_DIR/events'" >/dev/null
mapperctl create thin v --pool tp --size 1G >/dev/null
start_daemon

# A directory and 15 leaves fit in 16 pages; a leaf maps 32 MiB of v.
for i in $(seq 0 14); do
	dd if=/dev/urandom of="$MNT/v" bs=64K count=1 seek=$((i * 512)) conv=notrunc,fsync status=none ||
		fail "write $i within the limit failed"
done
! dd if=/dev/urandom of="$MNT/v" bs=64K count=1 seek=$((15 * 512)) conv=notrunc,fsync \
	status=none 2>err || fail "a write needing a 17th page succeeded"
grep -q "No space left on device" err || fail "the write failed otherwise: $(cat err)"
wait_line "$T_DIR/events" '^metadata-full 100$'
wait_log "^$LOG_TIME warning: thin pool 'tp': event metadata-full$"
mapperctl status tp --json | jq -e '.metadata_full and (.full | not)' >/dev/null ||
	fail "status does not say the metadata is full: $(mapperctl status tp --json)"
dd if=/dev/urandom of="$MNT/v" bs=64K count=1 seek=1 conv=notrunc,fsync status=none ||
	fail "a write into a leaf v has failed"
mapperctl status tp --json | jq -e '.metadata_percent == 100' >/dev/null ||
	fail "metadata_percent: $(mapperctl status tp --json | json_get .metadata_percent)"
mapperctl list | grep -Eq '^tp .* 100\.00 .* ok$' || fail "list does not show META% 100: $(mapperctl list)"

expect_fail -s 1 -m "at least 64 KiB" mapperctl change tp --metadata-limit 32K
expect_fail -s 2 -m "nothing to change" mapperctl change tp
expect_fail -s 1 -m "takes on or off" mapperctl change tp --discard-passdown maybe
mapperctl change tp --metadata-limit 128K >/dev/null
dd if=/dev/urandom of="$MNT/v" bs=64K count=1 seek=$((15 * 512)) conv=notrunc,fsync status=none ||
	fail "the raised limit did not take"
mapperctl status tp --json | jq -e '.metadata_full | not' >/dev/null ||
	fail "the metadata is still full after the limit was raised"
expect_fail -s 1 -m "the maps of thin pool 'tp' take 68.00 KiB already" \
	mapperctl change tp --metadata-limit 64K
[ "$(mapperctl status tp --json | json_get .metadata_total_bytes)" -eq $((128 * 1024)) ] ||
	fail "status does not show the new limit"

# Autoextend, turned on online: past 50% the pool doubles.
mark=$(log_mark)
mapperctl change tp --autoextend-threshold 50 --autoextend-percent 100 >/dev/null
dd if=/dev/urandom of="$MNT/v" bs=1M count=20 seek=64 conv=notrunc,fsync status=none
wait_log "thin pool 'tp': autoextended from 32.00 MiB to 64.00 MiB" "$mark"
[ "$(mapperctl status tp --json | json_get .size)" -ge $((64 * MiB)) ] || fail "the pool did not grow"
stop_daemon
mapperctl status tp --json | jq -e '.autoextend_threshold == 50 and .metadata_total_bytes == 131072' \
	>/dev/null || fail "the policies did not persist"
mapperctl check >/dev/null || fail "check fails"
