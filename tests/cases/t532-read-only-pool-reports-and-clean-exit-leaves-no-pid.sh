#!/usr/bin/env bash
# t532-read-only-pool-reports-and-clean-exit-leaves-no-pid.sh: a pool
# directory on a read-only file system still answers the reports (list,
# status, check, diff) and refuses a change in one line naming the cause,
# changing no byte; a daemon that exits cleanly leaves no mapperfs.pid.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires_root

make_pool
add_file_device d0 32M >/dev/null
mapperctl create linear lin --size 4M >/dev/null
mapperctl create thin-pool tp --size 8M >/dev/null
mapperctl create thin t --pool tp --size 4M >/dev/null
mapperctl snapshot t s >/dev/null

# The daemon's pid file lives as long as the daemon.
start_daemon
[ -s "$POOL/mapperfs.pid" ] || fail "no pid file while the daemon runs"
stop_daemon
[ ! -e "$POOL/mapperfs.pid" ] || fail "mapperfs.pid is left after a clean exit"

# The same pool, seen through a read-only bind mount.
mkdir ro
mount --bind "$POOL" ro || fail "cannot bind-mount the pool"
cleanup_fn _t_undo_mount "$T_DIR/ro"
mount -o remount,bind,ro ro || fail "cannot make the bind mount read-only"
fingerprint() { (cd "$POOL" && find . -type f ! -name lock -exec sha256sum {} + | sort); }
before=$(fingerprint)
for cmd in list "status lin" "status t" check "diff t s" "device list"; do
	# shellcheck disable=SC2086  # the words of the command
	mapperctl --pool "$T_DIR/ro" $cmd >out 2>err ||
		fail "'mapperctl $cmd' on a read-only pool failed: $(cat err)"
	[ -s out ] || fail "'mapperctl $cmd' on a read-only pool printed nothing"
done
expect_fail -s 1 -m "read-only file system" \
	mapperctl --pool "$T_DIR/ro" create linear x --size 1M
expect_fail -s 1 -m "read-only file system" \
	mapperctl --pool "$T_DIR/ro" snapshot t s2
[ "$(fingerprint)" = "$before" ] || fail "a refused change changed the pool"
log "reports answer on a read-only pool, changes are refused, nothing changed"
