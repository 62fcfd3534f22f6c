#!/usr/bin/env bash
# t060-cli-rejects-bad-input.sh: every malformed or impossible request gets
# a one-line error on stderr that starts with "mapperctl:", a non-zero exit
# (2 for usage errors), and changes nothing in the pool.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 32M >/dev/null
add_file_device d1 32M >/dev/null
mapperctl create linear v --segment d0:0:8M
mapperctl create linear w --size 8M --on d1

snapshot() { { mapperctl list --json; mapperctl device list --json; } | jq -S . ; }
snapshot >before

# rejects [-s STATUS] [-m REGEX] ARGS...: mapperctl ARGS must fail cleanly,
# with a message matching REGEX (after "mapperctl: "), changing nothing.
rejects()
{
	local status=() regex=''

	[ "$1" != -s ] || { status=(-s "$2"); shift 2; }
	[ "$1" != -m ] || { regex=$2; shift 2; }
	expect_fail "${status[@]}" -m "^mapperctl: .*$regex" mapperctl "$@"
	snapshot | cmp -s before - || fail "'mapperctl $*' failed but changed the pool"
}

rejects -s 2 -m frobnicate frobnicate
rejects -s 2 -m frobnicate list --frobnicate
rejects -s 2 -m frobnicate create linear x --size 8M --frobnicate
rejects -s 2 create linear x				# no size, no segment
rejects -s 2 -m wobbly create wobbly x --size 8M	# unknown kind
for size in 0 -1 abc 1Q 99999999999T 1.3K ''; do
	rejects -m size create linear x --size "$size"
done
for name in a/b .. . '' "$(printf 'a\nb')"; do
	rejects -m name create linear "$name" --size 1M
done
rejects -m "'v'" create linear v --size 1M			# duplicate name
rejects -m d0 create linear x --segment d0:28M:8M		# past the end (31M data)
rejects -m d0 create linear x --segment d0:31M:1M		# starts at the end
rejects -m "'v'" create linear x --segment d0:4M:8M		# overlaps v
rejects -m overlap create linear x --segment d0:10M:2M --segment d0:11M:2M
rejects -m nosuchdev create linear x --segment nosuchdev:0:1M
rejects -m space create linear x --size 60M			# 46M free in all
rejects -m space create linear x --size 30M --on d1		# 23M free on d1
rejects extend v --size 4M					# shrinking is not extending
rejects -m space extend v --size 100M
rejects -m nosuchvol extend nosuchvol --size 100M
rejects -m nosuchvol remove nosuchvol
rejects -m nosuchvol status nosuchvol
rejects -m d0 device add "$T_DIR/devices/d0.img"		# already registered
rejects -m d9 device add "$T_DIR/devices/d9.img" --create 512K	# smaller than its label
rejects -m nosuchfile device add "$T_DIR/nosuchfile"
rejects -m "'v'" device remove d0				# v lives on it

expect_fail -m "^mapperctl: .*$T_DIR/nosuchpool" mapperctl --pool "$T_DIR/nosuchpool" list
expect_fail -m '^mapperctl: ' mapperctl init			# pool exists already
snapshot | cmp -s before - || fail "a failed init changed the pool"

# And the pool still works.
mapperctl create linear x --size 1M
[ "$(mapperctl list --json | jq length)" -eq 3 ] || fail "cannot create a volume after the errors"
