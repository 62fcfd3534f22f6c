#!/usr/bin/env bash
# t040-extend-online.sh: extending a volume while the daemon serves it shows
# the new size at once, to a process that holds the file open and to a new
# stat, keeps the old data, and the new range is writable and reads back;
# the log says so in units people read.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 24M >/dev/null
add_file_device d1 40M >/dev/null
mapperctl create linear v --size 16M --on d0
start_daemon

head -c $((16 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=1M conv=notrunc,fsync status=none
stat -c %s "$MNT/v" >/dev/null		# the kernel now caches the old size

# Extended while a process holds it open: the size goes past d0's end, so
# the new part must come (at least partly) from d1.
exec 3<>"$MNT/v"
mapperctl extend v --size 32M
[ "$(size_of "$MNT/v")" -eq $((32 * MiB)) ] ||
	fail "after extend to 32M, stat says $(size_of "$MNT/v")"
[ "$(stat -L -c %s /proc/self/fd/3)" -eq $((32 * MiB)) ] ||
	fail "the open file still has the old size"
[ "$(mapperctl status v --json | json_get .size)" -eq $((32 * MiB)) ] ||
	fail "status does not report 32M"
wait_log "info: extended volume 'v' to 32.00 MiB$"
head -c $((16 * MiB)) /dev/urandom >more
dd if=more bs=1M seek=16 conv=notrunc,fsync status=none >&3	# through the old fd
exec 3>&-
cat data more >want
cmp want "$MNT/v" || fail "old data or the new range is wrong after extend while open"

# Extended with nothing open.
mapperctl extend v --size 40M
[ "$(size_of "$MNT/v")" -eq $((40 * MiB)) ] ||
	fail "after extend to 40M, stat says $(size_of "$MNT/v")"
head -c $((8 * MiB)) /dev/urandom >>want
tail -c $((8 * MiB)) want | dd of="$MNT/v" bs=1M seek=32 iflag=fullblock conv=notrunc,fsync status=none
cmp want "$MNT/v" || fail "data is wrong after extend with the file closed"

# And it all is where the metadata says, also after a restart.
stop_daemon
vol_from_devices v | cmp want - || fail "the raw devices do not hold the extended volume"
start_daemon
cmp want "$MNT/v" || fail "extended volume reads differently after a restart"
