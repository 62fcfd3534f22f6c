#!/usr/bin/env bash
# t531-relative-paths-mean-the-callers-directory.sh: with the daemon
# running (in /), a relative path given to mapperctl names a file in
# mapperctl's working directory: a device created there, an origin image
# read from there, a mapping file read from there; nothing lands in the
# daemon's directory or overwrites a file of the same name elsewhere.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 64M >/dev/null
mapperctl create thin-pool tp --size 16M >/dev/null
mapperctl create switch sw --size 4M --region-size 1M --path d0 --path d0 >/dev/null
start_daemon
[ "$(readlink "/proc/$(daemon_pid)/cwd")" = / ] || fail "the daemon did not chdir to /"

mkdir work && cd work
mapperctl device add rel.img --create 8M --name rel >/dev/null
[ -f rel.img ] || fail "device add did not create rel.img in the caller's directory"
[ "$(device_path rel)" = "$T_DIR/work/rel.img" ] || fail "the device is registered at $(device_path rel)"
head -c $((1 * MiB)) /dev/urandom >base.img
mapperctl create thin t --pool tp --size 2M --origin base.img >/dev/null
cmp base.img <(head -c "$MiB" "$MNT/t") || fail "the origin was not read from the caller's directory"
printf '0:1 1:1 2:1 3:1\n' >all-on-1.map
mapperctl switch-map sw --file all-on-1.map >/dev/null
[ "$(mapperctl status sw --json | json_get '.paths[1].regions')" -eq 4 ] ||
	fail "the mapping file was not read from the caller's directory"
[ ! -e /rel.img ] && [ ! -e /base.img ] || fail "a file landed in the daemon's directory"
