#!/usr/bin/env bash
# t721-qemu-img-resize-shrink-works-where-the-volume-allows-it.sh:
# `qemu-img resize --shrink` of a volume file is refused (EPERM, logged)
# and changes nothing until the administrator allows it on the volume
# (set --allow-shrink on); then it shrinks the volume it has open, as
# reduce does: a thin volume keeps its bytes below the cut, gives its
# blocks past it back to its pool and reads zeros there once grown
# again; a linear volume keeps its first bytes and frees its extents
# past the cut on its device.  A mirror refuses the consent itself, and a
# volume that another file has open the shrink; both change nothing.  The
# consent shows in list and status, survives a restart, is in the
# layout, and off again refuses again; check is clean throughout.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq cmp qemu-img

make_pool
add_file_device d0 128M >/dev/null
add_file_device d1 64M >/dev/null
mapperctl create thin-pool tp --size 64M --block-size 64K --on d0 >/dev/null
mapperctl create thin tv --pool tp --size 32M >/dev/null
mapperctl create linear lv --size 16M --on d0 >/dev/null
mapperctl create linear m --size 8M --mirrors 1 --on d0,d1 >/dev/null
start_daemon
head -c $((32 * MiB)) /dev/urandom >tdata
dd if=tdata of="$MNT/tv" bs=1M conv=notrunc,fsync status=none
head -c $((16 * MiB)) /dev/urandom >ldata
dd if=ldata of="$MNT/lv" bs=1M conv=notrunc,fsync status=none

used() { mapperctl status tp --json | json_get .data_used_bytes; }
free_of() { mapperctl device list --json | json_get --arg d "$1" '.[] | select(.name == $d) | .free'; }
size_in_list() { mapperctl list --json | json_get --arg v "$1" '.[] | select(.name == $v) | .size'; }

# refused NAME SIZE REGEX: qemu-img cannot shrink NAME to SIZE, the log
# says why (REGEX, which starts with the volume's name), and the pool is as
# it was.
refused()
{
	local mark

	mapperctl list --json | jq -S 'map(del(.modified))' >before.json
	mark=$(log_mark)
	expect_fail qemu-img resize -q -f raw --shrink "$MNT/$1" "$2"
	wait_log "info: $3.* \(truncate refused\)$" "$mark"
	mapperctl list --json | jq -S 'map(del(.modified))' | cmp -s before.json - ||
		fail "a refused shrink of '$1' changed the pool"
}

# Not allowed: EPERM, as before, and the log says how to allow it.
[ "$(mapperctl status tv --json | json_get .allow_shrink)" = false ] ||
	fail "a new volume may shrink"
refused tv 8M "volume 'tv' cannot shrink below 32.00 MiB by a truncate unless allowed \('mapperctl set tv --allow-shrink on'\)"
[ "$(size_of "$MNT/tv")" -eq $((32 * MiB)) ] || fail "a refused shrink changed the file's size"
cmp tdata "$MNT/tv" || fail "a refused shrink changed the data"

# Allowed: the thin volume shrinks while qemu-img has it open.
mapperctl set tv --allow-shrink on >out.txt
grep -qx "a truncate of volume 'tv' may shrink it" out.txt || fail "set says: $(cat out.txt)"
[ "$(mapperctl status tv --json | json_get .allow_shrink)" = true ] || fail "status does not say allowed"
[ "$(mapperctl list --noheadings -o allow_shrink -S 'name == tv' | tr -d ' ')" = yes ] ||
	fail "list does not say allowed: $(mapperctl list -o name,allow_shrink)"
[ "$(used)" -eq $((32 * MiB)) ] || fail "the pool uses $(used) bytes before"
qemu-img resize -q -f raw --shrink "$MNT/tv" 8M || fail "qemu-img resize --shrink of an allowed thin volume failed"
[ "$(size_of "$MNT/tv")" -eq $((8 * MiB)) ] || fail "tv's file is $(size_of "$MNT/tv") bytes"
[ "$(size_in_list tv)" -eq $((8 * MiB)) ] || fail "list says tv is $(size_in_list tv) bytes"
cmp -n $((8 * MiB)) tdata "$MNT/tv" || fail "tv's first 8 MiB changed"
[ "$(used)" -eq $((8 * MiB)) ] || fail "the pool uses $(used) bytes after cutting 24 MiB off tv"
grep -q "reduced volume 'tv' to 8.00 MiB (truncate of its file)" "$POOL/mapperfs.log" ||
	fail "the log does not say tv was reduced"
qemu-img resize -q -f raw "$MNT/tv" 16M || fail "qemu-img resize could not grow tv again"
cmp -n $((8 * MiB)) tdata "$MNT/tv" || fail "growing tv again changed its first 8 MiB"
cmp -n $((8 * MiB)) -i $((8 * MiB)):0 "$MNT/tv" /dev/zero || fail "tv reads old data past its old cut"
mapperctl check >/dev/null || fail "check after the thin shrink: $(mapperctl check)"

# A linear volume frees its extents past the cut, but not while another
# file has it open.
mapperctl set lv --allow-shrink on >/dev/null
exec 3<"$MNT/lv"
refused lv 4M "volume 'lv' is open elsewhere"
exec 3<&-
free=$(free_of d0)
qemu-img resize -q -f raw --shrink "$MNT/lv" 4M || fail "qemu-img resize --shrink of an allowed linear volume failed"
[ "$(size_of "$MNT/lv")" -eq $((4 * MiB)) ] || fail "lv's file is $(size_of "$MNT/lv") bytes"
[ "$(size_in_list lv)" -eq $((4 * MiB)) ] || fail "list says lv is $(size_in_list lv) bytes"
cmp -n $((4 * MiB)) ldata "$MNT/lv" || fail "lv's first 4 MiB changed"
[ "$(free_of d0)" -eq $((free + 12 * MiB)) ] || fail "d0 has $(free_of d0) bytes free, was $free"

# A mirror: the consent is refused, since every truncate would be, and
# the refusal says how to get a smaller one; off is no error.
expect_fail -s 1 -m "^mapperctl: .*volume 'm' is a mirror: a truncate cannot shrink it; copy what it holds to a smaller mirror instead: 'mapperctl create linear NEW --size SIZE --mirrors 1'" \
	mapperctl set m --allow-shrink on
[ "$(mapperctl status m --json | json_get .allow_shrink)" = false ] || fail "a refused consent was recorded"
mapperctl set m --allow-shrink off >/dev/null || fail "set --allow-shrink off of a mirror failed"
refused m 4M "volume 'm' cannot shrink below 8.00 MiB by a truncate unless allowed"
[ "$(size_of "$MNT/m")" -eq $((8 * MiB)) ] || fail "a refused shrink changed the mirror's size"

# The consent is recorded: it outlives the daemon, and off takes it back.
stop_daemon
[ "$(mapperctl status tv --json | json_get .allow_shrink)" = true ] || fail "the consent was lost"
mapperctl backup -o now.layout >/dev/null
grep -Eq '^volume .* name=tv .* allow_shrink=1( |$)' now.layout ||
	fail "the layout does not carry tv's consent: $(grep ' name=tv ' now.layout)"
mapperctl set tv --allow-shrink off >/dev/null
start_daemon
refused tv 4M "volume 'tv' cannot shrink below 16.00 MiB"
mapperctl check >/dev/null || fail "check at the end: $(mapperctl check)"
