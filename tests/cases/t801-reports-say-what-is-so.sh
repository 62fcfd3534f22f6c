#!/usr/bin/env bash
# t801-reports-say-what-is-so.sh: `device list` shows a device with a
# little used as less than all free (free rounded down, never up to the
# size); a thin pool's autoextend at threshold 100 reads "off" in change
# and status, on once a threshold below 100 is set, and --json keeps the
# numbers; `trim` prints what this run discarded, 0 B for a trim after a
# trim, in --json too; the mount root's times are the daemon's start,
# not 1970.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq fallocate

make_pool
add_file_device d0 10G >/dev/null
mapperctl create linear l --size 5M >/dev/null

# 10 GiB less its 1 MiB label less 5 MiB used: 9.99 GiB free, not "10.00 GiB".
[ "$(mapperctl device list --json | json_get '.[] | select(.name == "d0") | .free')" -eq \
	$((10 * GiB - 6 * MiB)) ] || fail "device list --json has d0's free bytes wrong"
mapperctl device list | grep -Eq '^d0 .* 10\.00 GiB +5\.00 MiB +9\.99 GiB +ok$' ||
	fail "device list shows: $(mapperctl device list)"

mapperctl create thin-pool tp --size 4M >/dev/null	# 64 blocks of 64K
mapperctl create thin v --pool tp --size 4M >/dev/null
mapperctl change tp --discard-passdown on | grep -q "autoextend off," ||
	fail "change does not say autoextend off at threshold 100"
mapperctl status tp >status.txt
grep -qx "autoextend: no" status.txt || fail "status does not say autoextend: no: $(grep autoextend status.txt)"
! grep -q "autoextend_threshold" status.txt || fail "status shows a threshold for an autoextend that is off"
mapperctl status tp --json | jq -e '.autoextend == false and .autoextend_threshold == 100' >/dev/null ||
	fail "status --json: $(mapperctl status tp --json | jq -c '[.autoextend, .autoextend_threshold]')"
mapperctl change tp --autoextend-threshold 80 --autoextend-percent 20 |
	grep -q "autoextend past 80% by 20%," || fail "change does not say autoextend past 80% by 20%"
mapperctl status tp | grep -qx "autoextend: yes" || fail "status does not say autoextend: yes"
mapperctl status tp | grep -qx "autoextend_threshold: 80" || fail "status does not show the threshold"

before=$(date +%s)
start_daemon
for t in %Y %Z %X; do
	at=$(stat -c "$t" "$MNT")
	[ "$at" -ge "$before" ] && [ "$at" -le "$(date +%s)" ] ||
		fail "the mount root's time ($t) is $(date -u -d "@$at"), not the daemon's start"
done

# 1 MiB written, then discarded: passed down at once.  The first trim
# discards the 3 MiB never discarded, the second nothing.
dd if=/dev/urandom of="$MNT/v" bs=1M count=1 conv=notrunc,fsync status=none
fallocate -p -o 0 -l "$MiB" "$MNT/v"
said=$(mapperctl trim tp)
[ "$said" = "discarded 3.00 MiB ($((3 * MiB)) bytes) of free blocks" ] || fail "the first trim says: $said"
said=$(mapperctl trim tp)
[ "$said" = "discarded 0 B (0 bytes) of free blocks" ] || fail "a second trim says: $said"
said=$(mapperctl trim tp --json | json_get .discarded_bytes)
[ "$said" -eq 0 ] || fail "a third trim --json discarded $said bytes"
# A block used and freed again is discarded by the next trim alone.
mapperctl change tp --discard-passdown off >/dev/null
dd if=/dev/urandom of="$MNT/v" bs=64K count=1 conv=notrunc,fsync status=none
fallocate -p -o 0 -l 65536 "$MNT/v"
said=$(mapperctl trim tp --json | json_get .discarded_bytes)
[ "$said" -eq 65536 ] || fail "a trim after one block was freed discarded $said bytes"
