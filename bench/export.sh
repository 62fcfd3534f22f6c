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
# A third source is the volume's file read by nbdcopy directly (no NBD),
# to show what FUSE costs apart from nbdkit.  Beside each throughput, the
# CPU that nbdcopy and the servers (nbdkit, the daemon) used per GiB: on
# a shared machine throughput follows the load, CPU per byte much less.
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

daemon=$(cat "$pool/mapperfs.pid")
export_nbdkit=$(ctl status vm --json | jq .export.pid)
raw_nbdkit=$(cat "$raw_pidfile")
hz=$(getconf CLK_TCK)

# ticks PID...: the CPU time (user and system) the processes used so far,
# in clock ticks (/proc/PID/stat's utime and stime, all threads).
ticks()
{
	local t=0 p
	local -a f

	for p; do
		read -ra f <"/proc/$p/stat"
		t=$((t + f[13] + f[14]))
	done
	echo "$t"
}

# copy SOURCE SERVER_PID...: one nbdcopy of SOURCE to null:; sets $mibps
# and $cpu_ms_per_gib, the CPU that nbdcopy and the servers used for it
# (what the machine pays, whatever else runs on it).
copy()
{
	local src=$1 t0 t1 c0 c1 user sys TIMEFORMAT='%3U %3S'

	shift
	c0=$(ticks "$@")
	t0=$(date +%s%N)
	{ time nbdcopy "$src" null: 2>&3 || { echo "bench: nbdcopy of $src failed" >&2; kill $$; }; } \
		3>&2 2>"$dir/time"
	t1=$(date +%s%N)
	c1=$(ticks "$@")
	read -r user sys <"$dir/time"
	mibps=$(awk -v b="$bytes" -v ns=$((t1 - t0)) 'BEGIN { printf "%d", b / 1048576 / (ns / 1e9) }')
	cpu_ms_per_gib=$(awk -v b="$bytes" -v u="$user" -v s="$sys" -v t=$((c1 - c0)) -v hz="$hz" \
		'BEGIN { printf "%d", ((u + s) * 1000 + t * 1000 / hz) * 1073741824 / b }')
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# Rounds alternate which of export and raw goes first, and each gives a
# ratio of its own: on a shared machine the load drifts, and a pair run
# back to back sees the same load.
exp_figs=() raw_figs=() file_figs=() ratios=() exp_cpu=() raw_cpu=() file_cpu=()
for r in $(seq 1 "$rounds"); do
	for which in $([ $((r % 2)) -eq 1 ] && echo "export raw" || echo "raw export"); do
		if [ "$which" = export ]; then
			copy "$export_uri" "$daemon" "$export_nbdkit"
			e=$mibps
			exp_cpu+=("$cpu_ms_per_gib")
		else
			copy "$raw_uri" "$raw_nbdkit"
			w=$mibps
			raw_cpu+=("$cpu_ms_per_gib")
		fi
	done
	exp_figs+=("$e")
	raw_figs+=("$w")
	copy "$mnt/vm" "$daemon"
	file_figs+=("$mibps")
	file_cpu+=("$cpu_ms_per_gib")
	ratios+=("$(awk -v e="$e" -v w="$w" 'BEGIN { printf "%.2f", e / w }')")
	echo "round $r: export $e MiB/s, raw file $w MiB/s (ratio ${ratios[-1]}), volume file ${file_figs[-1]} MiB/s" >&2
done
med() { printf '%s\n' "$@" | median; }
exp=$(med "${exp_figs[@]}")
raw=$(med "${raw_figs[@]}")
file=$(med "${file_figs[@]}")
ratio=$(med "${ratios[@]}")

echo "nbdcopy of a fully written ${size} thin volume to null:, medians of $rounds:"
printf '%-44s %8s %14s\n' "" "MiB/s" "CPU ms/GiB"
printf '%-44s %8s %14s\n' "export (mapperctl export: file plugin, FUSE)" "$exp" "$(med "${exp_cpu[@]}")"
printf '%-44s %8s %14s\n' "nbdkit file plugin on the raw file" "$raw" "$(med "${raw_cpu[@]}")"
printf '%-44s %8s %14s\n' "the volume's file, no NBD (nbdcopy FILE)" "$file" "$(med "${file_cpu[@]}")"
awk -v q="$ratio" -v t="$target" 'BEGIN {
	printf "ratio export / raw (median of the per-round ratios): %.2f (target >= %s: %s)\n", q, t,
	       (q >= t) ? "met" : "missed"
}'
