#!/usr/bin/env bash
# t820-recover-rebuilds-a-lost-pool-db-from-the-devices.sh: every raw
# device carries a copy of the pool's layout.  With pool.db removed (and,
# a second time, overwritten with garbage), `recover --devices` rebuilds
# it: linear (over two devices) and switch volumes read back byte for
# byte, with their extents, region table and tags; the thin pool comes back,
# its thin volumes are named lost, and `restore` from a dump taken before
# gives them back byte for byte, as `recover --dump tp=FILE` does at once,
# also into a pool directory that is gone too.  recover refuses a
# readable pool.db, a served pool, a device left out, and a file of
# another pool, in one line.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
d0=$(add_file_device d0 64M)
d1=$(add_file_device d1 64M)
mapperctl create linear lin --size 24M --on d0 >/dev/null
mapperctl extend lin --size 40M --on d1 >/dev/null
mapperctl create switch sw --size 8M --region-size 64K --path d0 --path d1 >/dev/null
mapperctl create thin-pool tp --size 32M >/dev/null
mapperctl create thin tv --pool tp --size 64M >/dev/null
start_daemon
dd if=/dev/urandom of="$MNT/lin" bs=1M count=40 conv=notrunc,fsync status=none
dd if=/dev/urandom of="$MNT/sw" bs=1M count=8 conv=notrunc,fsync status=none
dd if=/dev/urandom of="$MNT/tv" bs=64K count=100 seek=7 conv=notrunc,fsync status=none
mapperctl switch-map sw 0:1 R1,5 7:0 >/dev/null
mapperctl snapshot tv snap >/dev/null
sum_lin=$(sha "$MNT/lin")
sum_sw=$(sha "$MNT/sw")
sum_tv=$(sha "$MNT/tv")
mapperctl status lin --json | jq -c .segments >"$T_DIR/lin.segs"
[ "$(jq length "$T_DIR/lin.segs")" -ge 2 ] || fail "lin should span both devices: $(cat "$T_DIR/lin.segs")"
mapperctl switch-map sw --dump >"$T_DIR/sw.map"
mapperctl set lin --addtag db >/dev/null
mapperctl device set d1 --addtag ssd >/dev/null
mapperctl dump tp -o "$T_DIR/tp.xml" >/dev/null
expect_fail -s 1 -m "in use by mapperfs" mapperctl recover --devices "$d0" "$d1"
stop_daemon

expect_fail -s 1 -m "pool.db' is readable" mapperctl recover --devices "$d0" "$d1"
expect_fail -s 1 -m "pool.db is readable and holds the map of thin volume 'tv'" \
	mapperctl recover --force --devices "$d0" "$d1"
expect_fail -s 2 -m "name the raw devices" mapperctl recover
truncate -s 8M "$T_DIR/other.img"
expect_fail -s 1 -m "carries no mapperfs label" mapperctl recover --devices "$d0" "$T_DIR/other.img"

rm "$POOL/pool.db"
expect_fail -s 1 -m "device 'd1' .* is not among those given" mapperctl recover --devices "$d0"
mapperctl recover --devices "$d0" "$d1" >"$T_DIR/out" || fail "recover failed: $(cat "$T_DIR/out")"
cat "$T_DIR/out" >&2
grep -q "lost thin volume 'tv'" "$T_DIR/out" || fail "recover does not name tv lost"
grep -q "lost thin volume 'snap'" "$T_DIR/out" || fail "recover does not name snap lost"
mapperctl restore tp --from "$T_DIR/tp.xml" >/dev/null || fail "restore of the dump failed"

start_daemon
[ "$(sha "$MNT/lin")" = "$sum_lin" ] || fail "lin differs after recover"
[ "$(sha "$MNT/sw")" = "$sum_sw" ] || fail "sw differs after recover"
mapperctl status lin --json | jq -c .segments | cmp -s - "$T_DIR/lin.segs" ||
	fail "lin's extents differ: $(mapperctl status lin --json | jq -c .segments)"
mapperctl switch-map sw --dump | cmp -s - "$T_DIR/sw.map" || fail "sw's region table differs"
mapperctl list --json | jq -e '.[] | select(.name == "lin") | .tags == ["db"]' >/dev/null ||
	fail "lin's tag did not come back"
mapperctl device list --json | jq -e '.[] | select(.name == "d1") | .tags == ["ssd"]' >/dev/null ||
	fail "d1's tag did not come back"
mapperctl activate snap >/dev/null 2>&1 || true
[ "$(sha "$MNT/tv")" = "$sum_tv" ] || fail "tv differs after recover and restore"
[ "$(sha "$MNT/snap")" = "$sum_tv" ] || fail "snap differs after recover and restore"
mapperctl deactivate snap >/dev/null
mapperctl set snap --read-only --addtag keep >/dev/null
# A change after the recovery is copied to the devices like any other.
mapperctl create linear after --size 4M >/dev/null
stop_daemon

# Garbage over pool.db: moved aside, rebuilt, the thin volumes restored
# from the dump in the same command, with their flags and tags.  A
# recovery whose dump fails changes nothing: not pool.db, not the devices.
head -c 64K /dev/urandom >"$POOL/pool.db"
sum_db=$(sha "$POOL/pool.db")
area_sum() { dd if="$1" bs=4096 skip=1 count=255 status=none | sha256sum; }
areas=$(area_sum "$d0")$(area_sum "$d1")
entries=$(ls "$POOL/archive" | wc -l)
head -c $(($(size_of "$T_DIR/tp.xml") / 2)) "$T_DIR/tp.xml" >"$T_DIR/cut.xml"
expect_fail -s 1 -m "dump tp=.*cut.xml: .*line [0-9]+" mapperctl recover --devices "$d0" "$d1" --dump tp="$T_DIR/cut.xml"
[ "$(sha "$POOL/pool.db")" = "$sum_db" ] || fail "a failed recover changed pool.db"
ls "$POOL"/pool.db.* 2>/dev/null && fail "a failed recover left files beside pool.db"
[ "$(area_sum "$d0")$(area_sum "$d1")" = "$areas" ] || fail "a failed recover wrote on the devices"
[ "$(ls "$POOL/archive" | wc -l)" = "$entries" ] || fail "a failed recover wrote archive entries"
expect_fail -s 1 -m "thin pool 'tp' is given twice" \
	mapperctl recover --devices "$d0" "$d1" --dump tp="$T_DIR/tp.xml" --dump tp="$T_DIR/tp.xml"
expect_fail -s 1 -m "the layout has no thin pool 'nope'" \
	mapperctl recover --devices "$d0" "$d1" --dump nope="$T_DIR/tp.xml"
expect_fail -s 1 -m "takes THIN-POOL=FILE" mapperctl recover --devices "$d0" --dump "$T_DIR/tp.xml"
mapperctl recover --devices "$d0" "$d1" --dump tp="$T_DIR/tp.xml" >"$T_DIR/out" ||
	fail "recover over a damaged pool.db failed: $(cat "$T_DIR/out")"
cat "$T_DIR/out" >&2
grep -q "lost thin volume" "$T_DIR/out" && fail "recover --dump still reports thin volumes lost"
mapperctl list >/dev/null 2>"$T_DIR/err"
[ ! -s "$T_DIR/err" ] || fail "the first open after recover --dump warned: $(cat "$T_DIR/err")"
grep -q "moved the damaged database aside" "$T_DIR/out" || fail "recover did not move pool.db aside: $(cat "$T_DIR/out")"
ls "$POOL"/pool.db.damaged-* >/dev/null || fail "no pool.db.damaged-* left"
mapperctl list --json | jq -e 'map(.name) | index("after") != null' >/dev/null ||
	fail "the volume made after the first recovery is missing"
start_daemon
[ "$(sha "$MNT/lin")" = "$sum_lin" ] || fail "lin differs after the second recover"
[ "$(sha "$MNT/tv")" = "$sum_tv" ] || fail "tv differs after recover --dump"
mapperctl list --json | jq -e '.[] | select(.name == "snap") |
	.read_only and (.active | not) and .tags == ["keep"]' >/dev/null ||
	fail "snap's flags or tag did not come back: $(mapperctl list --json | jq -c '.[] | select(.name == "snap")')"
stop_daemon

# The whole pool directory lost: recover makes it again.
rm -rf "$POOL"
mapperctl recover --devices "$d0" "$d1" --dump tp="$T_DIR/tp.xml" >/dev/null ||
	fail "recover into a lost pool directory failed"
[ "$(stat -c %a "$POOL")" = 700 ] || fail "the pool directory was made $(stat -c %a "$POOL")"
start_daemon
[ "$(sha "$MNT/lin")" = "$sum_lin" ] || fail "lin differs after recovering the directory"
[ "$(sha "$MNT/tv")" = "$sum_tv" ] || fail "tv differs after recovering the directory"
