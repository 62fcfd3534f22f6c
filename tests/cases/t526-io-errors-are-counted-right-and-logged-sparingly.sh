#!/usr/bin/env bash
# t526-io-errors-are-counted-right-and-logged-sparingly.sh: a write that a
# full thin pool refuses counts as no_space, not as an I/O error; reads
# that fail because a raw device file shrank under the daemon (a file in
# /dev/shm, served from its mapping, and one on disk) reach the reader as
# EIO and count as I/O errors, not as reads; and a device that keeps
# failing writes a few lines a minute to the log, not one per request.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq
[ -d /dev/shm ] || skip "no /dev/shm"

make_pool
shm=$(mktemp -d /dev/shm/mapperfs-t526.XXXXXX)
cleanup_fn rm -rf "$shm"
mapperctl device add "$shm/m0.img" --create 16M --name m0 >/dev/null
disk=$(add_file_device d0 64M)
mapperctl create linear mem --size 8M --on m0 >/dev/null
mapperctl create linear dsk --size 8M --on d0 >/dev/null
mapperctl create thin-pool tp --size 1M --on d0 >/dev/null
mapperctl create thin t --pool tp --size 4M >/dev/null
start_daemon
stat_of() { mapperctl status "$1" --json | json_get ".$2"; }

# A full pool: ENOSPC, counted as such.
! dd if=/dev/zero of="$MNT/t" bs=1M count=2 conv=notrunc,fsync status=none 2>/dev/null ||
	fail "a write past a full pool succeeded"
[ "$(stat_of t no_space)" -ge 1 ] || fail "ENOSPC is not counted as no_space"
[ "$(stat_of t io_errors)" -eq 0 ] || fail "ENOSPC is counted as an I/O error"

# Devices that shrank: EIO, counted as errors, not as reads.
truncate -s 2M "$shm/m0.img"
truncate -s 2M "$disk"
for v in mem dsk; do
	before=$(stat_of "$v" reads)
	! dd if="$MNT/$v" of=/dev/null bs=1M skip=4 count=1 iflag=direct status=none 2>/dev/null ||
		fail "reading past the end of $v's shrunk device succeeded"
	[ "$(stat_of "$v" io_errors)" -ge 1 ] || fail "the failed read of $v is not counted as an error"
	[ "$(stat_of "$v" reads)" -eq "$before" ] || fail "the failed read of $v is counted as a read"
done

# A failing device, read 100 times: the log gets a few lines, and a count.
mark=$(log_mark)
for i in $(seq 1 100); do
	dd if="$MNT/dsk" of=/dev/null bs=4k skip=$((1024 + i)) count=1 iflag=direct status=none 2>/dev/null || true
done
lines=$(tail -c +$((mark + 1)) "$POOL/mapperfs.log" | grep -c "read of .* failed" || true)
[ "$lines" -le 10 ] || fail "$lines log lines for 100 failed reads"
[ "$lines" -ge 1 ] || fail "no log line for 100 failed reads"
