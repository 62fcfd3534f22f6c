#!/usr/bin/env bash
# t520-thin-commits-wait-out-a-locked-database.sh: another process holding
# the pool database's write lock makes thin commits fail; they are retried,
# so an fsync waits the lock out and succeeds.  Held for longer than the
# daemon's patience (10 s), the pool fails writes that need new blocks and
# their fsyncs, and says so, with the reason, in status, list and list
# --json alike; once the lock goes, the pool works
# again by itself: no restart, and every fsync-acknowledged write reads
# back.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq sqlite3

make_pool
add_file_device d0 256M >/dev/null
mapperctl create thin-pool tp --size 128M >/dev/null
mapperctl create thin v --pool tp --size 64M >/dev/null
start_daemon
for i in 0 1 2 3; do head -c $((4 * MiB)) /dev/urandom >data$i; done
dd if=data0 of="$MNT/v" bs=1M conv=notrunc,fsync status=none

# A short outage: the fsync waits for it.
mark=$(log_mark)
hold_db_lock "$POOL/pool.db"
dd if=data1 of="$MNT/v" bs=1M seek=8 conv=notrunc,fsync status=none &
writer=$!
wait_log "thin pool 'tp': metadata commit failed .*retrying" "$mark"
release_db_lock
wait "$writer" || fail "an fsync failed across a short lock"
wait_log "thin pool 'tp': metadata commits work again" "$mark"

# A long outage: past the patience, writes to new blocks fail ...
mark=$(log_mark)
hold_db_lock "$POOL/pool.db"
dd if=data2 of="$MNT/v" bs=1M seek=16 conv=notrunc,fsync status=none 2>/dev/null &
writer=$!
wait_log "thin pool 'tp': metadata commits have failed for" "$mark"
! wait "$writer" || fail "an fsync succeeded while the metadata could not be committed"
[ "$(mapperctl status tp --json | json_get .state)" = failed ] ||
	fail "status does not show the pool failed"
mapperctl status tp --json | json_get .commit_error | grep -q busy ||
	fail "status does not give the cause"
# status, list --json and list agree, with the reason.
why="its metadata commits have failed for [0-9]+ s \\(Device or resource busy\\)"
mapperctl status tp --json | json_get .reason | grep -Eq "^$why" ||
	fail "status gives no reason: $(mapperctl status tp --json)"
mapperctl list --json | jq -e '.[] | select(.name == "tp") | .state == "failed"' >/dev/null ||
	fail "list --json does not show the pool failed"
mapperctl list --json | json_get '.[] | select(.name == "tp") | .reason' | grep -Eq "^$why" ||
	fail "list --json gives no reason: $(mapperctl list --json)"
mapperctl list | grep -Eq "^tp .* failed: $why" || fail "list does not show the pool failed: $(mapperctl list)"
! dd if=data3 of="$MNT/v" bs=1M seek=32 count=1 conv=notrunc,fsync status=none 2>/dev/null ||
	fail "a write to a new block succeeded in a failed pool"
# ... and clear once the lock goes.
mark=$(log_mark)
release_db_lock
wait_log "thin pool 'tp': metadata commits work again" "$mark"
[ "$(mapperctl status tp --json | json_get .state)" = ok ] ||
	fail "the pool is still failed after the lock went"
mapperctl list | grep -Eq "^tp .* ok$" || fail "list shows the pool failed after the lock went"
dd if=data3 of="$MNT/v" bs=1M seek=32 conv=notrunc,fsync status=none ||
	fail "writes fail after the lock went"
cmp data0 <(head -c $((4 * MiB)) "$MNT/v") || fail "data0 (acknowledged) is lost"
cmp data1 <(tail -c +$((8 * MiB + 1)) "$MNT/v" | head -c $((4 * MiB))) ||
	fail "data1 (acknowledged after the short outage) is lost"
cmp data3 <(tail -c +$((32 * MiB + 1)) "$MNT/v" | head -c $((4 * MiB))) ||
	fail "data3 is lost"
stop_daemon
mapperctl check >check.log || { cat check.log >&2; fail "check failed"; }
start_daemon
cmp data1 <(tail -c +$((8 * MiB + 1)) "$MNT/v" | head -c $((4 * MiB))) ||
	fail "data1 is lost after a restart"
