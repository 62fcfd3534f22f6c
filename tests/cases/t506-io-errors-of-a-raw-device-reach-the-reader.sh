#!/usr/bin/env bash
# t506-io-errors-of-a-raw-device-reach-the-reader.sh: the fault kit's
# nbd_device under a served volume.  While the device fails every request,
# a read of the volume gets EIO at once (no hang, no crash, no wrong
# data), the daemon keeps serving the volumes on other devices, and once
# the device heals the same read returns the data; a delayed device is
# slow but right.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs
requires nbdkit nbdfuse

make_pool
bad=$(nbd_device bad 32M)
# 200 ms, not 1 s: every admin command reads the devices' labels (nine
# reads each here), and a second's delay made this test 90 s long.
slow=$(nbd_device slow 32M delay-read=200ms)
mapperctl device add "$bad" --name bad >/dev/null
mapperctl device add "$slow" --name slow >/dev/null
add_file_device good 32M >/dev/null
mapperctl create linear v --size 8M --on bad >/dev/null
mapperctl create linear s --size 4M --on slow >/dev/null
mapperctl create linear g --size 8M --on good >/dev/null
start_daemon
head -c $((8 * MiB)) /dev/urandom >data
for vol in v g; do
	dd if=data of="$MNT/$vol" bs=1M conv=notrunc,fsync status=none
done
# Reads must reach nbdkit, not a page cache on the way.
dd if="$bad" iflag=nocache count=0 status=none

nbd_fail bad
if out=$(timeout 10 dd if="$MNT/v" bs=1M count=1 status=none 2>&1 >/dev/null); then
	fail "a read of a volume on a failing device succeeded"
fi
[[ $out == *"Input/output error"* ]] || fail "a read on a failing device said '$out', not EIO"
cmp data "$MNT/g" || fail "the volume on a good device was harmed by the failing one"
kill -0 "$(daemon_pid)" || fail "the daemon died on a device error"

nbd_heal bad
cmp data "$MNT/v" || fail "once healed, the device does not read back its data"

head -c $MiB /dev/urandom >sdata
dd if=sdata of="$MNT/s" bs=1M conv=notrunc,fsync status=none
dd if="$slow" iflag=nocache count=0 status=none
start=$(date +%s%N)		# one 4 KiB read: each request to it waits 200 ms
cmp <(head -c 4096 sdata) <(dd if="$MNT/s" bs=4k count=1 iflag=direct status=none) ||
	fail "the delayed device read back wrong data"
# A lower bound the filter guarantees, not a performance figure.
[ $(($(date +%s%N) - start)) -ge 200000000 ] || fail "delay-read=200ms did not delay the read"
