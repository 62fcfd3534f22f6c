#!/usr/bin/env bash
# t310-thin-discard-frees-blocks.sh: punching holes in a thin volume
# (fallocate), blkdiscard on its loop device and fstrim on an ext4 on it
# return whole blocks to the pool; partly covered blocks read zeros where
# discarded; SEEK_DATA/SEEK_HOLE and statfs's block size tell the truth.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires_loop
requires jq mkfs.ext4 fstrim blkdiscard python3

make_pool
add_file_device d0 300M >/dev/null
mapperctl create thin-pool tp --size 256M >/dev/null
mapperctl create thin v --pool tp --size 512M >/dev/null
start_daemon
used() { mapperctl list --json | json_get '.[] | select(.name == "tp") | .data_used_bytes'; }

[ "$(stat -f -c %s "$MNT")" -eq 65536 ] || fail "statfs block size is not the thin block size"

head -c $((8 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=1M conv=notrunc,fsync status=none
[ "$(used)" -eq $((8 * MiB)) ] || fail "8 MiB written, pool uses $(used)"
# Half a block at each end: 2 MiB + 64 KiB from mid-block covers 2 MiB of
# whole blocks (17..48); the half blocks around are zeroed, not freed.
fallocate -p -o $((MiB + 32768)) -l $((2 * MiB + 65536)) "$MNT/v"
[ "$(used)" -eq $((6 * MiB)) ] || fail "punch left the pool using $(used)"
cp data want
dd if=/dev/zero of=want bs=1 seek=$((MiB + 32768)) count=$((2 * MiB + 65536)) conv=notrunc status=none
cmp want <(head -c $((8 * MiB)) "$MNT/v") || fail "punched range does not read zeros, or too much was punched"

python3 - "$MNT/v" <<'PY' || fail "SEEK_DATA/SEEK_HOLE disagree with the map"
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
M = 1 << 20
assert os.lseek(fd, 0, os.SEEK_HOLE) == M + 65536, os.lseek(fd, 0, os.SEEK_HOLE)
assert os.lseek(fd, M + 65536, os.SEEK_DATA) == 3 * M + 65536
assert os.lseek(fd, 8 * M, os.SEEK_HOLE) == 8 * M
try:
    os.lseek(fd, 8 * M, os.SEEK_DATA)
    sys.exit(1)
except OSError:
    pass
PY

dev=$(attach_loop "$MNT/v")
blkdiscard "$dev"
detach_loop "$dev"
[ "$(used)" -eq 0 ] || fail "blkdiscard left the pool using $(used)"

dev=$(attach_loop "$MNT/v")
mkfs.ext4 -q -F -E nodiscard "$dev"
mount_fs "$dev" fs
head -c $((64 * MiB)) /dev/urandom >fs/big
sync
before=$(used)
rm fs/big
sync				# ext4 frees the blocks at its journal commit
fstrim fs
after=$(used)
[ "$after" -lt $((before - 48 * MiB)) ] || fail "fstrim freed too little: $before -> $after"
mapperctl check >check.log || { cat check.log >&2; fail "check failed"; }
