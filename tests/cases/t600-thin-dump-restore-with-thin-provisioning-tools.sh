#!/usr/bin/env bash
# t600-thin-dump-restore-with-thin-provisioning-tools.sh: `mapperctl dump`
# of a pool with snapshots and shared blocks, taken online, is metadata
# that thin_restore turns into a dm-thin metadata device which thin_check
# passes, on which thin_ls counts what `list --json` counts and thin_delta
# finds what `diff` finds; thin_dump of that device, restored by
# `mapperctl restore` into a fresh pool over the same data area, gives
# every volume back byte for byte; so does mapperctl's own dump, restored
# into a smaller pool, with names, sizes and snapshot origins.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq thin_restore thin_check thin_ls thin_delta thin_dump

BS=65536
make_pool
dev=$(add_file_device d0 96M)
mapperctl create thin-pool tp --size 64M >/dev/null
mapperctl create thin v1 --pool tp --size 40M >/dev/null
start_daemon

dd if=/dev/urandom of="$MNT/v1" bs=1M count=24 conv=notrunc,fsync status=none
mapperctl snapshot --active v1 s1 >/dev/null
dd if=/dev/urandom of="$MNT/v1" bs=64K seek=3 count=5 conv=notrunc,fsync status=none
dd if=/dev/urandom of="$MNT/v1" bs=64K seek=600 count=2 conv=notrunc,fsync status=none
dd if=/dev/urandom of="$MNT/s1" bs=64K seek=100 count=1 conv=notrunc,fsync status=none
mapperctl snapshot --active s1 s2 >/dev/null
dd if=/dev/urandom of="$MNT/s2" bs=4K seek=2000 count=1 conv=notrunc,fsync status=none
fallocate -p -o $((10 * BS)) -l $((4 * BS)) "$MNT/s2"

# Dumps taken while a writer provisions blocks and copies shared ones are
# each a consistent, committed point.
fio --name=w --filename="$MNT/s2" --rw=randwrite --bs=64K --size=8M --direct=1 \
	--ioengine=psync --time_based --runtime=3 --output=fio.log &
writer=$!
stop_writer() { ! kill "$1" 2>/dev/null || wait_pid "$1" || true; }
cleanup_fn stop_writer "$writer"
for i in 1 2 3; do
	mapperctl dump tp -o live.xml
	rm -f live.bin
	truncate -s 16M live.bin
	thin_restore -i live.xml -o live.bin >/dev/null && thin_check live.bin >/dev/null 2>&1 ||
		fail "dump $i, taken under writes, is not consistent"
done
wait "$writer" || fail "the writer failed: $(tail -3 fio.log)"
for v in v1 s1 s2; do md5sum <"$MNT/$v" >"$v.md5"; done

# Online, while the volumes are open.
exec 3<"$MNT/v1"
mapperctl dump tp -o dump.xml
exec 3<&-
grep -q '<range_mapping ' dump.xml || fail "the dump has no range mappings"
grep -q '<single_mapping ' dump.xml || fail "the dump has no single mappings"
truncate -s 16M meta.bin
thin_restore -i dump.xml -o meta.bin >/dev/null || fail "thin_restore refused the dump"
thin_check meta.bin >/dev/null 2>&1 || fail "thin_check: $(thin_check meta.bin 2>&1 | tail -3)"

# thin_ls against list --json, per volume (dev_id is the volume's id).
dev_id() { sed -n "s/.*dev_id=\"\([0-9]*\)\".* name=\"$1\".*/\1/p" dump.xml; }
thin_ls --no-headers --format DEV,MAPPED_BLOCKS,EXCLUSIVE_BLOCKS,SHARED_BLOCKS meta.bin >ls.txt
mapperctl list --json >list.json
for v in v1 s1 s2; do
	want=$(jq -r --arg v "$v" '.[] | select(.name == $v) |
		"\(.mapped_bytes / 65536) \(.exclusive_bytes / 65536) \(.shared_bytes / 65536)"' list.json)
	got=$(awk -v id="$(dev_id "$v")" '$1 == id { print $2, $3, $4 }' ls.txt)
	[ "$got" = "$want" ] || fail "$v: thin_ls says mapped/exclusive/shared $got, list --json $want"
done

# thin_delta against diff, block by block.
blocks_of_diff() { mapperctl diff "$1" "$2" --json | jq -r '.[] | "\(.offset) \(.length)"' | awk '{ for (b = $1 / 65536; b < ($1 + $2) / 65536; b++) print b }'; }
blocks_of_delta()
{
	thin_delta --snap1 "$(dev_id "$1")" --snap2 "$(dev_id "$2")" meta.bin |
		sed -n 's/.*<\(different\|left_only\|right_only\) begin="\([0-9]*\)" length="\([0-9]*\)".*/\2 \3/p' |
		awk '{ for (b = $1; b < $1 + $2; b++) print b }'
}
for pair in "s1 v1" "s1 s2" "v1 s2"; do
	set -- $pair
	[ "$(blocks_of_diff "$1" "$2")" = "$(blocks_of_delta "$1" "$2")" ] ||
		fail "thin_delta and diff disagree on $1 $2"
	[ -n "$(blocks_of_diff "$1" "$2")" ] || fail "$1 and $2 should differ"
done
mapperctl dump tp --format json | jq -e '.devices | length == 3' >/dev/null ||
	fail "the JSON dump does not list three devices"
stop_daemon

# Back: thin_dump's XML (no names, no sizes) into a fresh pool over the
# same data area: the device taken over, a pool of the same size first.
thin_dump meta.bin >back.xml
make_pool "$T_DIR/pool2"
mapperctl device add "$dev" --name d0 --force >/dev/null
mapperctl create thin-pool tp --size 64M >/dev/null
args=()
for v in v1 s1 s2; do args+=(--volume "$(dev_id "$v"):$v:40M"); done
mapperctl restore tp --from back.xml --dry-run "${args[@]}" >dry.txt
grep -q "would create thin volume 's2'" dry.txt || fail "dry run: $(cat dry.txt)"
[ "$(mapperctl list --json | jq length)" -eq 1 ] || fail "a dry run created volumes"
expect_fail -s 1 -m "has no device 999" mapperctl restore tp --from back.xml --volume 999:x
mapperctl restore tp --from back.xml "${args[@]}" >/dev/null
mapperctl check >/dev/null || fail "check fails after restore"
expect_fail -s 1 -m "has volumes" mapperctl restore tp --from back.xml
start_daemon "$T_DIR/pool2" "$T_DIR/mnt2"
for v in v1 s1 s2; do
	cmp "$v.md5" <(md5sum <"$T_DIR/mnt2/$v") || fail "$v does not read back as it was"
done

# mapperctl's own dump keeps names, sizes and snapshot origins (ORIGIN
# shows after a restore); a pool smaller than the dump's that holds every
# mapping takes it, and restore says so.
stop_daemon "$T_DIR/mnt2" "$T_DIR/pool2"
end=$(sed -n -e 's/.*data_block="\([0-9]*\)".*/\1 1/p' \
	-e 's/.*data_begin="\([0-9]*\)" length="\([0-9]*\)".*/\1 \2/p' dump.xml |
	awk '$1 + $2 > m { m = $1 + $2 } END { print m }')
[ "$end" -le 1000 ] || fail "the dump maps up to block $end: no smaller pool to try"
make_pool "$T_DIR/pool3"
mapperctl device add "$dev" --name d0 --force >/dev/null
mapperctl create thin-pool tp --size $(((end + 15) / 16))M >/dev/null
mapperctl restore tp --from dump.xml >restore.txt || fail "restore of our own dump: $(cat restore.txt)"
grep -q "^the dump's pool has 1024 data blocks, thin pool 'tp' [0-9]*: every mapping fits$" restore.txt ||
	fail "restore does not say the pool is smaller: $(cat restore.txt)"
grep -q "^creating thin volume 's2' (the dump's dev_id [0-9]*): 41943040 bytes, [0-9]* mapped blocks, a snapshot of 's1'$" restore.txt ||
	fail "restore: $(cat restore.txt)"
mapperctl list --json | jq -e '[.[] | select(.kind == "thin") | "\(.name)<\(.origin // "")"] | sort ==
	["s1<v1", "s2<s1", "v1<"]' >/dev/null || fail "origins are lost: $(mapperctl list)"
mapperctl list | grep -Eq '^s2 +thin +40\.00 MiB +tp +s1 ' || fail "list shows no ORIGIN: $(mapperctl list)"
mapperctl check >/dev/null || fail "check fails after restoring our own dump"
start_daemon "$T_DIR/pool3" "$T_DIR/mnt3"
for v in v1 s1 s2; do
	cmp "$v.md5" <(md5sum <"$T_DIR/mnt3/$v") || fail "$v does not read back after our own dump"
done
