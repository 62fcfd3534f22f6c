#!/usr/bin/env bash
# t070-fsync-and-statfs.sh: fsync, fdatasync and syncfs on volume files
# succeed and the data is then on the raw device; df and stat -f work on
# the mount and report a sane file system.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires xfs_io df jq

make_pool
add_file_device d0 32M >/dev/null
mapperctl create linear v --size 8M
start_daemon

out=$(xfs_io -c "pwrite -q -S 0x5a 0 1m" -c fsync -c "pwrite -q -S 0xa5 1m 1m" -c fdatasync \
	"$MNT/v" 2>&1)
[ -z "$out" ] || fail "xfs_io fsync/fdatasync on v: $out"
sync -f "$MNT/v" || fail "syncfs on the mount failed"
sync -d "$MNT/v" || fail "fdatasync via sync -d failed"
{ head -c "$MiB" /dev/zero | tr '\0' '\132'; head -c "$MiB" /dev/zero | tr '\0' '\245'; } >want
cmp -n $((2 * MiB)) want <(vol_from_devices v) ||
	fail "fsynced data is not on the raw device"

df -P "$MNT" >df.out || fail "df on the mount failed"
[ "$(df --output=fstype "$MNT" | tail -n 1)" = fuse.mapperfs ] || fail "df does not see a fuse.mapperfs mount"
read -r bsize blocks bfree <<<"$(stat -f -c '%S %b %f' "$MNT")"
[ "$bsize" -gt 0 ] || fail "statfs block size is $bsize"
[ "$blocks" -gt 0 ] || fail "statfs reports a file system of $blocks blocks"
[ "$bfree" -le "$blocks" ] || fail "statfs: $bfree free blocks of $blocks"
[ "$(stat -f -c %l "$MNT")" -ge 1 ] || fail "statfs reports no room for a file name"
