#!/usr/bin/env bash
# t542-dump-of-a-thin-pool-without-volumes-says-so.sh: `mapperctl dump` of
# a thin pool that has no thin volumes writes its superblock alone, as
# thin_dump does of an empty pool (XML that thin_restore and thin_check
# accept, JSON with no devices), exits 0, and says on stderr, in one line,
# that the pool has no thin volumes, offline and online, to standard
# output and with -o; a pool with a volume dumps with nothing on stderr.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq thin_restore thin_check

make_pool
add_file_device d0 64M >/dev/null
mapperctl create thin-pool tp --size 32M >/dev/null
note="mapperctl: dump: thin pool 'tp' has no thin volumes: the dump holds only its superblock"

# dump_empty WHERE ARGS...: the dump succeeds, and its one line on stderr is the note.
dump_empty()
{
	local where=$1

	shift
	mapperctl dump tp "$@" >dump.out 2>dump.err || fail "$where: dump of the empty pool failed: $(cat dump.err)"
	[ "$(cat dump.err)" = "$note" ] || fail "$where: dump said on stderr: '$(cat dump.err)'"
}

# valid_xml FILE: only the superblock, and thin_restore and thin_check take it.
valid_xml()
{
	grep -q '^<superblock .*data_block_size="128" nr_data_blocks="512"' "$1" ||
		fail "no superblock in the dump: $(cat "$1")"
	! grep -q '<device' "$1" || fail "the dump of the empty pool has a device"
	rm -f meta.bin
	truncate -s 4M meta.bin
	thin_restore -i "$1" -o meta.bin >/dev/null || fail "thin_restore refuses the dump: $(cat "$1")"
	thin_check meta.bin >/dev/null 2>&1 || fail "thin_check fails on the restored dump"
}

dump_empty offline
valid_xml dump.out
dump_empty "offline, json" --format json
[ "$(jq '.devices | length' dump.out)" -eq 0 ] || fail "the JSON dump has devices: $(cat dump.out)"
[ "$(jq '.superblock.nr_data_blocks' dump.out)" -eq 512 ] || fail "the JSON dump has no superblock"

start_daemon
dump_empty online
valid_xml dump.out
dump_empty "online, -o" -o empty.xml
[ ! -s dump.out ] || fail "dump -o wrote to standard output"
valid_xml empty.xml

mapperctl create thin v --pool tp --size 8M >/dev/null
mapperctl dump tp >dump.out 2>dump.err || fail "dump of a pool with a volume failed"
[ ! -s dump.err ] || fail "dump of a pool with a volume said: $(cat dump.err)"
grep -q '<device dev_id=' dump.out || fail "the dump has no device for v"
