#!/usr/bin/env bash
# t880-a-map-four-times-its-budget-reads-back.sh: a thin pool whose map is
# four times the memory budget (-o cache_size=1M: 512 leaves; the volume's
# map has 1954) unloads leaves and loads them again while fio writes and
# verifies random blocks all over it, through a snapshot's copy-on-write
# too; status counts the evictions, check agrees with every count, and
# after a restart everything reads back; offline, status shows no cache.  The volume is restored from a
# generated dump, its blocks holes of a sparse raw file, so nothing but
# what fio writes is written.
# TRANSPORTS: io_uring
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires fio jq

n=1000000
make_mapped_pool "$n"
start_daemon "$POOL" "$T_DIR/mnt" -o cache_size=1M

pool_status() { mapperctl status tp --json | json_get ".$1"; }
[ "$(pool_status cache_budget_bytes)" -eq $((1 << 20)) ] || fail "status does not show the budget"
# fio_pass NAME FILE ARGS...: random 4 KiB writes all over FILE, verified.
fio_pass()
{
	local name=$1 file=$2

	shift 2
	fio --name="$name" --filename="$file" --rw=randwrite --bs=4k --direct=1 \
		--ioengine=psync --number_ios=6000 --verify=crc32c --verify_state_save=0 \
		--randrepeat=1 --size=$((n * 65536)) "$@" >"$name.out" 2>&1 ||
		fail "fio $name: $(grep -m 3 -i -E 'error|bad|verify' "$name.out")"
}
fio_pass first "$MNT/vol" --randseed=1
[ "$(pool_status cache_evictions)" -gt 100 ] ||
	fail "the map was not unloaded: $(pool_status cache_evictions) evictions"
mapperctl check >check.out 2>&1 || fail "check: $(cat check.out)"

# Copy-on-write of leaves that may be unloaded: the snapshot's writes.
mapperctl snapshot --active vol s >/dev/null
fio_pass snap "$MNT/s" --randseed=2
mapperctl check >check.out 2>&1 || fail "check after the snapshot's writes: $(cat check.out)"

stop_daemon
start_daemon "$POOL" "$T_DIR/mnt" -o cache_size=1M
fio_pass first-again "$MNT/vol" --randseed=1 --verify_only
fio_pass snap-again "$MNT/s" --randseed=2 --verify_only
evictions=$(pool_status cache_evictions)
[ "$evictions" -gt 100 ] || fail "reading it all back unloaded nothing: $evictions evictions"
mapperctl check >check.out 2>&1 || fail "check after a restart: $(cat check.out)"

stop_daemon
# Offline, the CLI's own cache is nobody's budget: status shows none.
[ "$(mapperctl status tp --json | jq 'has("cache_budget_bytes")')" = false ] ||
	fail "an offline status shows a cache budget"
expect_fail -m "use cache_size=0 \(no budget\) or 2K" mapperfs --pool "$POOL" "$T_DIR/mnt2" -o cache_size=1K
log "a budget of 1 MiB (512 leaves), a map four times it: $evictions leaves unloaded after the restart"
