#!/usr/bin/env bash
# t831-fio-verifies-a-striped-volume-through-file-and-loop.sh: fio writes
# random data in blocks of 4 KiB to 1 MiB, most of them across chunk
# edges, from 4 jobs at once onto a volume striped over 4 devices in
# 16 KiB chunks, with crc32c checksums, and reads every block back clean:
# through the volume file, and through a direct-I/O loop device on it.
# Then the raw devices hold each stripe's chunks (what the file reads
# chunk by chunk, the devices give back de-interleaved).
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires_loop
requires fio cmp

make_pool
for d in 0 1 2 3; do
	add_file_device "d$d" 24M >/dev/null
done
mapperctl create linear v --size 64M --stripes 4 --stripe-size 16K >/dev/null
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

# Stripe k is chunks k, k + 4, k + 8 ... of the volume, on device dk.
for k in 0 1 2 3; do
	off=$(mapperctl status v --json | json_get ".segments[] | select(.stripe == $k) | .offset")
	read_raw "$(device_path "d$k")" "$off" $((16 * MiB)) >"raw$k"
	python3 - "$MNT/v" "$k" >"vol$k" <<'PY'
import sys
k, chunk = int(sys.argv[2]), 16384
with open(sys.argv[1], "rb") as f:
    data = f.read()
out = sys.stdout.buffer
for c in range(k, len(data) // chunk, 4):
    out.write(data[c * chunk:(c + 1) * chunk])
PY
	cmp "vol$k" "raw$k" || fail "stripe $k on d$k is not chunks $k mod 4 of the volume"
done
mapperctl check v >/dev/null || fail "check: $(mapperctl check v)"
log "$(grep -h -E '^ +(READ|WRITE):' file.out loop.out | sed 's/ (.*//' | tr -s ' ' | paste -sd';')"
