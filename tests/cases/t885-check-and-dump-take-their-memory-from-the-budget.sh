#!/usr/bin/env bash
# t885-check-and-dump-take-their-memory-from-the-budget.sh: a check or a
# dump of a running thin pool whose cache is full reserves its walk's
# counts from the pool's memory budget first: the pool unloads that many
# leaves before the walk allocates (status counts the evictions, and the
# cache is below the budget less the reservation when it ends), gives
# them back when it ends (cache_reserved_bytes 0), and reads verified by
# fio meanwhile go on; a budget smaller than what the walk needs unloads
# every clean leaf, goes on, and says so in the log.  The volume of 1e6
# blocks is restored from a generated dump, its blocks holes of a sparse
# raw file, as in t880.
# TRANSPORTS: io_uring
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires fio jq

n=1000000
make_mapped_pool "$n"
start_daemon "$POOL" "$T_DIR/mnt" -o cache_size=1M

pool_status() { mapperctl status tp --json | json_get ".$1"; }
# fill_cache: random reads over the whole volume until the budget (512 leaves of 1954) is full.
fill_cache()
{
	fio --name=fill --filename="$MNT/vol" --rw=randread --bs=4k --direct=1 \
		--ioengine=psync --number_ios=4000 --randrepeat=0 --size=$((n * 65536)) \
		>fill.out 2>&1 || fail "fio fill: $(tail -n 3 fill.out)"
	[ "$(pool_status cache_bytes)" -ge $((1000 << 10)) ] ||
		fail "the reads did not fill the budget: cache_bytes $(pool_status cache_bytes)"
}
# Each count of 1e6 blocks: 123 pages of 2 KiB (thin_refs_bytes); the
# walk's leaves (1954 of 32 bytes: 31 pages) are reserved on top.
counts=$(( (n / 8192 + 1) * 2048 ))

# expect_walk WHAT RESERVED CMD...: runs CMD on a full cache, idle otherwise;
# the walk reserved at least RESERVED bytes, so that many were unloaded first.
expect_walk()
{
	local what=$1 reserved=$2 before after cache

	shift 2
	fill_cache
	before=$(pool_status cache_evictions)
	"$@" >walk.out 2>&1 || fail "$what: $(cat walk.out)"
	after=$(pool_status cache_evictions)
	cache=$(pool_status cache_bytes)
	[ $(( (after - before) * 2048 )) -ge "$reserved" ] ||
		fail "$what reserved $reserved bytes, the pool unloaded $(( (after - before) * 2048 ))"
	[ "$cache" -le $(( (1 << 20) - reserved )) ] ||
		fail "after $what the cache holds $cache bytes, over the budget less $reserved"
	[ "$(pool_status cache_reserved_bytes)" -eq 0 ] ||
		fail "$what left $(pool_status cache_reserved_bytes) bytes reserved"
	log "$what: $((after - before)) leaves unloaded for its $reserved bytes, cache $cache bytes"
}
expect_walk check $((2 * counts)) mapperctl check
expect_walk dump "$counts" mapperctl dump tp -o dump.xml

# Reads and writes go on during walks: fio verifies what it wrote.
fio --name=busy --filename="$MNT/vol" --rw=randwrite --bs=4k --direct=1 --ioengine=psync \
	--number_ios=3000 --verify=crc32c --verify_state_save=0 --randrepeat=1 \
	--size=$((n * 65536)) >busy.out 2>&1 &
busy=$!
cleanup_fn end_pid "$busy"
for _ in 1 2 3; do
	mapperctl check >check.out 2>&1 || fail "check during writes: $(cat check.out)"
	mapperctl dump tp -o dump.xml || fail "dump during writes"
done
wait "$busy" || fail "fio during the walks: $(grep -m 3 -i -E 'error|bad|verify' busy.out)"
[ "$(pool_status cache_reserved_bytes)" -eq 0 ] || fail "reservations left after the walks"

# A budget smaller than the walk: every clean leaf goes, the walk goes on, the log says so.
stop_daemon
start_daemon "$POOL" "$T_DIR/mnt" -o cache_size=256K
mark=$(log_mark)
mapperctl check >check.out 2>&1 || fail "check on a small budget: $(cat check.out)"
wait_log "thin pool 'tp': walks and removals in it need [^,]+, its memory budget is [^:]+: every clean leaf is unloaded" "$mark"
[ "$(pool_status cache_reserved_bytes)" -eq 0 ] || fail "the small budget's reservation stayed"
