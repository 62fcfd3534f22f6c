#!/usr/bin/env bash
# t501-sighup-reopens-the-log-and-keeps-serving.sh: after logrotate renamed
# the log, SIGHUP makes the daemon write a new POOL/mapperfs.log (its next
# line lands there, not in the renamed file) and changes nothing else: the
# mount, an open volume and the control channel keep working, twice over.
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs

make_pool
add_file_device d0 32M >/dev/null
mapperctl create linear v --size 8M >/dev/null
start_daemon
pid=$(daemon_pid)
head -c $((8 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=1M conv=notrunc,fsync status=none
exec 3<"$MNT/v"

for round in 1 2; do
	mv "$POOL/mapperfs.log" "$POOL/mapperfs.log.$round"
	kill -HUP "$pid"
	wait_log 'SIGHUP: reopened the log' >/dev/null
	[ "$(grep -c 'SIGHUP' "$POOL/mapperfs.log.$round")" -eq $((round - 1)) ] ||
		fail "round $round: the reopen line went to the renamed log"
	mountpoint -q "$MNT" || fail "round $round: SIGHUP unmounted $MNT"
	cmp data /dev/fd/3 || fail "round $round: the open volume reads wrong data after SIGHUP"
	mapperctl create linear "w$round" --size 1M >/dev/null ||
		fail "round $round: the control channel stopped answering after SIGHUP"
	[ -f "$MNT/w$round" ] || fail "round $round: a volume made after SIGHUP is not served"
done
exec 3<&-
kill -0 "$pid" || fail "the daemon is gone after SIGHUP"
stop_daemon
grep -q "unmounted" "$POOL/mapperfs.log" || fail "the last lines did not go to the new log"
