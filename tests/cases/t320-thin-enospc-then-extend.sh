#!/usr/bin/env bash
# t320-thin-enospc-then-extend.sh: a full pool with --when-full error fails
# writes that need a block with ENOSPC at once, keeps what was written,
# still takes overwrites, and takes new writes again after `extend`; with
# wait:N a write waits for the pool to grow.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 64M >/dev/null
mapperctl create thin-pool tp --size 4M --low-water 50 >/dev/null
mapperctl create thin v --pool tp --size 64M >/dev/null
start_daemon

head -c $((4 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=64K conv=notrunc,fsync status=none
if dd if=data of="$MNT/v" bs=64K count=1 seek=100 conv=notrunc,fsync status=none 2>err; then
	fail "write to a full pool succeeded"
fi
grep -q "No space left on device" err || fail "full pool did not answer ENOSPC: $(cat err)"
cmp data <(head -c $((4 * MiB)) "$MNT/v") || fail "data already written changed when the pool filled"
dd if=/dev/zero of="$MNT/v" bs=64K count=1 conv=notrunc,fsync status=none ||
	fail "overwrite of a mapped block failed on a full pool"
[ "$(mapperctl list --json | json_get '.[] | select(.name == "tp") | .low_water_crossed')" = true ] ||
	fail "low-water mark not reported as crossed"

mapperctl extend tp --size 8M >/dev/null
dd if=data of="$MNT/v" bs=64K count=16 seek=100 conv=notrunc,fsync status=none ||
	fail "write after extend failed"
cmp <(head -c $((MiB)) data) <(dd if="$MNT/v" bs=64K skip=100 count=16 status=none) ||
	fail "write after extend does not read back"

# wait:N: a write blocks until the pool grows.
stop_daemon
mapperctl create thin-pool tw --size 1M --when-full wait:30 >/dev/null
mapperctl create thin w --pool tw --size 8M >/dev/null
start_daemon
dd if=/dev/urandom of="$MNT/w" bs=64K count=16 conv=notrunc,fsync status=none
dd if=/dev/urandom of="$MNT/w" bs=64K count=1 seek=20 conv=notrunc,fsync status=none &
writer=$!
# The daemon logs the wait; reading the log as it grows (until the writer
# ends) is the synchronisation, and the writer must still be there then.
grep -q -m1 "is full: a write waits" < <(tail -n +1 -F --pid="$writer" "$POOL/mapperfs.log" 2>/dev/null) ||
	fail "the write did not wait for the full pool to grow"
kill -0 "$writer" 2>/dev/null || fail "the write on a full wait:30 pool did not wait"
mapperctl extend tw --size 2M >/dev/null
wait "$writer" || fail "the waiting write failed after the pool grew"
mapperctl check >check.log || { cat check.log >&2; fail "check failed"; }
