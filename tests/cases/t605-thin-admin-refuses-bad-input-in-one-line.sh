#!/usr/bin/env bash
# t605-thin-admin-refuses-bad-input-in-one-line.sh: restore refuses XML
# that is not thin_dump's, does not fit the pool or breaks mapperfs's
# sharing rule, each in one line naming what is wrong, and changes
# nothing; dump, repair, trim and change refuse what they cannot do; a
# value out of range is refused with the one range that holds.  list
# --help and docs/cli.md name every key of list --json.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 64M >/dev/null
mapperctl create thin-pool tp --size 16M >/dev/null		# 256 blocks of 64 KiB
mapperctl create linear lin --size 4M >/dev/null

sb='<superblock uuid="" time="1" transaction="1" flags="0" version="2" data_block_size="128" nr_data_blocks="256">'
xml() { printf '%s\n%s\n</superblock>\n' "$sb" "$1" >in.xml; }
restore_fails() { expect_fail -s 1 -m "$1" mapperctl restore tp --from in.xml; }

printf '<superblock data_block_size="128" nr_data_blocks="1000">\n<device dev_id="1"><single_mapping origin_block="0" data_block="256"/></device>\n</superblock>\n' >in.xml
restore_fails "device 1 maps data block 256, past the end of thin pool 'tp' \(256 blocks\): extend it first"
printf '<superblock data_block_size="128" nr_data_blocks="4">\n<device dev_id="1"><single_mapping origin_block="0" data_block="5"/></device>\n</superblock>\n' >in.xml
restore_fails "device 1 maps data block 5, past the dump's own end \(nr_data_blocks 4\)"
xml '<device dev_id="1"><single_mapping origin_block="0" data_block="5" time="0"/></device>
<device dev_id="2"><single_mapping origin_block="1" data_block="5" time="0"/></device>'
restore_fails "data block 5 is mapped at virtual blocks 0 and 1"
xml '<device dev_id="1"><range_mapping origin_begin="0" data_begin="0" length="4" time="0"/>
<single_mapping origin_block="2" data_block="9" time="0"/></device>'
restore_fails "device 1 maps virtual block 2 twice"
xml '<device dev_id="1"/><device dev_id="1"/>'
restore_fails "dev_id 1 appears twice"
xml '<device dev_id="1" name="lin" size="65536"/>'
restore_fails "volume 'lin' exists"
xml '<device dev_id="1" name="x" size="1000"/>'
restore_fails "size 1000 is not a positive multiple of 4 KiB"
xml '<device dev_id="1"><single_mapping origin_block="0" data_block="0"/>'
restore_fails "cannot read the dump: line 3: mismatched tag"
printf '<superblock data_block_size="256" nr_data_blocks="10"/>\n' >in.xml
restore_fails "the dump has blocks of 131072 bytes, thin pool 'tp' of 65536"
printf 'not xml\n' >in.xml
restore_fails "cannot read the dump: line 1: syntax error"
printf '  {"superblock": {"data_block_size": 128}, "devices": []}\n' >in.xml
restore_fails "cannot read the dump: it is JSON: restore reads the XML of 'mapperctl dump --format xml' or thin_dump$"
# thin_dump's XML has no sizes: a device that maps nothing needs one given.
xml '<device dev_id="1"/>'
restore_fails "device 1 has no size and maps nothing: give its size with --volume 1:NAME:SIZE$"
mapperctl restore tp --from in.xml --dry-run --volume 1:x:8M | grep -q "would create thin volume 'x' (the dump's dev_id 1): 8388608 bytes, 0 mapped blocks$" ||
	fail "a size given does not take"
xml '<device dev_id="1"><single_mapping origin_block="9" data_block="0"/></device>
<device dev_id="2" snapshot_of="7" size="65536"/>'
restore_fails "device 2 is a snapshot of device 7, which the dump does not have"
# One device's size comes from its mappings, and restore says so; a dump
# of a larger pool fits when its mappings do.  (The pool's data was never
# written: its block 200 is a hole, mapped with --force only.)
printf '<superblock data_block_size="128" nr_data_blocks="1000">\n<device dev_id="1"><single_mapping origin_block="9" data_block="200"/></device>\n</superblock>\n' >in.xml
mapperctl restore tp --from in.xml --dry-run --force >dry.txt || fail "a larger pool's dump whose mappings fit was refused"
grep -q "^the dump's pool has 1000 data blocks, thin pool 'tp' 256: every mapping fits$" dry.txt ||
	fail "restore does not say the dump's pool is larger: $(cat dry.txt)"
grep -q "^would create thin volume 'thin1' (the dump's dev_id 1): 655360 bytes (the end of its last mapping: the dump has no size), 1 mapped blocks$" dry.txt ||
	fail "restore does not say where the size comes from: $(cat dry.txt)"
expect_fail -s 1 -m "--volume: dev_id 1 is given twice$" \
	mapperctl restore tp --from in.xml --volume 1:x --volume 1:y
expect_fail -s 1 -m "--volume: name 'x' is given twice$" \
	mapperctl restore tp --from in.xml --volume 1:x --volume 2:x
expect_fail -s 1 -m "cannot read '.*/nosuch.xml': No such file" mapperctl restore tp --from nosuch.xml
expect_fail -s 2 -m "missing --from" mapperctl restore tp
expect_fail -s 1 -m "--volume 'x': use DEV_ID:NAME" mapperctl restore tp --from in.xml --volume x
expect_fail -s 1 -m "volume 'lin' is a linear volume, not a thin pool" mapperctl restore lin --from in.xml
[ "$(mapperctl list --json | jq length)" -eq 2 ] || fail "a refused restore created volumes"

expect_fail -s 1 -m "no volume 'nosuch'" mapperctl dump nosuch
expect_fail -s 1 -m "unknown --format 'yaml'" mapperctl dump tp --format yaml
expect_fail -s 1 -m "volume 'lin' is a linear volume, not a thin pool" mapperctl repair lin
expect_fail -s 1 -m "volume 'lin' is a linear volume, not a thin pool" mapperctl trim lin
# A value out of range says the real range, whichever side it is on.
for t in 120 30; do
	expect_fail -s 1 -m "autoextend threshold '$t' must be a percentage 50..100$" \
		mapperctl change tp --autoextend-threshold "$t"
	expect_fail -s 1 -m "autoextend threshold '$t' must be a percentage 50..100$" \
		mapperctl create thin-pool tp2 --size 8M --autoextend-threshold "$t"
done
for n in -5 0 16777217; do
	expect_fail -s 1 -m "--max-thins '$n' must be a number 1..16777216$" \
		mapperctl thin-metadata-size --block-size 64K --pool-size 1G --max-thins "$n"
done
expect_fail -s 1 -m "a thin pool would have more than 2\^28 blocks: with 64.00 KiB blocks it is at most 16.00 TiB$" \
	mapperctl thin-metadata-size --block-size 64K --pool-size 100P --max-thins 1
expect_fail -s 1 -m "thin pool 'tp2' would have more than 2\^28 blocks: with 64.00 KiB blocks it is at most 16.00 TiB$" \
	mapperctl create thin-pool tp2 --size 17T
expect_fail -s 2 -m "needs --block-size, --pool-size and --max-thins" \
	mapperctl thin-metadata-size --block-size 64K
expect_fail -s 1 -m "power of two from 64K to 1G" \
	mapperctl thin-metadata-size --block-size 48K --pool-size 1G --max-thins 1
[ "$(mapperctl thin-metadata-size --block-size 64K --pool-size 1T --max-thins 100 --numeric-only)" -eq 273448960 ] ||
	fail "the estimate changed"

# A pool whose volume is open cannot be repaired.
mapperctl create thin v --pool tp --size 8M >/dev/null
start_daemon
exec 3<"$MNT/v"
expect_fail -s 1 -m "volume 'v' of thin pool 'tp' is busy \(open\)" mapperctl repair tp
exec 3<&-
mapperctl repair tp | grep -q "repaired: 1 volume, 0 blocks lost" || fail "repair of a sound pool"

# list --help names every key list --json gives, and docs/cli.md every
# key a thin pool or thin volume adds.
mapperctl change tp --on-event true >/dev/null
mapperctl snapshot v s >/dev/null
mapperctl list --help >help.txt
for key in $(mapperctl list --json | jq -r '[.[] | keys[]] | unique[]'); do
	grep -qF "\"$key\"" help.txt || fail "list --help does not name \"$key\""
done
common='"name", "kind", "size", "state", "created", "active", "read_only", "modified"'
for key in $(mapperctl list --json |
	     jq -r "[.[] | select(.kind | startswith(\"thin\")) | keys[]] | unique - [$common] | .[]"); do
	grep -qF "\`$key\`" "$T_SRC/docs/cli.md" || fail "docs/cli.md does not name \`$key\`"
done
