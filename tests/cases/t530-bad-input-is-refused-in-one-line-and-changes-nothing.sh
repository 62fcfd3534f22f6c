#!/usr/bin/env bash
# t530-bad-input-is-refused-in-one-line-and-changes-nothing.sh: a table of
# bad input, careless or hostile (command lines, table syntax, devices,
# databases, pool directories, mount points): each case fails with the
# exit status and the one-line message it names, and leaves the pool
# byte-for-byte as it was (its database and every raw device).
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq sqlite3 mkfs.ext4 sha256sum

make_pool
d0=$(add_file_device d0 16M)
d1=$(add_file_device d1 16M)
mapperctl create linear lin --segment d0:0:4M >/dev/null
mapperctl create thin-pool tp --size 8M --on d1 >/dev/null
mapperctl create thin t --pool tp --size 16M >/dev/null
mapperctl create thin t2 --pool tp --size 8M >/dev/null
mapperctl create thin clone --pool tp --size 4M --origin lin >/dev/null
mapperctl create switch sw --size 4M --region-size 1M --path d0:8M --path d1:10M >/dev/null
# An empty thin pool, as restore takes one: 32 blocks never written (holes), 16 map pages.
mapperctl create thin-pool etp --size 2M --on d1 --metadata-limit 64K >/dev/null
mapperctl list >/dev/null	# leaves the database checkpointed

# The things to refuse.
truncate -s 16M ext4.img && mkfs.ext4 -q -F ext4.img
printf 'QFI\xfb\0\0\0\3' >image.qcow2 && truncate -s 16M image.qcow2
printf '0:1\n\0:0\n' >nul.map
truncate -s 512K small.img
truncate -s $((GiB + 1)) huge.map
touch exists.img
mkdir -p full mnt && touch full/x file
sqlite3 foreign.db 'CREATE TABLE t (x);'
sb='<superblock uuid="" time="1" transaction="1" flags="0" version="2" data_block_size="128" nr_data_blocks="32">'
dump() { printf '%s\n%s\n</superblock>\n' "$sb" "$2" >"$1"; }
dump big.xml '<device dev_id="1" name="big" size="9223372036854771712"/>'
dump huge.xml '<device dev_id="1" name="huge" size="18446744073709547520"/>'
dump many.xml "$(for i in $(seq 17); do printf '<device dev_id="%d" size="65536"/>' "$i"; done)"
dump hole.xml '<device dev_id="1" name="h" size="1048576"><range_mapping origin_begin="0" data_begin="4" length="2" time="0"/></device>'
dump cycle.xml '<device dev_id="1" size="65536" snapshot_of="2"/><device dev_id="2" size="65536" snapshot_of="1"/>'

# The lock file is left out: it names its last holder, by design.
fingerprint() { sha256sum "$POOL/pool.db" "$d0" "$d1"; ls -l --time-style=+ --ignore=lock "$POOL"; }
fingerprint >before
n=0

# refuses STATUS REGEX ARGS...: mapperctl ARGS fails with STATUS and a
# line matching REGEX; the pool did not change.
refuses()
{
	local status=$1 regex=$2

	shift 2
	expect_fail -s "$status" -m "^mapperctl: .*$regex" mapperctl "$@"
	fingerprint | cmp -s before - || fail "'mapperctl $*' failed but changed the pool"
	n=$((n + 1))
}

# Usage errors.
refuses 2 "unknown command 'frobnicate'" frobnicate
refuses 2 "unknown option '--frobnicate'" list --frobnicate
refuses 2 "need --size or --segment" create linear x
refuses 2 "unknown sub-command 'wobbly'" create wobbly x --size 8M
refuses 2 "exclude each other" create linear x --size 8M --segment d0:0:1M
refuses 2 "--on goes with --size" create linear x --on d0 --segment d0:4M:1M
refuses 2 "missing the volume NAME" remove
refuses 2 "unexpected argument 'b'" remove a b
refuses 2 "missing the ORIGIN and the snapshot NAME" snapshot t
refuses 2 "missing the volume NAME and the SNAPSHOT" rollback t
refuses 2 "missing the volumes A and B" diff t
refuses 2 "need --pool and --size" create thin x --size 4M
refuses 2 "need --size and --region-size" create switch x --size 8M
refuses 2 "need 2 to 256 --path" create switch x --size 8M --region-size 1M --path d0
refuses 2 "missing the mappings" switch-map sw
refuses 2 "exclude each other" switch-map sw --file nul.map --dump
refuses 2 "missing --size" extend lin
refuses 2 "missing the device, file or NBD URI PATH" device add
refuses 2 "missing the device NAME" device remove
refuses 2 "unexpected argument 'b'" status a b
refuses 2 "unknown sub-command 'frob'" device frob
refuses 2 "unexpected argument 'b'" check a b
refuses 2 "option '--pool' needs a value" --pool
refuses 2 "unexpected argument 'x'" reload x
refuses 2 "option '--size' needs a value" create linear x --size
# A wrong value is 1, however it is refused (docs/cli.md); 2 is for the
# shape of the command line, above.
refuses 1 "unknown --format 'yaml': use xml or json" dump tp --format yaml
refuses 1 "autoextend threshold '200' must be a percentage 50..100$" change tp --autoextend-threshold 200
refuses 1 "autoextend threshold '200' must be a percentage 50..100$" create thin-pool x --size 4M --autoextend-threshold 200
refuses 1 "--volume 'x': use DEV_ID:NAME" restore tp --from nul.map --volume x
refuses 1 "'t' is not ORIGIN=NAME" snapshot --group t
# Sizes.
refuses 1 "size '0' must be larger than zero" create linear x --size 0
refuses 1 "size '-1' is negative" create linear x --size -1
refuses 1 "invalid size 'abc'" create linear x --size abc
refuses 1 "invalid size '1Q'" create linear x --size 1Q
refuses 1 "size '99999999999T' is too large" create linear x --size 99999999999T
refuses 1 "size '1.3K' is not a whole number of bytes" create linear x --size 1.3K
refuses 1 "size '1000' is not a multiple of 4 KiB" create linear x --size 1000
refuses 1 "invalid size ''" create linear x --size ''
# Names.
refuses 1 "invalid name 'a/b'" create linear a/b --size 1M
refuses 1 "invalid name '\.\.'" create linear .. --size 1M
refuses 1 "invalid name '\.hidden'" create linear .hidden --size 1M
refuses 1 "invalid name 'a\\\\x0ab'" create linear "$(printf 'a\nb')" --size 1M
refuses 1 "invalid name 'x{65}'" create linear "$(printf 'x%.0s' {1..65})" --size 1M
refuses 1 "volume 'lin' exists" create linear lin --size 1M
# Linear tables and space.
refuses 1 "segment 'd0:14M:8M' runs past the end of device 'd0'" create linear x --segment d0:14M:8M
refuses 1 "segment 'd0:15M:1M' runs past the end of device 'd0'" create linear x --segment d0:15M:1M
refuses 1 "segment 'd0:2M:4M' overlaps volume 'lin'" create linear x --segment d0:2M:4M
refuses 1 "segment 'nosuchdev:0:1M': no device 'nosuchdev'" create linear x --segment nosuchdev:0:1M
refuses 1 "invalid segment 'd0:1M'" create linear x --segment d0:1M
refuses 1 "offset is not a multiple of 4 KiB" create linear x --segment d0:1000:4K
refuses 1 "overlaps segment 'd0:4M:2M'" create linear x --segment d0:4M:2M --segment d0:5M:2M
refuses 1 "not enough free space for 1.00 GiB" create linear x --size 1G
refuses 1 "no device 'nosuchdev'" create linear x --size 1M --on nosuchdev
refuses 1 "not enough free space for 8.00 MiB on device\(s\) d1" create linear x --size 8M --on d1
refuses 1 "new size must be larger than 4.00 MiB" extend lin --size 2M
refuses 1 "not enough free space for" extend lin --size 1T
refuses 1 "no volume 'nosuch'" extend nosuch --size 1G
refuses 1 "path 0 of 'sw' cannot grow by 4.00 MiB: device 'd0' ends before" extend sw --size 8M
refuses 1 "thin pool 'tp' is at most" extend t --size 1048576T
refuses 1 "--on does not apply to thin volume 't'" extend t --size 32M --on d0
refuses 1 "size '\+99999999T' is too large|size '99999999T' is too large" extend lin --size +99999999T
# Removal.
refuses 1 "no volume 'nosuch'" remove nosuch
refuses 1 "thin pool 'tp' still has 3 volumes" remove tp
refuses 1 "volume 'lin' is the origin of thin volume 'clone'" remove lin
refuses 1 "no volume 'nosuch'" status nosuch
refuses 1 "no volume 'nosuch'" check nosuch
# Devices.
refuses 1 "'$d0' is registered already as device 'd0'" device add "$d0" --name again
refuses 1 "is too small" device add "$T_DIR/small.img"
refuses 1 "cannot open '$T_DIR/nosuch.img'" device add nosuch.img
refuses 1 "holds a file system \(ext4\)" device add ext4.img
refuses 1 "holds a qcow2" device add image.qcow2
refuses 1 "neither a block device nor a regular file" device add /dev/null
refuses 1 "file '$T_DIR/exists.img' exists" device add exists.img --create 8M
refuses 1 "invalid name 'a/b'" device add new.img --create 8M --name a/b
refuses 1 "--create needs a size larger than zero" device add new.img --create 0
refuses 1 "device 'd0' is in use by 2 volumes: 'lin' and 'sw'" device remove d0
refuses 1 "no device 'nosuch'" device remove nosuch
# Moves: a volume that is not there is named as such, not as one with nothing to move.
refuses 1 "no volume 'nosuch'$" move d0 --volume nosuch
refuses 1 "nothing to move off 'd1' for volume 'lin'$" move d1 --volume lin
[ ! -e new.img ] || fail "a refused device add left its file behind"
# Thin pools and thin volumes.
refuses 1 "must be a power of two from 64K to 1G" create thin-pool x --size 8M --block-size 100K
refuses 1 "must be a power of two from 64K to 1G" create thin-pool x --size 8M --block-size 32K
refuses 1 "invalid --when-full 'sometimes'" create thin-pool x --size 8M --when-full sometimes
refuses 1 "invalid --when-full 'wait:0'" create thin-pool x --size 8M --when-full wait:0
refuses 1 "low-water mark '101' must be a percentage" create thin-pool x --size 8M --low-water 101
refuses 1 "smaller than one block" create thin-pool x --size 32K
# The block limit of a thin pool: one message, whether it is made or grown.
refuses 1 "thin pool 'x' would have more than 2\^28 blocks: with 64.00 KiB blocks it is at most 16.00 TiB" create thin-pool x --size 17T
refuses 1 "thin pool 'tp' would have more than 2\^28 blocks: with 64.00 KiB blocks it is at most 16.00 TiB" extend tp --size 17T
refuses 1 "not enough free space" create thin-pool x --size 1T
refuses 1 "no volume 'nosuch'" create thin x --pool nosuch --size 4M
refuses 1 "volume 'lin' is a linear volume, not a thin pool" create thin x --pool lin --size 4M
# Messages say "thin pool"; "thin-pool" is only the word of `create thin-pool`.
refuses 1 "volume 'tp' is a thin pool, not a thin volume$" snapshot tp x
refuses 1 "'tp' is a thin pool, not a volume$" activate tp
refuses 1 "origin '/nonexistent' is neither a volume nor a file" create thin x --pool tp --size 4M --origin /nonexistent
refuses 1 "is a qcow2 \(or qcow\) disk image, not a raw image" create thin x --pool tp --size 4M --origin image.qcow2
refuses 1 "thin pool 'tp' is at most" create thin x --pool tp --size 1048576T
refuses 1 "volume 'lin' is a linear volume, not a thin volume" snapshot lin x
refuses 1 "volume 't' exists" snapshot t t
refuses 1 "volume 'lin' is a linear volume, not a thin volume" rollback t lin
refuses 1 "cannot be rolled back to itself" rollback t t
refuses 1 "'t' and 't2' differ in size" rollback t t2
refuses 1 "volume 'lin' is a linear volume, not a thin volume" diff t lin
# Restore into an empty thin pool: every check before anything is
# written, and --dry-run makes the same ones.  Sizes in 64 bits (near
# 2^63 and 2^64 they used to wrap, get recorded, and fail the pool); the
# pool's metadata limit; data blocks that are holes (discarded since the
# dump); snapshot_of in a cycle.
max="a thin volume with blocks of 64.00 KiB is at most 32.00 TiB"
refuses 1 "device 1: size 9223372036854771712: $max$" restore etp --from big.xml
refuses 1 "device 1: size 9223372036854771712: $max$" restore etp --from big.xml --dry-run
refuses 1 "device 1: size 18446744073709547520: $max$" restore etp --from huge.xml
refuses 1 "the restored maps would take 68.00 KiB of metadata \(17 map pages\), past the metadata limit of thin pool 'etp' \(64.00 KiB\): raise it with 'mapperctl change etp --metadata-limit SIZE'$" \
	restore etp --from many.xml --dry-run
refuses 1 "the restored maps would take 68.00 KiB of metadata \(17 map pages\)" restore etp --from many.xml
holes="2 mapped data blocks are holes in their raw device \(discarded since the dump\?\) and would read zeros; the first is data block 4, virtual block 0 of volume 'h' \(the dump's dev_id 1\): give --force to restore them all the same$"
refuses 1 "$holes" restore etp --from hole.xml
refuses 1 "$holes" restore etp --from hole.xml --dry-run
refuses 1 "snapshot_of goes round in a cycle: device 1 is a snapshot of 2, which is a snapshot of 1$" restore etp --from cycle.xml
# Switch tables.
refuses 1 "region" switch-map sw 10:1
refuses 1 "path" switch-map sw 0:5
refuses 1 "R5,2" switch-map sw R5,2
refuses 1 "volume 'lin' is a linear volume, not a switch volume" switch-map lin 0:1
refuses 1 "holds a NUL byte" switch-map sw --file nul.map
refuses 1 "cannot read '$T_DIR/nosuch.map'" switch-map sw --file nosuch.map
refuses 1 "cannot read '$T_DIR/full': Is a directory" switch-map sw --file full
refuses 1 "'/dev/null' holds no mappings" switch-map sw --file /dev/null
refuses 1 "'$T_DIR/huge.map' holds more than 1 GiB" switch-map sw --file huge.map
refuses 1 "'/dev/fd/[0-9]+' holds more than 1 GiB" switch-map sw --file <(head -c $((GiB + 1)) /dev/zero)
refuses 1 "the region size is larger than the volume" create switch x --size 4M --region-size 8M --path d0 --path d1
refuses 1 "path 'd0:15M' runs past the end of device 'd0'" create switch x --size 4M --region-size 1M --path d0:15M --path d1:0
refuses 1 "path 'd9': no device 'd9'" create switch x --size 4M --region-size 1M --path d9 --path d1
# A path placed by hand lies in free space: not over a volume, nor another's path.
refuses 1 "path 'd0:0' overlaps volume 'lin' on device 'd0': a path placed by hand must lie in free space" create switch x --size 4M --region-size 1M --path d0:0 --path d0:4M
refuses 1 "path 'd1:2M' overlaps thin pool 'tp' on device 'd1'" create switch x --size 4M --region-size 1M --path d1:2M --path d0:4M
refuses 1 "path 'd0:9M' overlaps volume 'sw' on device 'd0'" create switch x --size 2M --region-size 1M --path d0:4M --path d0:9M
refuses 1 "segment 'd0:9M:1M' overlaps volume 'sw'" create linear x --segment d0:9M:1M
refuses 1 "not enough free space for 8.00 MiB on device\(s\) d0 \(7.00 MiB free\)" create linear x --size 8M --on d0
refuses 1 "holds a pool already" init
# Databases and pool directories.
refuses 1 "list: no pool at '$T_DIR/nosuchpool' \(run 'mapperctl init', or name the pool with --pool DIR before the command, or MAPPERFS_POOL\)$" \
	--pool "$T_DIR/nosuchpool" list
mkdir -p copies/corrupt copies/newer copies/foreign copies/open
chmod 0700 copies/*
cp "$POOL/pool.db" copies/corrupt/ && dd if=/dev/urandom of=copies/corrupt/pool.db bs=4096 seek=2 count=4 conv=notrunc status=none
cp "$POOL/pool.db" copies/newer/ && sqlite3 copies/newer/pool.db 'PRAGMA user_version = 999'
cp foreign.db copies/foreign/pool.db
cp "$POOL/pool.db" copies/open/ && chmod 0777 copies/open
refuses 1 "pool database .* is corrupt|cannot be read: it is damaged|breach" --pool "$T_DIR/copies/corrupt" check
refuses 1 "was written by a newer mapperfs" --pool "$T_DIR/copies/newer" list
refuses 1 "is corrupt or not a mapperfs pool" --pool "$T_DIR/copies/foreign" list
refuses 1 "can be written by others \(mode 0777\)" --pool "$T_DIR/copies/open" list

# The daemon's surroundings: mount points.
cleanup_fn _t_undo_mount "$T_DIR/mnt"	# should a case mount there after all
mounts()
{
	expect_fail -s 1 -m "^mapperfs: .*$1" mapperfs --pool "$POOL" "$2"
	! mountpoint -q "$2" || fail "mapperfs mounted on $2"
	n=$((n + 1))
}
mounts "mount point '$T_DIR/file' is not a directory" file
mounts "mount point '$T_DIR/full' is not empty" full
mounts "is inside the pool directory" "$POOL"
mounts "mount point 'nosuch': No such file or directory" nosuch
expect_fail -s 1 -m "^mapperfs: .*invalid -o log=loud" mapperfs --pool "$POOL" mnt -o log=loud
expect_fail -s 1 -m "^mapperfs: .*invalid -o transport=bogus" mapperfs --pool "$POOL" mnt -o transport=bogus
for bad in spin=-1 spin=1001 spin=5us spin= threads=0 "threads= 4" event_timeout=0x10 \
	batch=0 batch=9 batch=8x cache_size=1 cache_size=1K cache_size=junk cache_size=-1; do
	expect_fail -s 1 -m "^mapperfs: .*invalid -o ${bad%%=*}=" mapperfs --pool "$POOL" mnt -o "$bad"
done
n=$((n + 14))
expect_fail -s 1 -m "^mapperfs: .*invalid -o comment=\"a,b: a double quote is not closed" \
	mapperfs --pool "$POOL" mnt -o 'comment="a,b'
expect_fail -s 1 -m "^mapperfs: .*invalid -o fsname=\"a,b\": only fstab's own options \(comment=, x-\*\) may hold a comma" \
	mapperfs --pool "$POOL" mnt -o 'fsname="a,b"'
n=$((n + 4))
expect_fail -s 1 -m "^mapperfs: .*no pool at '$T_DIR/nosuchpool'" mapperfs --pool "$T_DIR/nosuchpool" mnt
n=$((n + 1))
# The daemon's own files are never followed through a link: it refuses to
# start rather than run with no log or no pid file.
for f in mapperfs.log mapperfs.pid; do
	[ ! -e "$POOL/$f" ] || mv "$POOL/$f" "$T_DIR/$f.kept"
	ln -s "$T_DIR/elsewhere" "$POOL/$f"
	mounts "'$POOL/$f' is a symbolic link: refusing to follow it" mnt
	[ ! -e "$T_DIR/elsewhere" ] || fail "mapperfs wrote through the link $POOL/$f"
	rm "$POOL/$f"
	[ ! -e "$T_DIR/$f.kept" ] || mv "$T_DIR/$f.kept" "$POOL/$f"
done
# fstab's comment= and x-* may hold commas, quoted as mount(8) quotes them;
# a cache budget past the machine's memory is said, not refused.
start_daemon "$POOL" "$T_DIR/mnt" -o 'comment="a,b",x-note="c,d",log=info,cache_size=100T'
grep -q "warning: -o cache_size=100.00 TiB is more than this machine's memory" "$POOL/mapperfs.log" ||
	fail "a budget of 100T passes unsaid: $(tail -3 "$POOL/mapperfs.log")"
expect_fail -s 1 -m "^mapperfs: .*has a file system mounted on it already" mapperfs --pool "$POOL" "$MNT"
[ "$(findmnt -n --mountpoint "$MNT" | wc -l)" -eq 1 ] || fail "mapperfs mounted twice on $MNT"
n=$((n + 1))
log "$n cases refused"
[ "$n" -ge 80 ] || fail "only $n cases"
