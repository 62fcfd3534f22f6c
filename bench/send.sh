#!/usr/bin/env bash
# bench/send.sh: what `mapperctl send --since` costs when 1% of a large
# thin volume changed, against a full send.
#
# A thin volume of BENCH_SIZE (default 10G, 64 KiB blocks) is written
# whole through the mount (dd, 1 MiB writes), snapshotted (s1), then
# BENCH_CHANGED_PERMILLE (default 10: 1%) of its blocks are rewritten at
# random places with fio (64 KiB direct writes, each block once), and it
# is snapshotted again (s2).  Timed, with the daemon serving:
#   - send s1, the whole volume, piped into `wc -c`;
#   - send s2 --since s1 into a file: its time, its bytes, and its bytes
#     against the changed blocks' (the stream's overhead);
#   - receive of both into a second pool of the same daemon count: the
#     full stream through a pipe (send s1 | receive), then the incremental
#     one from its file, and cmp of the result against s2.
# The sending pool's raw device is in /dev/shm (BENCH_DIR elsewhere); the
# receiving pool's in BENCH_RECEIVE_DIR (default /var/tmp: two 10 GiB
# pools in memory would take most of it).  BENCH_RECEIVE=0 skips the
# receive.  Needs root (FUSE); not run by CI.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
bin=$src/build/bin
size=${BENCH_SIZE:-10G}
permille=${BENCH_CHANGED_PERMILLE:-10}
receive=${BENCH_RECEIVE:-1}
dir=$(mktemp -d "${BENCH_DIR:-/dev/shm}/mapperfs-send.XXXXXX")
rdir=$(mktemp -d "${BENCH_RECEIVE_DIR:-/var/tmp}/mapperfs-receive.XXXXXX")
mnts=()

ms() { echo $(( ($2 - $1) / 1000000 )); }
now() { date +%s%N; }
wait_gone() { timeout 30 tail --pid="$1" -f /dev/null || true; }

cleanup()
{
	local m pid

	for m in "${mnts[@]}"; do
		pid=$(cat "$m.pid" 2>/dev/null || true)
		fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || true
		[ -z "$pid" ] || wait_gone "$pid"
	done
	rm -rf "$dir" "$rdir"
}
trap cleanup EXIT

[ -x "$bin/mapperctl" ] || { echo "bench: build first (tests/lib/deps.sh: deps_build build)" >&2; exit 1; }
command -v fio >/dev/null || { echo "bench: needs fio" >&2; exit 1; }

# serve POOL_DIR MNT: mounts a pool and remembers to unmount it.
serve()
{
	mkdir -p "$2"
	"$bin/mapperfs" --pool "$1" "$2"
	cp "$1/mapperfs.pid" "$2.pid"
	mnts+=("$2")
}

# pool DIR SIZE: a pool with one raw file and a thin pool filling it.
pool()
{
	local bytes

	bytes=$(numfmt --from=iec "$2")
	"$bin/mapperctl" --pool "$1" init >/dev/null
	"$bin/mapperctl" --pool "$1" device add "$1/raw" --create $((bytes / 1048576 * 21 / 20 + 64))M \
		--name r >/dev/null
	"$bin/mapperctl" --pool "$1" create thin-pool tp --size $((bytes / 1048576 * 21 / 20))M \
		--low-water 0 >/dev/null
}

A=$dir/a B=$rdir/b
ca() { "$bin/mapperctl" --pool "$A" "$@"; }
cb() { "$bin/mapperctl" --pool "$B" "$@"; }
pool "$A" "$size"
ca create thin v --pool tp --size "$size" >/dev/null
serve "$A" "$dir/ma"
bytes=$(numfmt --from=iec "$size")
blocks=$((bytes / 65536))
changed=$((blocks * permille / 1000))

echo "send of a $size thin volume (64 KiB blocks), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg):"
t0=$(now)
dd if=/dev/urandom of="$dir/ma/v" bs=1M count=$((bytes / 1048576)) conv=notrunc,fsync status=none
t1=$(now)
printf '  filled the volume:                     %8d ms\n' "$(ms "$t0" "$t1")"
ca snapshot v s1 >/dev/null
fio --name=change --filename="$dir/ma/v" --rw=randwrite --bs=64k --direct=1 \
	--size="$bytes" --number_ios="$changed" --randrepeat=0 --end_fsync=1 \
	--output=/dev/null
ca snapshot v s2 >/dev/null
diffed=$(ca diff s1 s2 --json | jq '[.[].blocks] | add')

t0=$(now)
full=$(ca send s1 | wc -c)
t1=$(now)
full_ms=$(ms "$t0" "$t1")
t0=$(now)
ca send s2 --since s1 -o "$dir/inc.stream"
t1=$(now)
inc_ms=$(ms "$t0" "$t1")
inc=$(stat -c %s "$dir/inc.stream")
printf '  full send of s1:                       %8d ms  %14d bytes (%d MiB/s)\n' \
	"$full_ms" "$full" $((full / 1048576 * 1000 / (full_ms > 0 ? full_ms : 1)))
printf '  send s2 --since s1 (%d blocks changed): %8d ms  %14d bytes (%s%% of the full stream)\n' \
	"$diffed" "$inc_ms" "$inc" "$(awk -v a="$inc" -v b="$full" 'BEGIN { printf "%.2f", 100 * a / b }')"
printf '  stream overhead over the changed blocks: %d bytes (%d bytes per block)\n' \
	$((inc - diffed * 65536)) $(( (inc - diffed * 65536) / (diffed > 0 ? diffed : 1) ))

[ "$receive" = 1 ] || exit 0
pool "$B" "$size"
serve "$B" "$rdir/mb"
t0=$(now)
ca send s1 | cb receive b1 >/dev/null
t1=$(now)
cb receive b2 --from "$dir/inc.stream" --active >/dev/null
t2=$(now)
ca activate s2 >/dev/null
cmp "$dir/ma/s2" "$rdir/mb/b2" || { echo "bench: b2 received does not read as s2" >&2; exit 1; }
printf '  send s1 | receive b1 (receiving pool in %s): %8d ms\n' "${BENCH_RECEIVE_DIR:-/var/tmp}" \
	"$(ms "$t0" "$t1")"
printf '  receive b2 --from the incremental stream:              %8d ms\n' "$(ms "$t1" "$t2")"
