#!/usr/bin/env bash
# t835-device-remove-names-every-volume-on-the-device.sh: removing a
# device that volumes use is refused in one line that names every one of
# them (a thin pool as such, a striped volume, a switch path placed by
# hand) and says how many, not only the first; one user keeps the old
# sentence; with dozens of users the line stays one line and counts the
# names it leaves out; once they are gone the device goes.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 256M >/dev/null
add_file_device d1 64M >/dev/null
add_file_device d2 64M >/dev/null
mapperctl create linear a --size 4M --on d0 >/dev/null
mapperctl create thin-pool tp --size 8M --on d0 >/dev/null
mapperctl create linear s --size 4M --stripes 2 --on d0,d1 >/dev/null
mapperctl create switch sw --size 2M --region-size 1M --path d0:200M --path d2 >/dev/null
mapperctl create linear b --size 4M --on d1 >/dev/null

expect_fail -s 1 -m "^mapperctl: device remove: device 'd0' is in use by 4 volumes: 'a', thin pool 'tp', 's' and 'sw'$" \
	mapperctl device remove d0
expect_fail -s 1 -m "^mapperctl: device remove: device 'd1' is in use by 2 volumes: 's' and 'b'$" \
	mapperctl device remove d1
expect_fail -s 1 -m "^mapperctl: device remove: device 'd2' is in use by volume 'sw'$" \
	mapperctl device remove d2

for i in $(seq 1 60); do
	mapperctl create linear "a-rather-long-volume-name-$i" --size 1M --on d0 >/dev/null
done
expect_fail -s 1 -m "is in use by 64 volumes: 'a', thin pool 'tp', 's', 'sw', 'a-rather-long-volume-name-1', .* and [0-9]+ more$" \
	mapperctl device remove d0

mapperctl remove sw >/dev/null
mapperctl device remove d2 >/dev/null || fail "d2 was not removed once its last user was"
mapperctl device list --json | jq -e 'map(.name) | index("d2") == null' >/dev/null ||
	fail "d2 is still listed"
