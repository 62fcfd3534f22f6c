#!/usr/bin/env bash
# t821-recover-names-stale-and-damaged-layout-copies.sh: a device whose
# layout copy is stale (its metadata area put back as it was two changes
# ago) or damaged (bytes of both its copies overwritten) is named by
# recover, which uses the newest good copy among the others: the volume
# made last comes back.  A copy is rewritten on every change, and opening
# the pool rewrites a stale one.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

SLOT=$(((MiB - 4096) / 2))
area() { dd if="$1" bs=4096 skip=1 count=255 status=none; }

make_pool
d0=$(add_file_device d0 32M)
d1=$(add_file_device d1 32M)
mapperctl create linear a --size 4M --on d0 >/dev/null
area "$d1" >"$T_DIR/d1.old"
mapperctl create linear b --size 4M --on d1 >/dev/null
mapperctl create linear c --size 4M --on d0 >/dev/null
area "$d1" | cmp -s - "$T_DIR/d1.old" && fail "d1's layout copy did not change with the layout"

# Stale: d1's area as it was before b and c.
dd if="$T_DIR/d1.old" of="$d1" bs=4096 seek=1 conv=notrunc status=none
rm "$POOL/pool.db"
mapperctl recover --devices "$d0" "$d1" >"$T_DIR/out" || fail "recover failed"
cat "$T_DIR/out" >&2
grep -q "^'$d1': its layout copy [0-9]* is stale" "$T_DIR/out" || fail "recover does not name d1's stale copy"
grep -q "'$d0'" "$T_DIR/out" && fail "recover names d0, whose copy is the newest"
mapperctl list --json | jq -e '[.[].name] == ["a", "b", "c"]' >/dev/null ||
	fail "not every volume came back: $(mapperctl list --json | jq -c 'map(.name)')"
# The open above (list) rewrote the stale copy: both devices agree again.
area "$d1" | cmp -s - "$T_DIR/d1.old" && fail "opening the pool did not rewrite d1's stale copy"

# Damaged: garbage in the middle of both of d0's copies.
mapperctl create linear d --size 4M --on d1 >/dev/null
for off in $((4096 + 200)) $((4096 + SLOT + 200)); do
	printf 'garbage' | dd of="$d0" bs=1 seek="$off" conv=notrunc status=none
done
rm "$POOL/pool.db"
mapperctl recover --devices "$d0" "$d1" >"$T_DIR/out" || fail "recover with d0 damaged failed"
cat "$T_DIR/out" >&2
grep -q "^'$d0': its layout copies are damaged" "$T_DIR/out" || fail "recover does not name d0's damaged copies"
mapperctl list --json | jq -e '[.[].name] == ["a", "b", "c", "d"]' >/dev/null ||
	fail "not every volume came back: $(mapperctl list --json | jq -c 'map(.name)')"

# Both damaged: nothing to recover from, said in one line.
mapperctl create linear e --size 4M --on d1 >/dev/null
for dev in "$d0" "$d1"; do
	for off in $((4096 + 200)) $((4096 + SLOT + 200)); do
		printf 'garbage' | dd of="$dev" bs=1 seek="$off" conv=notrunc status=none
	done
done
rm "$POOL/pool.db"
expect_fail -s 1 -m "no device given holds a good copy" mapperctl recover --devices "$d0" "$d1"
