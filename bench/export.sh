#!/usr/bin/env bash
# bench/export.sh: an exported thin volume read over NBD, against nbdkit's
# file plugin serving the raw backing file itself (issue 21's bar: >= 0.8).
#
# One raw device, a file in /dev/shm (or BENCH_DIR), carries a thin pool
# (64 KiB blocks) and a thin volume of BENCH_SIZE (default 1G), written
# whole with random data, so every block is mapped.  The daemon exports it
# on a Unix socket (mapperctl export: nbdkit's file plugin on the volume's
# file in the mount).  The baseline is nbdkit's file plugin on the raw
# file, cut to the same bytes of the pool's data area with the offset
# filter: the same server, without mapperfs between it and the bytes.
# A third column reads the volume's file with nbdcopy directly (no NBD),
# to show what FUSE costs apart from nbdkit.
#
# Each round runs `nbdcopy SOURCE null:` (its defaults: multi-conn where
# offered, 4 connections, 64 requests in flight each) on each source in
# turn, side by side; BENCH_ROUNDS (default 3) rounds, medians printed in
# MiB/s, and the median of the per-round ratios export / raw.
# BENCH_MAPPERFS_OPTS (e.g. "-o spin=0") go to mapperfs.  Needs root (FUSE,
# the mount).
# Not run by CI.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
bin=$src/build/bin
size=${BENCH_SIZE:-1G}
rounds=${BENCH_ROUNDS:-3}
target=${BENCH_TARGET:-0.8}
dir=$(mktemp -d "${BENCH_DIR:-/dev/shm}/mapperfs-export.XXXXXX")
pool=$dir/pool
mnt=$dir/mnt
raw_pidfile=$dir/raw-nbdkit.pid
MiB=$((1024 * 1024))

cleanup()
{
	set +e
	[ -s "$raw_pidfile" ] && kill "$(cat "$raw_pidfile")"
	if mountpoint -q "$mnt" 2>/dev/null; then
		daemon=$(cat "$pool/mapperfs.pid")
		fusermount3 -u "$mnt"
		timeout 30 tail --pid="$daemon" -f /dev/null
	fi
	rm -rf --one-file-system "$dir"
}
trap cleanup EXIT

for p in nbdkit nbdcopy; do
	command -v "$p" >/dev/null || { echo "bench: $p is not installed" >&2; exit 1; }
done
[ -x "$bin/mapperfs" ] || { echo "bench: build first (tests/lib/deps.sh: deps_build build)" >&2; exit 1; }
ctl() { "$bin/mapperctl" --pool "$pool" "$@"; }

bytes=$(numfmt --from=iec "$size")
ctl init >/dev/null
ctl device add "$dir/raw.img" --create $((bytes / MiB + 64))M --name d0 >/dev/null
ctl create thin-pool tp --size $((bytes / MiB + 16))M --block-size 64K >/dev/null
ctl create thin vm --pool tp --size "$size" >/dev/null
ctl export vm --unix "$dir/vm.sock" >/dev/null
mkdir "$mnt"
# shellcheck disable=SC2086 # options, split as given
"$bin/mapperfs" --pool "$pool" "$mnt" ${BENCH_MAPPERFS_OPTS:-}
dd if=/dev/urandom of="$mnt/vm" bs=1M count=$((bytes / MiB)) conv=notrunc,fsync status=none

# The raw file's bytes of the pool's data area: 1 MiB of label, then its
# first segment (one device: one segment).
data_offset=$(( MiB + $(ctl status tp --json | jq '.segments[0].offset') ))
nbdkit -U "$dir/raw.sock" -P "$raw_pidfile" --filter=offset file "$dir/raw.img" \
	offset="$data_offset" range="$bytes"

export_uri="nbd+unix:///?socket=$dir/vm.sock"
raw_uri="nbd+unix:///?socket=$dir/raw.sock"

# mibps SOURCE: MiB/s of one nbdcopy of SOURCE to null:.
mibps()
{
	local t0 t1

	t0=$(date +%s%N)
	nbdcopy "$1" null: || { echo "bench: nbdcopy of $1 failed" >&2; kill $$; }
	t1=$(date +%s%N)
	awk -v b="$bytes" -v ns=$((t1 - t0)) 'BEGIN { printf "%d\n", b / 1048576 / (ns / 1e9) }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# Rounds alternate which of export and raw goes first, and each gives a
# ratio of its own: on a shared machine the load drifts, and a pair run
# back to back sees the same load.
exp_figs=() raw_figs=() file_figs=() ratios=()
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) -eq 1 ]; then
		e=$(mibps "$export_uri")
		w=$(mibps "$raw_uri")
	else
		w=$(mibps "$raw_uri")
		e=$(mibps "$export_uri")
	fi
	exp_figs+=("$e")
	raw_figs+=("$w")
	file_figs+=("$(mibps "$mnt/vm")")
	ratios+=("$(awk -v e="$e" -v w="$w" 'BEGIN { printf "%.2f", e / w }')")
	echo "round $r: export $e MiB/s, raw file $w MiB/s (ratio ${ratios[-1]}), volume file ${file_figs[-1]} MiB/s" >&2
done
exp=$(printf '%s\n' "${exp_figs[@]}" | median)
raw=$(printf '%s\n' "${raw_figs[@]}" | median)
file=$(printf '%s\n' "${file_figs[@]}" | median)
ratio=$(printf '%s\n' "${ratios[@]}" | median)

echo "nbdcopy of a fully written ${size} thin volume to null:, medians of $rounds, MiB/s:"
printf '%-44s %8s\n' "export (mapperctl export: file plugin, FUSE)" "$exp"
printf '%-44s %8s\n' "nbdkit file plugin on the raw file" "$raw"
printf '%-44s %8s\n' "the volume's file, no NBD (nbdcopy FILE)" "$file"
awk -v q="$ratio" -v t="$target" 'BEGIN {
	printf "ratio export / raw (median of the per-round ratios): %.2f (target >= %s: %s)\n", q, t,
	       (q >= t) ? "met" : "missed"
}'
