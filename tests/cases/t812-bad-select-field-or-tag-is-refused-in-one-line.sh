#!/usr/bin/env bash
# t812-bad-select-field-or-tag-is-refused-in-one-line.sh: a --select that
# does not parse, a field no report has (in -o, --sort or --select), an
# unknown --units and a tag that breaks LVM's rule are each refused in one
# line naming what is wrong, with exit status 1, printing nothing on
# stdout and changing nothing; online (through the daemon) and offline.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs

make_pool
add_file_device d0 64M >/dev/null
mapperctl create linear v --size 4M >/dev/null

refusals()
{
	expect_fail -s 1 -m "invalid --select 'size > 1Q': invalid size '1Q' for field 'size'" \
		mapperctl list --select 'size > 1Q'
	[ ! -s "$T_DIR/.stdout" ] || fail "a refused list printed: $(cat "$T_DIR/.stdout")"
	expect_fail -s 1 -m "unknown field 'sise'" mapperctl list --select 'sise > 1G && @vm'
	expect_fail -s 1 -m "')' expected at the end" mapperctl list --select '(@vm || @db'
	expect_fail -s 1 -m "unexpected '@db'" mapperctl list --select '@vm @db'
	expect_fail -s 1 -m "unknown field 'bogus' in -o" mapperctl list -o name,bogus
	[ ! -s "$T_DIR/.stdout" ] || fail "a refused -o printed: $(cat "$T_DIR/.stdout")"
	expect_fail -s 1 -m "unknown field 'nope' in --sort" mapperctl list --sort -nope
	expect_fail -s 1 -m "unknown --units 'q'" mapperctl list --units q
	expect_fail -s 1 -m "unknown field 'path' in -o" mapperctl list -o path --json
	expect_fail -s 1 -m "unknown field 'kind' in -o" mapperctl device list -o kind
	expect_fail -s 1 -m "invalid --select" mapperctl device list --select 'free >'
	expect_fail -s 2 -m "needs a value|requires an argument" mapperctl list -o
	expect_fail -s 1 -m "invalid tag 'has space'" mapperctl set v --addtag 'has space'
	expect_fail -s 1 -m "invalid tag 'a/b'" mapperctl device set d0 --deltag a/b
	expect_fail -s 1 -m "invalid tag '$(printf 'x%.0s' $(seq 129))'" \
		mapperctl set v --addtag "$(printf 'x%.0s' $(seq 129))"
	expect_fail -s 1 -m "no volume 'w'" mapperctl set w --addtag vm
	expect_fail -s 1 -m "no device 'd9'" mapperctl device set d9 --addtag vm
	expect_fail -s 2 -m "nothing to set" mapperctl device set d0
	mapperctl set v --addtag "$(printf 'y%.0s' $(seq 128))" >/dev/null ||
		fail "a tag of 128 characters was refused"
	mapperctl set v --deltag "$(printf 'y%.0s' $(seq 128))" >/dev/null
	[ -z "$(mapperctl list -o tags --noheadings | tr -d ' ')" ] ||
		fail "a refused tag was recorded: $(mapperctl list -o tags)"
}

refusals
start_daemon
refusals
