#!/usr/bin/env bash
# t887-check-walks-a-shared-map-once-and-names-every-volume.sh: snapshots
# nobody wrote since share their origin's directory, and check walks a
# directory found whole once for all the volumes of one size that share
# it (core/thin/thin_walk.c, thin_walk_check).  A wrong count in that
# directory is still named for each of them, and a snapshot written since
# (its own directory) is checked on its own.
# TRANSPORTS: io_uring
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires sqlite3

make_pool
add_file_device d0 64M >/dev/null
mapperctl create thin-pool tp --size 16M >/dev/null
mapperctl create thin v --pool tp --size 4M >/dev/null
start_daemon
head -c $((2 * MiB)) /dev/urandom | dd of="$MNT/v" bs=1M oflag=direct conv=notrunc status=none
for i in 1 2 3; do
	mapperctl snapshot v "s$i" >/dev/null
done
mapperctl snapshot --active v w >/dev/null
head -c 65536 /dev/urandom | dd of="$MNT/w" bs=64K seek=40 oflag=direct conv=notrunc status=none
mapperctl check >check.out 2>&1 || fail "check of a healthy pool: $(cat check.out)"
stop_daemon

shared=$(sqlite3 "$POOL/pool.db" "SELECT dir FROM thin GROUP BY dir HAVING count(*) = 4")
[ -n "$shared" ] || fail "v and its three snapshots do not share one directory: $(sqlite3 "$POOL/pool.db" "SELECT * FROM thin")"
sqlite3 "$POOL/pool.db" "UPDATE thin_dir SET mapped = mapped + 1 WHERE id = $shared"
start_daemon
! mapperctl check >check.out 2>&1 || fail "check missed a wrong count in a shared directory"
for vol in v s1 s2 s3; do
	grep -q "volume '$vol': its directory $shared says it maps" check.out ||
		fail "check did not name $vol: $(head -n 6 check.out)"
done
! grep -q "volume 'w'" check.out || fail "check blamed w, which has its own directory: $(grep "'w'" check.out)"
log "a wrong count in a directory four volumes share: named for each of them"
