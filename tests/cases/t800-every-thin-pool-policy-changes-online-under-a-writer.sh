#!/usr/bin/env bash
# t800-every-thin-pool-policy-changes-online-under-a-writer.sh: `change`
# sets a running thin pool's zeroing, full policy and low-water mark, each
# at once: with zeroing off a first 4 KiB write takes 4 KiB of the raw
# device, with it on the whole block; a full pool that failed a write with
# ENOSPC, switched to wait:30, makes the next writer wait, and `extend`
# lets it finish; switched back to error, a waiting writer fails at once;
# a new low-water mark sets and clears low_water_crossed.  The events
# full and low-water are logged at warning.  The policies persist.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
dev=$(add_file_device d0 64M)
mapperctl create thin-pool tp --size 4M --low-water 10 \
	--on-event "echo \$MAPPERFS_EVENT >>'$T_DIR/events'" >/dev/null	# 64 blocks of 64K
mapperctl create thin v --pool tp --size 16M >/dev/null
start_daemon

head -c $((4 * MiB)) /dev/urandom >data

# policy KEY: the pool's KEY in status --json, which list --json must agree with.
policy()
{
	local s l

	s=$(mapperctl status tp --json | json_get ".$1")
	l=$(mapperctl list --json | json_get --arg k "$1" '.[] | select(.name == "tp") | .[$k]')
	[ "$s" = "$l" ] || fail "status says $1 $s, list --json $l"
	printf '%s\n' "$s"
}
# allocated_kib: what the raw device's backing file takes on disk.
allocated_kib() { echo $(($(stat -c '%b * %B' "$dev") / 1024)); }
# write_block N [COUNT]: writes COUNT (1) whole blocks of v from block N on.
write_block() { dd if=data of="$MNT/v" bs=64K count="${2:-1}" seek="$1" conv=notrunc,fsync status=none; }
# start_writer N: writes block N in the background, its stderr to writer.err.
start_writer()
{
	write_block "$1" 2>writer.err &
	writer=$!
	cleanup_fn kill_if_running "$writer"
}
kill_if_running() { kill "$1" 2>/dev/null || true; }

# Zeroing: the first write of 4 KiB into a block fills the rest of it
# with zeros on the raw device, or leaves it alone.
mapperctl change tp --zero off | grep -q "zero off," || fail "change does not say zero off"
[ "$(policy zero)" = false ] || fail "status does not say zero off"
before=$(allocated_kib)
dd if=data of="$MNT/v" bs=4K count=1 conv=notrunc,fsync status=none
[ $(($(allocated_kib) - before)) -lt 64 ] ||
	fail "with zero off a 4 KiB first write took $(($(allocated_kib) - before)) KiB of the raw device"
mapperctl change tp --zero on >/dev/null
before=$(allocated_kib)
dd if=data of="$MNT/v" bs=4K count=1 seek=16 conv=notrunc,fsync status=none
[ $(($(allocated_kib) - before)) -ge 64 ] ||
	fail "with zero on a 4 KiB first write took $(($(allocated_kib) - before)) KiB, not its block"

# Full with when-full error: the write fails, and the log says so at warning.
mark=$(log_mark)
write_block 2 62 || fail "filling the pool failed"
! write_block 64 2>err || fail "a write past the full pool succeeded"
grep -q "No space left on device" err || fail "the write failed otherwise: $(cat err)"
wait_log "^$LOG_TIME warning: thin pool 'tp': event full$" "$mark"
wait_log "^$LOG_TIME warning: thin pool 'tp': event low-water$" "$mark"

# Switched to wait:30, the next writer waits, and extend lets it finish.
mapperctl change tp --when-full wait:30 | grep -q "when full wait:30," ||
	fail "change does not say when full wait:30"
[ "$(policy when_full) $(policy wait_seconds)" = "wait 30" ] || fail "status does not say wait:30"
mark=$(log_mark)
start_writer 64
wait_log "thin pool 'tp' is full: a write waits up to 30 s for it to grow" "$mark"
kill -0 "$writer" 2>/dev/null || fail "the writer did not wait: $(cat writer.err)"
mapperctl extend tp --size 8M >/dev/null
wait "$writer" || fail "the waiting writer failed after extend: $(cat writer.err)"
cmp <(head -c $((64 * 1024)) data) <(dd if="$MNT/v" bs=64K skip=64 count=1 status=none) ||
	fail "what the waiting writer wrote does not read back"

# 65 of 128 blocks used, 49% free: a mark of 60 is crossed, one of 40 is not.
[ "$(policy low_water_crossed)" = false ] || fail "low water crossed at 49% free with a 10% mark"
mark=$(log_mark)
mapperctl change tp --low-water 60 >/dev/null
[ "$(policy low_water_crossed)" = true ] || fail "a 60% mark at 49% free is not crossed"
[ "$(policy low_water_percent)" -eq 60 ] || fail "status does not show the 60% mark"
wait_log "^$LOG_TIME warning: thin pool 'tp' crossed its low-water mark: 63 of 128 blocks free \(60% mark\)$" "$mark"
wait_log "^$LOG_TIME warning: thin pool 'tp': event low-water$" "$mark"
mapperctl change tp --low-water 40 >/dev/null
[ "$(policy low_water_crossed)" = false ] || fail "a 40% mark at 49% free is still crossed"

# Full again, a writer waits; switched back to error, it fails at once,
# not at the end of its 30 s.
write_block 65 63 || fail "filling the grown pool failed"
mark=$(log_mark)
start_writer 128
wait_log "thin pool 'tp' is full: a write waits up to 30 s for it to grow" "$mark"
start=$SECONDS
mapperctl change tp --when-full error | grep -q "when full error," || fail "change does not say when full error"
! wait "$writer" || fail "the waiting writer succeeded on a full pool"
grep -q "No space left on device" writer.err || fail "the writer failed otherwise: $(cat writer.err)"
[ $((SECONDS - start)) -lt 20 ] || fail "the writer failed only $((SECONDS - start)) s after the change"
[ "$(policy when_full)" = error ] || fail "status does not say when full error"

stop_daemon
[ "$(mapperctl status tp --json | jq -c '[.when_full, .zero, .low_water_percent]')" = '["error",true,40]' ] ||
	fail "the policies did not persist: $(mapperctl status tp --json | jq -c '[.when_full, .zero, .low_water_percent]')"
mapperctl check >/dev/null || fail "check fails"
