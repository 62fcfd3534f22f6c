#!/usr/bin/env bash
# bench/thin-admin.sh: the figures of thin pool administration.
#
# 1. dump and restore at 1e6 mapped blocks (BENCH_BLOCKS): thin_dump XML
#    for a volume of 1e6 blocks and a snapshot that differs in 1% of them
#    is generated, `mapperctl restore` takes it into an empty pool (a
#    sparse data area: no data is written, so every mapped block is a
#    hole and restore needs --force), `mapperctl dump` writes it
#    back; time and size of each, and thin_restore + thin_check on the
#    dump when thin-provisioning-tools is installed.
# 2. discard passdown's cost: the same write/discard mix (16 MiB direct
#    writes at a random place, 16 MiB punched at another) on a pool with
#    passdown and one without, alternating, MiB/s side by side.
# Backing in /dev/shm.  Needs root.  Not run by CI.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
bin=$src/build/bin
blocks=${BENCH_BLOCKS:-1000000}
secs=${BENCH_SECONDS:-5}
dir=$(mktemp -d /dev/shm/mapperfs-thin-admin.XXXXXX)
ctl() { "$bin/mapperctl" --pool "$dir/pool" "$@"; }
ms() { echo $(( ($2 - $1) / 1000000 )); }

cleanup()
{
	set +e
	mountpoint -q "$dir/mnt" && fusermount3 -u "$dir/mnt"
	[ -s "$dir/pool/mapperfs.pid" ] &&
		timeout 30 tail --pid="$(cat "$dir/pool/mapperfs.pid")" -f /dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

# A volume of $blocks blocks mapped in runs of 100, and its snapshot with
# every 100th block moved to a block of its own.
gen_xml()
{
	awk -v n="$blocks" 'BEGIN {
		printf "<superblock uuid=\"\" time=\"1\" transaction=\"1\" flags=\"0\" version=\"2\" data_block_size=\"128\" nr_data_blocks=\"%d\">\n", n + n / 100 + 100
		printf "  <device dev_id=\"1\" mapped_blocks=\"%d\" transaction=\"0\" creation_time=\"0\" snap_time=\"1\">\n", n
		for (b = 0; b < n; b += 100)
			printf "    <range_mapping origin_begin=\"%d\" data_begin=\"%d\" length=\"100\" time=\"0\"/>\n", b, b
		print "  </device>"
		printf "  <device dev_id=\"2\" mapped_blocks=\"%d\" transaction=\"0\" creation_time=\"1\" snap_time=\"1\">\n", n
		for (b = 0; b < n; b += 100) {
			printf "    <single_mapping origin_block=\"%d\" data_block=\"%d\" time=\"1\"/>\n", b, n + b / 100
			printf "    <range_mapping origin_begin=\"%d\" data_begin=\"%d\" length=\"99\" time=\"0\"/>\n", b + 1, b + 1
		}
		print "  </device>"
		print "</superblock>"
	}'
}

# The worst case for the format: one volume of $blocks blocks, each on a
# data block apart from its neighbours' (no runs at all).
gen_scattered()
{
	awk -v n="$blocks" 'BEGIN {
		printf "<superblock uuid=\"\" time=\"0\" transaction=\"1\" flags=\"0\" version=\"2\" data_block_size=\"128\" nr_data_blocks=\"%d\">\n", n
		printf "  <device dev_id=\"1\" mapped_blocks=\"%d\" transaction=\"0\" creation_time=\"0\" snap_time=\"0\">\n", n
		for (b = 0; b < n; b++)
			printf "    <single_mapping origin_block=\"%d\" data_block=\"%d\" time=\"0\"/>\n", b, (b * 7919) % n
		print "  </device>"
		print "</superblock>"
	}'
}

# restore of XML $1 into thin pool $2 (restore options follow), dump
# (XML, JSON), thin_restore and thin_check of the dump; prints figures.
restore_dump()
{
	local xml=$1 tp=$2 t0 t1 t2 t3

	shift 2
	t0=$(date +%s%N)
	ctl restore "$tp" --from "$xml" --force "$@" >/dev/null 2>"$dir/restore.err" ||
		{ grep -v warning "$dir/restore.err" >&2; exit 1; }
	t1=$(date +%s%N)
	ctl dump "$tp" -o "$dir/out.xml"
	t2=$(date +%s%N)
	ctl dump "$tp" --format json -o "$dir/out.json"
	t3=$(date +%s%N)
	echo "  restore from thin_dump XML ($(du -k "$xml" | cut -f1) KiB): $(ms "$t0" "$t1") ms"
	echo "  dump to XML ($(du -k "$dir/out.xml" | cut -f1) KiB, $(wc -l <"$dir/out.xml") lines): $(ms "$t1" "$t2") ms"
	echo "  dump to JSON ($(du -k "$dir/out.json" | cut -f1) KiB): $(ms "$t2" "$t3") ms"
	if command -v thin_restore >/dev/null; then
		truncate -s 1G "$dir/meta.bin"
		t0=$(date +%s%N)
		thin_restore -i "$dir/out.xml" -o "$dir/meta.bin" >/dev/null
		t1=$(date +%s%N)
		thin_check "$dir/meta.bin" >/dev/null 2>&1 && ok=passes || ok=FAILS
		echo "  thin_restore of the dump: $(ms "$t0" "$t1") ms; thin_check $ok"
		rm -f "$dir/meta.bin"
	fi
	rm -f "$xml" "$dir/out.xml" "$dir/out.json"
}

mkdir "$dir/mnt"
ctl init >/dev/null
pool_blocks=$((blocks + blocks / 100 + 100))
ctl device add "$dir/raw" --create $(( (pool_blocks + blocks + 128) * 64 ))K --name r >/dev/null
ctl create thin-pool tp --size $((pool_blocks * 64))K >/dev/null
gen_xml >"$dir/in.xml"
echo "$blocks + $blocks mapped blocks (a volume and its snapshot, 1% apart):"
restore_dump "$dir/in.xml" tp
echo "  pool.db: $(du -k "$dir/pool/pool.db" | cut -f1) KiB"
ctl create thin-pool scattered --size $((blocks * 64))K >/dev/null
gen_scattered >"$dir/in.xml"
echo "$blocks mapped blocks, no two neighbours on neighbouring data blocks:"
restore_dump "$dir/in.xml" scattered --volume 1:scattered1

# Discard passdown, on and off, side by side on one mount: 16 MiB written
# at a random place and fsynced (a commit, which carries the discards),
# 16 MiB punched at another, repeated; MiB/s written.
ctl device add "$dir/raw2" --create 1200M --name r2 >/dev/null
ctl create thin-pool on --size 512M --on r2 >/dev/null
ctl create thin-pool off --size 512M --on r2 --no-discard-passdown >/dev/null
ctl create thin von --pool on --size 256M >/dev/null
ctl create thin voff --pool off --size 256M >/dev/null
"$bin/mapperfs" --pool "$dir/pool" "$dir/mnt"
churn()
{
	local f=$1 t0 t1 n=0 end=$(( $(date +%s) + secs ))

	t0=$(date +%s%N)
	while [ "$(date +%s)" -lt "$end" ]; do
		dd if="$dir/chunk" bs=64K count=256 of="$f" seek=$((RANDOM % 3840)) oflag=direct \
			conv=notrunc,fsync status=none
		fallocate -p -o $(( (RANDOM % 3840) * 65536 )) -l $((256 * 65536)) "$f"
		n=$((n + 1))
	done
	sync "$f"
	t1=$(date +%s%N)
	echo $(( n * 16 * 1000 / ( (t1 - t0) / 1000000 ) ))
}
head -c 16M /dev/urandom >"$dir/chunk"
for round in $(seq 1 "${BENCH_ROUNDS:-4}"); do
	echo "write/discard mix, round $round: passdown on $(churn "$dir/mnt/von") MiB/s written, off $(churn "$dir/mnt/voff") MiB/s"
done
echo "discarded by passdown: $(ctl status on --json | jq .discarded_bytes) bytes"
