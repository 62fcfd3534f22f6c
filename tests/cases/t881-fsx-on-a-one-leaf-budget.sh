#!/usr/bin/env bash
# t881-fsx-on-a-one-leaf-budget.sh: mapperfs-fsx (tests/fsx: preads,
# pwrites, mapped reads and writes, punched holes, zeroed ranges, syncs
# and reopens, every read checked against a model of the file) runs on a
# thin volume of four leaves (128 MiB of 64 KiB blocks) while the
# daemon's memory budget is one leaf (-o cache_size=2K), so leaves are
# unloaded and loaded again all through the run: before a snapshot,
# through the copy-on-write after it, and after a restart.  Each run
# starts with --resume, which compares the whole volume with the model
# the run before left, so nothing written, punched or zeroed is lost or
# stale; the snapshot still holds what the volume held when it was
# taken, and its own writes leave the volume alone.  A run beside
# snapshots made and removed all through it: every load kicks the
# eviction, which must never take a leaf between a request's fault and
# its map (reads failed with EIO so once).  check passes, the pool
# counted evictions, and the checker is shown to fail on a model one
# byte off.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq od
FSX=$MAPPERFS_BUILD/bin/mapperfs-fsx
[ -x "$FSX" ] || fail "no $FSX (build first)"

evictions=0 ops=0
# evicted: adds the running daemon's count of unloaded leaves to $evictions.
evicted()
{
	evictions=$((evictions + $(mapperctl status tp --json | json_get .cache_evictions)))
}
# fsx SEED OPS GOOD VOLUME: verifies VOLUME against the model GOOD, then
# OPS random operations seeded SEED, and saves the model in GOOD again.
fsx()
{
	"$FSX" -S "$1" -N "$2" --good "$3" --resume "$MNT/$4" >"fsx.$1.out" 2>&1 ||
		fail "fsx -S $1 -N $2 on $4: $(cat "fsx.$1.out")"
	ops=$((ops + $2))
}
checked()
{
	mapperctl check >check.out 2>&1 || fail "check $1: $(cat check.out)"
}

make_pool
add_file_device d0 672M >/dev/null
mapperctl create thin-pool tp --size 640M >/dev/null	# v, s and two of the r snapshots, whole
mapperctl create thin v --pool tp --size 128M >/dev/null
truncate -s 128M good		# a new thin volume reads zeros
start_daemon "$POOL" "$T_DIR/mnt" -o cache_size=2K
[ "$(mapperctl status tp --json | json_get .cache_budget_bytes)" -eq 2048 ] ||
	fail "status does not show a budget of one leaf"

fsx 1 1500 good v
mapperctl snapshot v s --active >/dev/null
cp good snap.good
fsx 2 1500 good v		# copy-on-write of blocks and leaves the snapshot shares
checked "after the snapshot"
evicted
stop_daemon

start_daemon "$POOL" "$T_DIR/mnt" -o cache_size=2K
fsx 3 1000 good v
"$FSX" -S 6 -N 6000 --good good --resume "$MNT/v" >fsx.6.out 2>&1 &
writer=$!
cleanup_fn end_pid "$writer"
n=0
while kill -0 "$writer" 2>/dev/null; do
	mapperctl snapshot v "r$n" >/dev/null || fail "snapshot r$n beside fsx failed"
	[ "$n" -lt 2 ] || mapperctl remove "r$((n - 2))" >/dev/null ||
		fail "remove r$((n - 2)) beside fsx failed"
	n=$((n + 1))
done
wait "$writer" || fail "fsx -S 6 beside $n snapshots made and removed: $(cat fsx.6.out)"
ops=$((ops + 6000))
fsx 4 500 snap.good s		# the snapshot as taken, then writes of its own
fsx 5 0 good v			# which left the volume alone
checked "after a restart"

# The check can fail: a model one byte off is caught at that byte.
cp good bad
at=$((77 * MiB + 12345))
byte=$(od -An -tu1 -j "$at" -N 1 bad | tr -d ' ')
printf '%b' "\\0$(printf %03o $((byte ^ 0x5a)))" | dd of=bad bs=1 seek="$at" conv=notrunc status=none
rc=0
"$FSX" -N 0 --good bad --resume "$MNT/v" >bad.out 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "fsx on a model one byte off exited $rc, not 1: $(cat bad.out)"
grep -q "byte at offset $(printf 0x%x "$at") is $(printf 0x%02x "$byte")" bad.out ||
	fail "fsx on a model one byte off did not name the byte: $(cat bad.out)"
evicted

[ "$evictions" -gt 0 ] || fail "a budget of one leaf unloaded nothing in $ops operations"
log "$ops fsx operations, every read matched, $n snapshots beside; $evictions leaves unloaded"
