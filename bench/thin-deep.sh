#!/usr/bin/env bash
# bench/thin-deep.sh: reads from a snapshot 100 levels deep vs its origin.
#
# A thin volume of BENCH_SIZE (default 512M) is filled, then snapshotted 100
# times, each snapshot of the previous one; 4 jobs x QD32 64 KiB random
# reads run on the origin and on the deepest snapshot, alternating twice.
# Snapshots share the origin's map pages instead of chaining to it, so the
# depth should not show.  Backing in /dev/shm.  Needs root.  Not run by CI.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
bin=$src/build/bin
secs=${BENCH_SECONDS:-3}
size=${BENCH_SIZE:-512M}
dir=$(mktemp -d /dev/shm/mapperfs-thin-deep.XXXXXX)
ctl() { "$bin/mapperctl" --pool "$dir/pool" "$@"; }

cleanup()
{
	set +e
	mountpoint -q "$dir/mnt" && fusermount3 -u "$dir/mnt"
	[ -s "$dir/pool/mapperfs.pid" ] &&
		timeout 30 tail --pid="$(cat "$dir/pool/mapperfs.pid")" -f /dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

randread()
{
	fio --name=deep --filename="$1" --rw=randread --bs=64k --direct=1 \
		--ioengine=libaio --iodepth=32 --numjobs=4 --group_reporting \
		--size="$size" --time_based --runtime="$secs" --output-format=json |
		jq -r '.jobs[0].read.bw_bytes / 1048576 | floor'
}

mkdir "$dir/mnt"
ctl init >/dev/null
ctl device add "$dir/raw" --create 1200M --name r >/dev/null
ctl create thin-pool tp --size 1100M >/dev/null
ctl create thin v0 --pool tp --size "$size" >/dev/null
"$bin/mapperfs" --pool "$dir/pool" "$dir/mnt"
dd if=/dev/urandom of="$dir/mnt/v0" bs=1M count="$(numfmt --from=iec "$size")" \
	iflag=fullblock,count_bytes conv=notrunc,fsync status=none

prev=v0
t0=$(date +%s%N)
for i in $(seq 1 100); do
	ctl snapshot "$prev" "s$i" >/dev/null
	prev=s$i
done
t1=$(date +%s%N)
echo "100 snapshots, each of the previous: $(( (t1 - t0) / 1000000 )) ms (CLI round trips included)"
for round in 1 2; do
	echo "round $round: origin $(randread "$dir/mnt/v0") MiB/s, 100 levels deep $(randread "$dir/mnt/s100") MiB/s"
done
cmp "$dir/mnt/v0" "$dir/mnt/s100" && echo "the deepest snapshot reads what the origin holds"
