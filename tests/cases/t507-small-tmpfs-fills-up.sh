#!/usr/bin/env bash
# t507-small-tmpfs-fills-up.sh: the fault kit's small_tmpfs is a file
# system of the size asked for: a raw device file on it can be registered
# and served, writes past its size fail with ENOSPC, and it is unmounted
# at the end even though the daemon used it.
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs

small_tmpfs small 4M
[ "$(findmnt -n -o FSTYPE --mountpoint "$T_DIR/small")" = tmpfs ] || fail "small is not a tmpfs"
[ "$(df --output=size -B1 small | tail -1)" -eq $((4 * MiB)) ] || fail "small is not 4 MiB"
if dd if=/dev/zero of=small/big bs=1M count=5 status=none 2>err; then
	fail "5 MiB fit in a 4 MiB tmpfs"
fi
grep -q "No space left on device" err || fail "a full tmpfs said '$(cat err)', not ENOSPC"
rm small/big

# A sparse raw device larger than the file system: writes fail once it is full.
make_pool
mapperctl device add "$T_DIR/small/d0.img" --create 8M --name d0 >/dev/null
mapperctl create linear v --size 6M >/dev/null
start_daemon
if dd if=/dev/urandom of="$MNT/v" bs=1M count=6 conv=notrunc,fsync status=none 2>err; then
	fail "6 MiB of writes fit on a device in a 4 MiB tmpfs"
fi
grep -Eq "No space left on device|Input/output error" err || fail "a write to a full device said '$(cat err)'"
kill -0 "$(daemon_pid)" || fail "the daemon died when its device's file system filled"
