#!/usr/bin/env bash
# t609-dump-says-a-fresh-snapshot-and-its-origin-share-blocks.sh: a
# snapshot that nobody wrote since shares its origin's whole map (its
# directory is the origin's), and the dump must say that both share
# blocks (snap_time="1", docs/thin.md): thin_restore and dm-thin read
# snap_time 0 as "nothing shared" and would write the origin's blocks in
# place, under the snapshot.  A volume that shares nothing says 0.  A
# volume over an external origin image is dumped with a note on stderr:
# the XML has no place for the origin.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 64M >/dev/null
mapperctl create thin-pool tp --size 8M >/dev/null
mapperctl create thin sq --pool tp --size 4M >/dev/null
mapperctl create thin alone --pool tp --size 4M >/dev/null
start_daemon
dd if=/dev/urandom of="$MNT/sq" bs=64K count=2 conv=notrunc,fsync status=none
dd if=/dev/urandom of="$MNT/alone" bs=64K count=1 conv=notrunc,fsync status=none
mapperctl snapshot sq sqs >/dev/null

mapperctl dump tp -o dump.xml
snap_time() { sed -n "s/.*snap_time=\"\([0-9]*\)\".* name=\"$1\".*/\1/p" dump.xml; }
[ "$(snap_time sq)" = 1 ] || fail "the origin sq says snap_time=\"$(snap_time sq)\": $(cat dump.xml)"
[ "$(snap_time sqs)" = 1 ] || fail "the snapshot sqs says snap_time=\"$(snap_time sqs)\": $(cat dump.xml)"
[ "$(snap_time alone)" = 0 ] || fail "alone, which shares nothing, says snap_time=\"$(snap_time alone)\""
mapperctl dump tp --format json | jq -e '[.devices[] | {(.name): .snap_time}] | add ==
	{"sq": 1, "sqs": 1, "alone": 0}' >/dev/null || fail "the JSON dump says otherwise: $(mapperctl dump tp --format json)"
grep -q '<superblock [^>]* time="1"' dump.xml || fail "the superblock's time is not 1: $(head -n 1 dump.xml)"

# A volume over an external origin: the dump cannot hold the origin, and says so.
head -c $((1024 * 1024)) /dev/urandom >base.img
mapperctl create thin eo --pool tp --size 4M --origin base.img >/dev/null
mapperctl dump tp -o eo.xml 2>eo.err || fail "dump with an external origin failed: $(cat eo.err)"
[ "$(cat eo.err)" = "mapperctl: dump: 1 volume ('eo') reads an external origin, which the dump cannot hold: restored, it reads zeros where it has not written" ] ||
	fail "dump said: $(cat eo.err)"
