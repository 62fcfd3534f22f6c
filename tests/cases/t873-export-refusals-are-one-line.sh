#!/usr/bin/env bash
# t873-export-refusals-are-one-line.sh: export refuses, in one line naming
# what is wrong and changing nothing, a volume that does not exist, a thin
# pool, an inactive volume, a volume exported already, an address another
# export has, a socket path where something is, in a directory that is not
# there, or too long for a socket, a TCP address that is a name or has no
# port, and --unix with --tcp (a usage error, exit 2); unexport refuses a
# volume not exported; remove, rename and deactivate refuse an exported
# volume until it is unexported.  Online and offline alike.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires nbdkit
requires_that nbdkit file --version

make_pool
add_file_device d0 256M >/dev/null
mapperctl create thin-pool tp --size 128M >/dev/null
mapperctl create thin vm --pool tp --size 16M >/dev/null
mapperctl create thin other --pool tp --size 16M >/dev/null
mapperctl snapshot vm snap >/dev/null		# inactive
touch "$T_DIR/taken"

refusals()
{
	expect_fail -s 1 -m "no volume 'nosuch'" mapperctl export nosuch
	expect_fail -s 1 -m "'tp' is a thin pool, not a volume" mapperctl export tp
	expect_fail -s 1 -m "volume 'snap' is inactive" mapperctl export snap
	expect_fail -s 1 -m "volume 'vm' is exported already, on nbd\+unix:///\?socket=$T_DIR/vm.sock" \
		mapperctl export vm --unix "$T_DIR/again.sock"
	expect_fail -s 1 -m "address '$T_DIR/vm.sock' is taken by the export of volume 'vm'" \
		mapperctl export other --unix "$T_DIR/vm.sock"
	expect_fail -s 1 -m "'$T_DIR/taken' exists" mapperctl export other --unix "$T_DIR/taken"
	expect_fail -s 1 -m "no directory for socket '$T_DIR/none/s.sock'" \
		mapperctl export other --unix "$T_DIR/none/s.sock"
	expect_fail -s 1 -m "longer than a socket takes" \
		mapperctl export other --unix "$T_DIR/$(printf 'x%.0s' $(seq 1 120)).sock"
	expect_fail -s 1 -m "invalid TCP address 'localhost:10809'" \
		mapperctl export other --tcp localhost:10809
	expect_fail -s 1 -m "invalid TCP address '127.0.0.1'" mapperctl export other --tcp 127.0.0.1
	expect_fail -s 1 -m "invalid TCP address '127.0.0.1:0'" mapperctl export other --tcp 127.0.0.1:0
	expect_fail -s 2 -m "give one of --unix and --tcp" \
		mapperctl export other --unix "$T_DIR/o.sock" --tcp 127.0.0.1:10809
	expect_fail -s 1 -m "volume 'other' is not exported" mapperctl unexport other
	expect_fail -s 1 -m "no volume 'nosuch'" mapperctl unexport nosuch
	for cmd in "remove vm" "rename vm vm2" "deactivate vm"; do
		# shellcheck disable=SC2086
		expect_fail -s 1 -m "volume 'vm' is exported \(on nbd\+unix:///\?socket=$T_DIR/vm.sock\): unexport it first" \
			mapperctl $cmd
	done
	[ "$(mapperctl list -o name,export_state --noheadings --separator ' ' --select 'name == other')" = "other " ] ||
		fail "a refused export of 'other' left an export"
	[ ! -e "$T_DIR/o.sock" ] && [ -f "$T_DIR/taken" ] || fail "a refused export touched a path"
}

mapperctl export vm --unix "$T_DIR/vm.sock" >/dev/null
refusals				# offline
no_nbdkit_left
start_daemon
refusals				# online

# Once unexported, what was refused works.
mapperctl unexport vm >/dev/null
mapperctl rename vm vm2 >/dev/null || fail "rename refused after unexport"
mapperctl remove vm2 >/dev/null || fail "remove refused after unexport"
