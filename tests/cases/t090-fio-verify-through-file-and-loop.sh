#!/usr/bin/env bash
# t090-fio-verify-through-file-and-loop.sh: fio writes random data in
# blocks of 4 KiB to 1 MiB from 4 jobs at once, each job in its own
# quarter, with crc32c checksums, and reads every block back clean: once
# through the volume file, once through a direct-I/O loop device on it.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires_loop
requires fio

make_pool
add_file_device d0 40M >/dev/null
add_file_device d1 40M >/dev/null
mapperctl create linear v --size 64M --on d0,d1	# jobs cross the devices
start_daemon

# fio_verify NAME FILE: 4 jobs x 16 MiB, mixed sizes, written then verified.
fio_verify()
{
	fio --name="$1" --filename="$2" --rw=randwrite --bsrange=4k-1m --blockalign=4k \
		--direct=1 --ioengine=libaio --iodepth=8 --numjobs=4 --size=16M \
		--offset_increment=16M --verify=crc32c --verify_fatal=1 \
		--verify_state_save=0 --group_reporting --output="$1.out" ||
		fail "fio $1 on $2 failed: $(tail -5 "$1.out")"
	grep -q "err= 0" "$1.out" || fail "fio $1 reported errors: $(grep err= "$1.out")"
}

fio_verify file "$MNT/v"
dev=$(attach_loop "$MNT/v")
[ "$(loop_dio "$dev")" = 1 ] || fail "$dev fell back to buffered I/O"
fio_verify loop "$dev"
detach_loop "$dev"
log "$(grep -h -E '^ +(READ|WRITE):' file.out loop.out | sed 's/ (.*//' | tr -s ' ' | paste -sd';')"
