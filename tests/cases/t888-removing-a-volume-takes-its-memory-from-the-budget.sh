#!/usr/bin/env bash
# t888-removing-a-volume-takes-its-memory-from-the-budget.sh: removing the
# last volume of a thin pool whose cache random reads filled reserves what
# the removal holds until its commit (the sets of the blocks it frees, the
# leaves it drops: thin_remove_bytes) from the pool's memory budget, as
# check and dump do (t885): the pool unloads that many leaves first, whole
# slab pages of them, and gives those pages back to the OS, so the
# daemon's peak during the removal (VmHWM) stays near its RSS before
# instead of adding the removal on top; and once the commit freed the
# removed map's leaves, their memory leaves the daemon (VmRSS drops by
# most of the cache) instead of waiting in the slab.  1e7 blocks (19532
# leaves, 38 MiB of entries) under a 32 MiB budget: the removal holds
# ~5 MiB, which the old code added to the peak.  Under AddressSanitizer
# (whose quarantine keeps what is freed) the memory is not compared.
# TRANSPORTS: io_uring
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires fio jq

n=10000000
budget=$((32 * MiB))
make_mapped_pool "$n"
start_daemon "$POOL" "$T_DIR/mnt" -o cache_size=32M
pid=$(daemon_pid)

pool_status() { mapperctl status tp --json | json_get ".$1"; }
kib() { awk -v f="$1:" '$1 == f { print $2 }' "/proc/$pid/status"; }

for _ in 1 2 3 4 5 6 7 8; do
	[ "$(pool_status cache_bytes)" -lt $((budget - budget / 32)) ] || break
	fio --name=fill --filename="$MNT/vol" --rw=randread --bs=4k --direct=1 \
		--ioengine=psync --number_ios=20000 --randrepeat=0 --size=$((n * 65536)) \
		>fill.out 2>&1 || fail "fio fill: $(tail -n 3 fill.out)"
done
cache=$(pool_status cache_bytes)
[ "$cache" -ge $((budget - budget / 32)) ] || fail "the reads did not fill the budget: cache_bytes $cache"

evictions=$(pool_status cache_evictions)
before=$(kib VmRSS)
echo 5 >"/proc/$pid/clear_refs"		# VmHWM from VmRSS now
mapperctl remove vol >remove.out 2>&1 || fail "remove: $(cat remove.out)"
peak=$(kib VmHWM)
after=$(kib VmRSS)
unloaded=$(( $(pool_status cache_evictions) - evictions ))
log "cache $((cache >> 10)) KiB; VmRSS $before KiB before, peak $peak, after $after; $unloaded leaves unloaded for the removal"

# The sets' bits: a page per 32768 blocks each, two sets (no shared block).
[ "$unloaded" -ge $(( 2 * n / 8 / 2048 )) ] ||
	fail "the removal unloaded $unloaded leaves: less than its sets of freed blocks"
if sanitized; then
	log "AddressSanitizer's build: its RSS is not the daemon's, not compared"
else
	[ "$peak" -le $((before + 2048)) ] ||
		fail "the removal peaked at $peak KiB, $((peak - before)) KiB over the $before KiB before it"
	[ "$after" -le $((before - cache / 1024 / 2)) ] ||
		fail "VmRSS $after KiB after the removal, $before KiB before: the removed map's $((cache >> 10)) KiB of leaves did not leave"
fi
[ "$(pool_status cache_reserved_bytes)" -eq 0 ] || fail "the removal's reservation stayed"
[ "$(pool_status data_used_bytes)" -eq 0 ] || fail "the pool is not empty after the removal"
mapperctl check >/dev/null || fail "check fails after the removal"
