#!/usr/bin/env bash
# t502-remount-right-after-unmount.sh: `fusermount3 -u M && mapperfs --pool
# P M` works every time, 50 times in a row, though the old daemon still
# holds the pool lock for a moment after the unmount; each new mount reads
# the volume; so does `fusermount3 -u M && mapperctl ...`, 30 times; a
# second daemon on a pool that is served is still refused, naming the
# daemon.
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs

make_pool
add_file_device d0 32M >/dev/null
mapperctl create linear v --size 4M >/dev/null
mapperctl create thin-pool tp --size 8M >/dev/null
mapperctl create thin t --pool tp --size 4M >/dev/null
head -c $((4 * MiB)) /dev/urandom >data
start_daemon
dd if=data of="$MNT/v" bs=1M conv=notrunc,fsync status=none
dd if=data of="$MNT/t" bs=1M conv=notrunc,fsync status=none

for i in $(seq 1 50); do
	fusermount3 -u "$MNT" && mapperfs --pool "$POOL" "$MNT" ||
		fail "remount $i right after the unmount failed"
	echo "$(daemon_pid)" >>"$T_DIR/.daemons"
	cleanup_fn _t_undo_daemon "$MNT" "$(daemon_pid)"
	cmp data "$MNT/v" || fail "remount $i: v reads wrong data"
	cmp data "$MNT/t" || fail "remount $i: t reads wrong data"
done

for i in $(seq 1 30); do
	fusermount3 -u "$MNT" && mapperctl status v >/dev/null 2>ctl.err ||
		fail "mapperctl $i right after the unmount failed: $(cat ctl.err)"
	mapperfs --pool "$POOL" "$MNT" || fail "remount $i after mapperctl failed"
	echo "$(daemon_pid)" >>"$T_DIR/.daemons"
	cleanup_fn _t_undo_daemon "$MNT" "$(daemon_pid)"
done

mkdir -p mnt2
cleanup_fn _t_undo_daemon "$T_DIR/mnt2" ""	# in case it wrongly starts
expect_fail -m "pool '.*' is served by mapperfs \(pid $(daemon_pid)\) already" \
	mapperfs --pool "$POOL" mnt2
! mountpoint -q mnt2 || fail "a second daemon mounted a served pool"
