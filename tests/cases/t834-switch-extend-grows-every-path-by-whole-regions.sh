#!/usr/bin/env bash
# t834-switch-extend-grows-every-path-by-whole-regions.sh: extending a
# switch volume online rounds the size up to whole regions, keeps every
# old region on its path and the bytes on it, maps the new regions
# round-robin (region r on path r mod N, as at create), and the new bytes
# land at each path's offset + x on its device; owned paths' extents grow
# (device list counts them), paths placed at one offset (multipath) grow
# together; a path with no room after it is refused in one line naming
# its device, and nothing changes; all of it survives a restart.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq cmp

make_pool
add_file_device d0 64M >/dev/null
add_file_device d1 64M >/dev/null
add_file_device d2 64M >/dev/null
mapperctl create switch sw --size 8M --region-size 1M --path d0 --path d1 >/dev/null
mapperctl create switch mp --size 4M --region-size 1M --path d2:40M --path d2:40M >/dev/null
start_daemon
mapperctl switch-map sw 0:1 :0 >/dev/null	# regions 0 and 1 swapped
head -c $((8 * MiB)) /dev/urandom >data
dd if=data of="$MNT/sw" bs=1M conv=notrunc,fsync status=none

used_d0=$(mapperctl device list --json | json_get '.[] | select(.name == "d0") | .used')
mapperctl extend sw --size 11.5M >out.txt
grep -qx "extended volume 'sw' to 12.00 MiB (11.50 MiB rounded up to whole regions)" out.txt ||
	fail "extend says: $(cat out.txt)"
[ "$(size_of "$MNT/sw")" -eq $((12 * MiB)) ] || fail "sw is $(size_of "$MNT/sw") bytes"
cmp -n $((8 * MiB)) data "$MNT/sw" || fail "the old regions changed"
[ "$(mapperctl device list --json | json_get '.[] | select(.name == "d0") | .used')" -eq \
	$((used_d0 + 4 * MiB)) ] || fail "path 0's extent did not grow by 4 MiB"
mapperctl switch-map sw --dump >map.txt
[ "$(mapperctl status sw --json | jq -c '[.paths[].regions]')" = "[6,6]" ] ||
	fail "the table is now: $(tr '\n' ' ' <map.txt)"

# The new regions: region r (8..11) on path r mod 2, byte x at offset + x.
head -c $((4 * MiB)) /dev/urandom >more
dd if=more of="$MNT/sw" bs=1M seek=8 conv=notrunc,fsync status=none
for r in 8 9 10 11; do
	p=$((r % 2))
	off=$(mapperctl status sw --json | json_get ".paths[$p].offset")
	read_raw "$(device_path "d$p")" $((off + r * MiB)) "$MiB" >got
	cmp got <(dd if=more bs=1M skip=$((r - 8)) count=1 status=none) ||
		fail "region $r is not on path $p at its offset"
done

mapperctl extend mp --size 6M >/dev/null || fail "paths placed at one offset do not grow together"
mapperctl create linear blocker --size 1M --on d1 >/dev/null	# right after path 1's end
mapperctl list --json | jq -S 'map(del(.modified))' >before.json
expect_fail -s 1 -m "path 1 of 'sw' cannot grow by 4.00 MiB: on device 'd1' volume 'blocker' lies right after it" \
	mapperctl extend sw --size 16M
mapperctl list --json | jq -S 'map(del(.modified))' | cmp -s before.json - || fail "the refusal changed the pool"
expect_fail -s 1 -m "--on does not apply to switch volume 'sw'" mapperctl extend sw --size 16M --on d2
mapperctl check >/dev/null || fail "check: $(mapperctl check)"

stop_daemon
start_daemon
cmp -n $((8 * MiB)) data "$MNT/sw" || fail "the old regions read otherwise after a restart"
cmp -n $((4 * MiB)) -i $((8 * MiB)):0 "$MNT/sw" more || fail "the new regions read otherwise after a restart"
[ "$(mapperctl status sw --json | json_get .region_count)" -eq 12 ] || fail "region count after a restart"
