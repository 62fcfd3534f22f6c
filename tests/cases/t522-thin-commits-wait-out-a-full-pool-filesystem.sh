#!/usr/bin/env bash
# t522-thin-commits-wait-out-a-full-pool-filesystem.sh: the file system
# holding the pool database fills up; thin commits fail with ENOSPC and are
# retried, so a writer's fsync waits; once space is freed, the commit goes
# through, the fsync succeeds and every acknowledged write reads back, with
# no restart.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires fallocate jq

# The pool on a tiny tmpfs, the raw device outside it.
mkdir -p small
mount -t tmpfs -o size=4m,mode=0700 mapperfs-test small || skip "cannot mount a tmpfs"
cleanup_fn _t_undo_mount "$T_DIR/small"
make_pool "$T_DIR/small/pool"
add_file_device d0 256M >/dev/null
mapperctl create thin-pool tp --size 128M >/dev/null
mapperctl create thin v --pool tp --size 64M >/dev/null
start_daemon
head -c $((4 * MiB)) /dev/urandom >data0
head -c $((4 * MiB)) /dev/urandom >data1
dd if=data0 of="$MNT/v" bs=1M conv=notrunc,fsync status=none

# The log keeps room for its lines; the database gets none.
fallocate -n -l 256K "$POOL/mapperfs.log"
fallocate -l "$(df -B1 --output=avail small | tail -1)" small/filler ||
	fail "cannot fill the pool's file system"
[ "$(df -B1 --output=avail small | tail -1)" -eq 0 ] || fail "the pool's file system is not full"
mark=$(log_mark)
dd if=data1 of="$MNT/v" bs=1M seek=16 conv=notrunc,fsync status=none &
writer=$!
wait_log "thin pool 'tp': metadata commit failed .*(No space left|Input/output)" "$mark"
rm small/filler
wait "$writer" || fail "the fsync failed although space came back"
wait_log "thin pool 'tp': metadata commits work again" "$mark"
cmp data0 <(head -c $((4 * MiB)) "$MNT/v") || fail "data0 is lost"
cmp data1 <(tail -c +$((16 * MiB + 1)) "$MNT/v" | head -c $((4 * MiB))) || fail "data1 is lost"
stop_daemon
mapperctl check >check.log || { cat check.log >&2; fail "check failed"; }
start_daemon
cmp data1 <(tail -c +$((16 * MiB + 1)) "$MNT/v" | head -c $((4 * MiB))) ||
	fail "data1 is lost after a restart"
