#!/usr/bin/env bash
# t504-control-refuses-who-does-not-own-the-pool.sh: the daemon runs
# commands only for root and the owner of the pool directory (SO_PEERCRED);
# anyone else who can reach the socket gets a one-line refusal that names
# the pool, and the daemon logs it.
#
# The socket is 0600 in a 0700 pool directory inside a 0700 scratch
# directory, so nobody else can even connect.  To test the check behind
# those permissions, the test opens them up (directories 0755, socket
# 0666) as a careless admin might, then runs mapperctl as `nobody`.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires setpriv jq
id nobody >/dev/null 2>&1 || skip "no user 'nobody'"

as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }

open_up()
{
	chmod 0755 "$T_DIR" "$POOL"
	chmod 0666 "$POOL/control.sock"
}

make_pool
add_file_device d0 32M >/dev/null
mapperctl create linear v --size 4M >/dev/null
start_daemon
open_up

expect_fail -s 1 -m "^mapperctl: permission denied: only root and the owner of pool '$POOL' \(uid 0\)" \
	as_nobody "$MAPPERFS_BUILD/bin/mapperctl" --pool "$POOL" remove v
mapperctl list --json | jq -e 'length == 1' >/dev/null || fail "the refused remove removed v"
wait_log "control: refused a command from uid $(id -u nobody)"

# The owner of the pool directory is served.
stop_daemon
chown -R nobody:nogroup "$POOL"
start_daemon
open_up
as_nobody "$MAPPERFS_BUILD/bin/mapperctl" --pool "$POOL" list --json | jq -e 'length == 1' >/dev/null ||
	fail "the owner of the pool directory was not served"
mapperctl list >/dev/null || fail "root was not served"
