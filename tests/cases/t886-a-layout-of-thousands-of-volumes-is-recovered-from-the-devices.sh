#!/usr/bin/env bash
# t886-a-layout-of-thousands-of-volumes-is-recovered-from-the-devices.sh:
# the devices' layout copies are deflated, so a pool of 4000 thin
# snapshots of one volume (a layout of 640 KB, more than a device's
# metadata area holds as text) keeps a current copy on its devices, the
# daemon's admin changes too: with pool.db lost, `recover --devices` with
# a dump of the thin pool brings back every volume, and the one made last.
# Past what fits even deflated (70,000 volumes), status says the copies
# are stale and recover refuses them in one line; --force takes the stale
# copy and says so.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

# snapshots_xml N: thin_dump XML of volume vol and N snapshots of it, named snapN.
snapshots_xml()
{
	awk -v n="$1" 'BEGIN {
		print "<superblock uuid=\"\" time=\"1\" transaction=\"1\" flags=\"0\" version=\"2\" data_block_size=\"128\" nr_data_blocks=\"512\">"
		print "  <device dev_id=\"1\" mapped_blocks=\"0\" transaction=\"0\" creation_time=\"0\" snap_time=\"0\" name=\"vol\" size=\"1073741824\">"
		print "  </device>"
		for (i = 0; i < n; i++) {
			printf "  <device dev_id=\"%d\" mapped_blocks=\"0\" transaction=\"0\" creation_time=\"0\" snap_time=\"0\" name=\"snap%d\" size=\"1073741824\" snapshot_of=\"1\">\n", i + 2, i
			print "  </device>"
		}
		print "</superblock>" }'
}

layout() { mapperctl status --json 2>/dev/null | jq -r ".pool.$1"; }

N=4000
make_pool
d0=$(add_file_device d0 64M)
d1=$(add_file_device d1 64M)
mapperctl create linear lin --size 8M --on d1 >/dev/null
mapperctl create thin-pool tp --size 32M --on d0 --metadata-limit 64M >/dev/null
snapshots_xml $N >"$T_DIR/snaps.xml"
mapperctl restore tp --from "$T_DIR/snaps.xml" >/dev/null || fail "restore of $N snapshots failed"
[ "$(layout layout_copies)" = current ] || fail "the devices' copies are $(layout layout_copies)"
[ "$(layout layout_bytes)" -gt 600000 ] || fail "a layout of $N volumes is only $(layout layout_bytes) bytes"
log "$N volumes: layout $(layout layout_bytes) bytes, its copy $(layout layout_copy_bytes) deflated"

# Admin changes through the daemon at that size: the copier writes each.
start_daemon
mapperctl snapshot vol last >/dev/null || fail "snapshot at $N volumes failed"
mapperctl create linear after --size 4M --on d1 >/dev/null
[ "$(layout layout_copies)" = current ] || fail "the daemon's copies are $(layout layout_copies)"
mapperctl dump tp -o "$T_DIR/tp.xml" >/dev/null
mapperctl list --json | jq -r '.[].name' | sort >"$T_DIR/names"
stop_daemon
[ "$(wc -l <"$T_DIR/names")" -eq $((N + 5)) ] || fail "$(wc -l <"$T_DIR/names") volumes, not $((N + 5))"

rm "$POOL/pool.db"
mapperctl recover --devices "$d0" "$d1" --dump tp="$T_DIR/tp.xml" >"$T_DIR/out" ||
	fail "recover failed: $(tail -3 "$T_DIR/out")"
grep -q "stale\|lost" "$T_DIR/out" && fail "recover: $(grep "stale\|lost" "$T_DIR/out" | head -3)"
mapperctl list --json | jq -r '.[].name' | sort | cmp -s - "$T_DIR/names" ||
	fail "not every volume came back: $(mapperctl list --json | jq -r '.[].name' | sort |
		diff - "$T_DIR/names" | head -5)"
mapperctl list --json | jq -e '.[] | select(.name == "last") | .origin == "vol"' >/dev/null ||
	fail "'last' came back without its origin: $(mapperctl list --json | jq -c '.[] | select(.name == "last")')"

# Past the limit: 70,000 snapshots do not fit even deflated.
make_pool "$T_DIR/big"
e0=$(add_file_device e0 64M)
mapperctl create thin-pool tp --size 32M --metadata-limit 1G >/dev/null
snapshots_xml 70000 >"$T_DIR/big.xml"
mapperctl restore tp --from "$T_DIR/big.xml" >/dev/null 2>"$T_DIR/err" || fail "restore of 70000 failed"
grep -q "warning: the layout of pool .* does not fit a device's metadata area .* even deflated" \
	"$T_DIR/err" || fail "no warning that the layout does not fit: $(cat "$T_DIR/err")"
[ "$(layout layout_copies)" = stale ] || fail "status says the copies are $(layout layout_copies)"
mapperctl dump tp -o "$T_DIR/big-tp.xml" >/dev/null
rm "$POOL/pool.db"
expect_fail -s 1 -m "the devices' layout copies are stale: layout [0-9]+ \([0-9]+ bytes\) outgrew their metadata area" \
	mapperctl recover --devices "$e0" --dump tp="$T_DIR/big-tp.xml"
mapperctl recover --devices "$e0" --force >"$T_DIR/out" || fail "recover --force failed"
grep -q "^using stale layout copy [0-9]*: layout [0-9]* .* outgrew" "$T_DIR/out" ||
	fail "recover --force does not say the copy is stale: $(head -3 "$T_DIR/out")"
