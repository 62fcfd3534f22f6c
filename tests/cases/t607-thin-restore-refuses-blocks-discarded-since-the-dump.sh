#!/usr/bin/env bash
# t607-thin-restore-refuses-blocks-discarded-since-the-dump.sh: a dump
# restored after its volume was removed maps blocks that discard
# passdown has punched since: restore refuses, naming how many and the
# first (volume, virtual block, data block), and changes nothing;
# --dry-run says the same; --force restores them, says so in the report
# and the log, and they read zeros.  A dump whose blocks are still there
# (a pool without passdown) restores without --force, online, and every
# byte reads back.  A restore that fills the metadata limit exactly is
# taken; META% then says 100.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 128M >/dev/null
mapperctl create thin-pool tp --size 32M >/dev/null
mapperctl create thin-pool keep --size 32M --no-discard-passdown >/dev/null
mapperctl create thin v --pool tp --size 4M >/dev/null
mapperctl create thin w --pool keep --size 4M >/dev/null
start_daemon
dd if=/dev/urandom of="$MNT/v" bs=64K count=16 conv=notrunc,fsync status=none
dd if=/dev/urandom of="$MNT/w" bs=64K count=16 conv=notrunc,fsync status=none
md5sum <"$MNT/w" >w.md5
mapperctl dump tp -o tp.xml
mapperctl dump keep -o keep.xml
id=$(sed -n 's/.*dev_id="\([0-9]*\)".* name="v".*/\1/p' tp.xml)

# Removing v discards its 16 blocks (remove returns once they are).
mapperctl remove v >/dev/null
mapperctl list --json >before.json
holes="16 mapped data blocks are holes in their raw device \(discarded since the dump\?\) and would read zeros; the first is data block 0, virtual block 0 of volume 'v' \(the dump's dev_id $id\): give --force to restore them all the same$"
expect_fail -s 1 -m "$holes" mapperctl restore tp --from tp.xml
expect_fail -s 1 -m "$holes" mapperctl restore tp --from tp.xml --dry-run
mapperctl list --json | cmp -s before.json - || fail "a refused restore changed the pool"
mapperctl restore tp --from tp.xml --dry-run --force >dry.txt
grep -q "^would map 16 data blocks that are holes in their raw device: they read zeros (the first is data block 0, virtual block 0 of volume 'v')$" dry.txt ||
	fail "the dry run does not name the holes: $(cat dry.txt)"
mapperctl list --json | cmp -s before.json - || fail "a dry run changed the pool"
mapperctl restore tp --from tp.xml --force >force.txt
grep -q "^mapping 16 data blocks that are holes" force.txt || fail "--force does not say what it maps: $(cat force.txt)"
grep -q "info: thin pool 'tp': restore maps 16 data blocks that are holes in their raw device (--force)" \
	"$POOL/mapperfs.log" || fail "the log does not name the holes"
cmp -s <(head -c $((16 * 65536)) /dev/zero) <(head -c $((16 * 65536)) "$MNT/v") ||
	fail "the blocks discarded since the dump do not read zeros"

# Nothing discarded: the data is where the dump says, and reads back.
mapperctl remove w >/dev/null
mapperctl restore keep --from keep.xml >keep.txt || fail "restore of blocks still there: $(cat keep.txt)"
! grep -q "holes" keep.txt || fail "restore names holes where there are none: $(cat keep.txt)"
cmp w.md5 <(md5sum <"$MNT/w") || fail "w does not read back as it was dumped"
mapperctl check >/dev/null || fail "check fails after the restores"
stop_daemon

# The metadata limit, to the page: 16 map pages (8 volumes, a directory
# and a leaf each) fit a limit of 64 KiB.
mapperctl create thin-pool small --size 8M --metadata-limit 64K >/dev/null
{
	echo '<superblock data_block_size="128" nr_data_blocks="128">'
	for i in $(seq 0 7); do
		printf '<device dev_id="%d" name="s%d" size="65536"><single_mapping origin_block="0" data_block="%d"/></device>\n' \
			$((i + 1)) "$i" "$i"
	done
	echo '</superblock>'
} >small.xml
mapperctl restore small --from small.xml --force >/dev/null
[ "$(mapperctl status small --json | json_get .metadata_percent)" = 100 ] ||
	fail "8 volumes do not take the 16 pages: $(mapperctl status small --json | jq -c .)"
