#!/usr/bin/env bash
# t500-sigterm-serves-open-volumes-until-closed.sh: SIGTERM or SIGINT while
# a volume is open (by a reader of the file, by a loop device under fio)
# answers every request: the mount is detached, the open volume keeps
# reading its data, the log names it and says the daemon waits for it, and
# the daemon is gone within 1 s of the last close.  Meanwhile `mapperctl
# status` and `list` answer, status saying the daemon stops and what it
# still serves, and a change is refused in one line saying the same.
# Nothing open (a shell may still be in the mount): it exits within 1 s of
# the signal.
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs
requires_loop
requires fio flock

make_pool
add_file_device d0 64M >/dev/null
mapperctl create linear v --size 32M >/dev/null
mapperctl create thin-pool tp --size 16M >/dev/null
mapperctl create thin t --pool tp --size 8M >/dev/null
head -c $((32 * MiB)) /dev/urandom >data

# reads_next FD N: the next 8 MiB through FD, the Nth (from 0), within 2 s.
reads_next()
{
	timeout 2 dd bs=1M count=8 status=none <&"$1" >got ||
		fail "a read through the open file failed or hung"
	cmp got <(dd if=data bs=1M skip=$((8 * $2)) count=8 status=none) ||
		fail "the open file read wrong data"
}

# SIGTERM with the file open and a loop device under fio.
start_daemon
pid=$(daemon_pid)
dd if=data of="$MNT/v" bs=1M conv=notrunc,fsync status=none
head -c $((8 * MiB)) data | dd of="$MNT/t" bs=1M conv=notrunc status=none
dev=$(attach_loop "$MNT/v")
exec 3<"$MNT/v"
fio --name=r --filename="$dev" --rw=randread --bs=64k --direct=1 --ioengine=libaio \
	--iodepth=16 --time_based --runtime=3 --output=fio.out >/dev/null 2>&1 &
fio=$!
kill -TERM "$pid"
wait_log "SIGTERM: .* still serving the open volumes 'v' \(2\); the daemon stops once they are closed" >/dev/null
! mountpoint -q "$MNT" || fail "$MNT is still mounted after SIGTERM"
mapperctl status --json >status.json || fail "status failed while the daemon stopped"
[ "$(json_get .pool.daemon_pid <status.json)" = "$pid" ] || fail "status names another daemon"
json_get .pool.stopping <status.json | grep -q "'v' (2)" ||
	fail "status does not say what the stopping daemon serves: $(cat status.json)"
mapperctl list --json | jq -e 'length == 3' >/dev/null || fail "list failed while the daemon stopped"
expect_fail -s 1 -m "^mapperctl: create linear: pool '.*' is served by mapperfs \(pid $pid\), which is stopping: it still serves the open volumes 'v' \(2\); it takes no changes$" \
	mapperctl create linear x --size 4M
cmp data /dev/fd/3 || fail "the open file read wrong data after SIGTERM"
exec 3<&-
timeout 3 dd if="$dev" iflag=direct bs=1M status=none | cmp - data ||
	fail "the loop device read wrong data after SIGTERM"
wait_pid "$fio" || fail "fio on the loop device hung after SIGTERM"
wait "$fio" || { cat fio.out >&2; fail "fio on the loop device saw errors after SIGTERM"; }
pool_locked "$POOL" || fail "the daemon exited while a loop device still had v open"
detach_loop "$dev"
wait_unlocked "$POOL" 1

# The thin pool committed: what was written without fsync is there.
start_daemon
cmp <(head -c $((8 * MiB)) data) "$MNT/t" || fail "thin writes were lost across SIGTERM"

# SIGINT with a reader of the file that reads before and after it.
pid=$(daemon_pid)
exec 3<"$MNT/v"
reads_next 3 0
kill -INT "$pid"
wait_log "SIGINT: .* still serving the open volumes 'v' \(1\)" >/dev/null
reads_next 3 1
exec 3<&-
wait_unlocked "$POOL" 1

# No volume open, only a shell's working directory in the mount (which
# keeps a detached mount alive): gone within 1 s all the same, and the
# shell gets an error, not a hang.
start_daemon
mkfifo go in
(cd "$MNT" && echo >"$T_DIR/in" && read -r _ <"$T_DIR/go" && ! timeout 5 ls . >/dev/null 2>&1) &
inside=$!
cleanup_fn end_pid "$inside"
read -r _ <in			# the shell is in the mount before the signal
kill -TERM "$(daemon_pid)"
wait_unlocked "$POOL" 1
! mountpoint -q "$MNT" || fail "$MNT is still mounted after SIGTERM"
echo >go
wait "$inside" || fail "listing the stopped mount from inside it did not fail at once"
