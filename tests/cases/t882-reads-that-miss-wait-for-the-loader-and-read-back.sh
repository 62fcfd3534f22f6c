#!/usr/bin/env bash
# t882-reads-that-miss-wait-for-the-loader-and-read-back.sh: a thin pool
# whose map is twelve times its memory budget (-o cache_size=64K: 32
# leaves; the volume's map has 391) is read back by several fio jobs at
# once, each with several reads in flight, nearly every one missing its
# leaf.  Over io_uring with eight entries per thread, those misses wait
# for the pool's loader while the thread serves the others: status counts
# the loads and the reads that waited, and every block reads back what
# was written; over /dev/fuse they fault in place, as before.  check
# agrees with every count after.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires fio jq

n=200000
jobs=4
make_mapped_pool "$n"

pool_status() { mapperctl status tp --json | json_get ".$1"; }
# fio_pass NAME ARGS...: $jobs jobs of random 4 KiB writes, each over its
# own quarter of the volume, verified; ARGS add --verify_only for the reads.
fio_pass()
{
	local name=$1

	shift
	fio --name="$name" --filename="$MNT/vol" --rw=randwrite --bs=4k --direct=1 \
		--ioengine=libaio --iodepth=8 --numjobs=$jobs --size=$((n * 65536 / jobs)) \
		--offset_increment=$((n * 65536 / jobs)) --number_ios=1500 --verify=crc32c \
		--verify_state_save=0 --randrepeat=1 --randseed=7 "$@" >"$name.out" 2>&1 ||
		fail "fio $name: $(grep -m 3 -i -E 'error|bad|verify' "$name.out")"
}

start_daemon "$POOL" "$T_DIR/mnt" -o cache_size=64K,batch=8
fio_pass write --do_verify=0
stop_daemon
# Restarted: nothing of the map is loaded, every read of a leaf first misses it.
start_daemon "$POOL" "$T_DIR/mnt" -o cache_size=64K,batch=8
fio_pass read --verify_only
loads=$(pool_status cache_loads) waits=$(pool_status cache_miss_waits)
log "$(( jobs * 1500 )) reads verified: $loads leaves loaded, $waits reads waited for the loader, $(pool_status cache_evictions) unloaded"
[ "$loads" -gt 100 ] || fail "reading the map back loaded only $loads leaves"
if grep -q "over io_uring" "$POOL/mapperfs.log"; then
	[ "$waits" -gt 0 ] || fail "over io_uring no read that missed waited for the loader"
else
	[ "$waits" -eq 0 ] || fail "over /dev/fuse $waits reads waited for the loader, none should"
fi
mapperctl check >check.out 2>&1 || fail "check: $(cat check.out)"
