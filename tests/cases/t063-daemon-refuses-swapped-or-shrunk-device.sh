#!/usr/bin/env bash
# t063-daemon-refuses-swapped-or-shrunk-device.sh: if a raw device file is
# missing, was replaced by another file of the same size (no label), or was
# truncated, the daemon refuses to start with one line naming the device,
# mounts nothing, and does not write to the impostor.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs

make_pool
add_file_device d0 16M >/dev/null
d1=$(add_file_device d1 16M)
mapperctl create linear v --size 24M --on d0,d1
start_daemon
head -c $((24 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=1M conv=notrunc,fsync status=none
stop_daemon
mv "$d1" d1.real

mkdir -p mnt
cleanup_fn _t_undo_daemon "$T_DIR/mnt" ""	# in case it wrongly starts

refused()
{
	expect_fail -m 'd1' mapperfs --pool "$POOL" mnt
	! mountpoint -q mnt || fail "mapperfs mounted with $1"
}

refused "d1 missing"

head -c $((16 * MiB)) /dev/urandom >"$d1"	# same size, no label
sum=$(sha "$d1")
refused "d1 replaced by an unlabelled file"
[ "$(sha "$d1")" = "$sum" ] || fail "mapperfs wrote to the file that replaced d1"

cp d1.real "$d1"				# the right label, but shorter
truncate -s 12M "$d1"
sum=$(sha "$d1")
refused "d1 truncated to 12M"
[ "$(sha "$d1")" = "$sum" ] || fail "mapperfs wrote to the truncated d1"

# With the real device back, it starts and the data is there.
mv -f d1.real "$d1"
start_daemon
cmp data "$MNT/v" || fail "data differs after the real d1 came back"
