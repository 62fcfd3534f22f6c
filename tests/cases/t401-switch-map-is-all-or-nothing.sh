#!/usr/bin/env bash
# t401-switch-map-is-all-or-nothing.sh: a switch-map message with one bad
# argument anywhere is refused with a one-line error that names that
# argument, and leaves the table exactly as it was, both offline and
# through the daemon; create switch refuses bad paths and sizes.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs

make_pool
add_file_device d0 16M >/dev/null
add_file_device d1 16M >/dev/null
mapperctl create switch s --size 4M --region-size 256K --path d0:0 --path d1:0 >/dev/null
mapperctl switch-map s 0:1 :0 R2,e >/dev/null
before=$(mapperctl switch-map s --dump)

refused()
{
	expect_fail -s 1 -m "$1" mapperctl switch-map s "${@:2}"
	[ "$(mapperctl switch-map s --dump)" = "$before" ] ||
		fail "switch-map s ${*:2} was refused but changed the table"
}

check_refusals()
{
	refused "argument 3 ':2': path 0x2 does not exist" 0:0 :0 :2 :0
	refused "argument 2 '10:1': region 0x10 is past the last" 0:0 10:1
	refused "argument 3 'R3,1': repeats 3 regions but only 2" 0:0 :1 R3,1 :0
	refused "argument 2 'R1,f': writes up to region 0x10" 1:0 R1,f
	refused "argument 1 '0x1:1': numbers are hexadecimal" 0x1:1
	refused "argument 2 '1:1z'" 0:0 1:1z
	refused "argument 1 '0:10000000000000000': the path does not fit 64 bits" \
		0:10000000000000000
	expect_fail -s 1 -m "volume 'nope'" mapperctl switch-map nope 0:1
	expect_fail -s 2 -m "missing the mappings" mapperctl switch-map s
	printf '0:1\n:1\n:9\n' >bad.map
	refused "argument 3 ':9'" --file bad.map
}

check_refusals
start_daemon
check_refusals

expect_fail -s 2 -m "need 2 to 256 --path" \
	mapperctl create switch t --size 4M --region-size 1M --path d0
expect_fail -s 1 -m "path 'd1:13M' runs past the end of device 'd1'" \
	mapperctl create switch t --size 4M --region-size 1M --path d0:4M --path d1:13M
expect_fail -s 1 -m "no device 'd9'" \
	mapperctl create switch t --size 4M --region-size 1M --path d0:4M --path d9
expect_fail -s 1 -m "not a multiple of 4 KiB" \
	mapperctl create switch t --size 4M --region-size 1000 --path d0:0 --path d1:0
expect_fail -s 1 -m "has no 16.00 MiB free in one piece" \
	mapperctl create switch t --size 16M --region-size 1M --path d0 --path d1
[ ! -e "$MNT/t" ] || fail "a refused create switch left a volume 't'"
