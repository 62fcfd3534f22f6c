#!/usr/bin/env bash
# t051-free-space-shown-can-be-allocated-to-the-byte.sh: the free space
# `device list` shows is what allocation can take, LVM's way (an extent
# starts on a MiB boundary and takes the rest of its last MiB): after six
# 4 KiB volumes, a volume of exactly the free space is created, a larger
# one is refused naming that same figure, and the device is then full
# (0 free, nothing more allocates), online as offline (statfs agrees).
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d7 32M >/dev/null
for i in 1 2 3 4 5 6; do
	mapperctl create linear "l$i" --size 4K >/dev/null
done
free_of() { mapperctl device list --json | json_get '.[] | select(.name == "d7") | .free'; }

free=$(free_of)
[ "$free" -eq $((25 * MiB)) ] || fail "d7 has $free bytes free after six 4 KiB volumes, not 25 MiB"
mapperctl device list | grep -q "^d7 .* 6.00 MiB  25.00 MiB  ok$" ||
	fail "device list shows: $(mapperctl device list)"
expect_fail -s 1 -m "not enough free space for $((free + 4096)) bytes on device\(s\) d7 \($free bytes free\)" \
	mapperctl create linear big --size $((free + 4096))
mapperctl create linear part --size 23M >/dev/null
free=$(free_of)
[ "$free" -eq $((2 * MiB)) ] || fail "d7 has $free bytes free after 23 MiB more, not 2 MiB"

start_daemon
df_free=$(($(stat -f -c %a "$MNT") * $(stat -f -c %S "$MNT")))
[ "$df_free" -eq "$free" ] || fail "statfs says $df_free bytes are free, device list $free"
expect_fail -s 1 -m "on device\(s\) d7 \(2.00 MiB free\)" mapperctl create linear big --size 3M
mapperctl create linear rest --size "$free" >/dev/null || fail "the $free bytes said free could not be allocated"
[ "$(free_of)" -eq 0 ] || fail "d7 still has $(free_of) bytes free after all of it was allocated"
expect_fail -s 1 -m "not enough free space for 4.00 KiB on device\(s\) d7 \(0 B free\)" \
	mapperctl create linear more --size 4K
# The volume that ends inside a MiB grows into the rest of it, and only it.
mapperctl extend rest --size $((free + MiB)) >/dev/null 2>&1 &&
	fail "a volume grew past the end of a full device"
mapperctl extend l1 --size 1M >/dev/null || fail "l1 cannot grow into the rest of its MiB"
