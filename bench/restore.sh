#!/usr/bin/env bash
# bench/restore.sh: how `mapperctl restore` grows with the dump's devices.
#
# For each count of BENCH_DEVICES (default 10000 20000 40000 100000),
# thin_dump XML is generated with that many <device> elements, each a
# volume of 1 MiB that maps 3 blocks (a range_mapping of 2 and a
# single_mapping, on data blocks of its own), and `mapperctl restore`
# (offline, so the figure includes opening the pool and closing it)
# takes it into a fresh, empty thin pool whose data area is sparse: no
# data is written, so every mapped block is a hole of the raw device
# file and the restore runs with --force, after looking at each (the
# holes check costs what it costs when nothing is found: one lseek per
# run).  Each pool's metadata limit is set to what its maps take.  Then
# `mapperctl list` opens the restored pool once, for scale.
#
# Prints, per count, the XML's size, the restore's time and its time per
# 1000 devices (flat when restore is linear: it was quadratic, 20k
# devices 1.3 s and 40k 5.4 s), and the list's; and whether 100,000
# devices took under BENCH_TARGET_MS (10000).  Backing in /dev/shm.
# Needs no root.  Not run by CI.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
bin=$src/build/bin
counts=${BENCH_DEVICES:-10000 20000 40000 100000}
target_ms=${BENCH_TARGET_MS:-10000}
dir=$(mktemp -d /dev/shm/mapperfs-restore.XXXXXX)
ms() { echo $(( ($2 - $1) / 1000000 )); }

cleanup()
{
	rm -rf "$dir"
}
trap cleanup EXIT

[ -x "$bin/mapperctl" ] || { echo "bench: build first (tests/lib/deps.sh: deps_build build)" >&2; exit 1; }

# gen_xml N: N devices of 1 MiB (16 blocks of 64 KiB), device d mapping
# virtual blocks 0-1 to data blocks 3d, 3d+1 and virtual block 9 to 3d+2.
gen_xml()
{
	awk -v n="$1" 'BEGIN {
		printf "<superblock uuid=\"\" time=\"0\" transaction=\"1\" flags=\"0\" version=\"2\" data_block_size=\"128\" nr_data_blocks=\"%d\">\n", 3 * n
		for (d = 0; d < n; d++) {
			printf "  <device dev_id=\"%d\" mapped_blocks=\"3\" transaction=\"0\" creation_time=\"0\" snap_time=\"0\">\n", d + 1
			printf "    <range_mapping origin_begin=\"0\" data_begin=\"%d\" length=\"2\" time=\"0\"/>\n", 3 * d
			printf "    <single_mapping origin_block=\"9\" data_block=\"%d\" time=\"0\"/>\n", 3 * d + 2
			print "  </device>"
		}
		print "</superblock>"
	}'
}

# restore_figures N: a fresh pool, the restore of N devices timed; prints
# the figures and sets $restore_ms.
restore_figures()
{
	local n=$1 pool=$dir/pool-$1 t0 t1 t2 pages

	"$bin/mapperctl" --pool "$pool" init >/dev/null
	"$bin/mapperctl" --pool "$pool" device add "$dir/raw-$n" --create $(( (3 * n + 32) * 64 ))K \
		--name r >/dev/null
	pages=$((2 * n))	# a directory and a leaf per volume
	"$bin/mapperctl" --pool "$pool" create thin-pool tp --size $(( (3 * n + 16) * 64 ))K \
		--metadata-limit $((pages * 4))K --low-water 0 >/dev/null
	gen_xml "$n" >"$dir/in.xml"
	t0=$(date +%s%N)
	"$bin/mapperctl" --pool "$pool" restore tp --from "$dir/in.xml" --force >"$dir/out.txt" 2>"$dir/err.txt" ||
		{ echo "bench: restore of $n devices failed: $(grep -v warning "$dir/err.txt")" >&2; exit 1; }
	t1=$(date +%s%N)
	"$bin/mapperctl" --pool "$pool" list >/dev/null
	t2=$(date +%s%N)
	restore_ms=$(ms "$t0" "$t1")
	printf '%7d devices (%6d KiB of XML): restore %6d ms, %5d ms per 1000 devices; list after %6d ms\n' \
		"$n" "$(du -k "$dir/in.xml" | cut -f1)" "$restore_ms" $((restore_ms * 1000 / n)) \
		"$(ms "$t1" "$t2")"
	rm -rf "$pool" "$dir/raw-$n" "$dir/in.xml"
}

echo "restore of thin_dump XML into an empty thin pool, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg):"
for n in $counts; do
	restore_figures "$n"
	if [ "$n" -eq 100000 ]; then
		if [ "$restore_ms" -lt "$target_ms" ]; then
			echo "100000 devices in $restore_ms ms: under the target of $target_ms ms"
		else
			echo "100000 devices in $restore_ms ms: NOT under the target of $target_ms ms"
			exit 1
		fi
	fi
done
