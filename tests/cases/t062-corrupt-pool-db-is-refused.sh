#!/usr/bin/env bash
# t062-corrupt-pool-db-is-refused.sh: a pool whose database is garbage is
# refused by mapperctl and by mapperfs with one line each, and nothing is
# mounted.  (It is done on a copy; the original pool keeps working.)
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs

make_pool
add_file_device d0 16M >/dev/null
mapperctl create linear v --size 4M

cp -a "$POOL" bad
size=$(size_of bad/pool.db)
head -c "$size" /dev/urandom >bad/pool.db
rm -f bad/pool.db-wal bad/pool.db-shm

expect_fail -m '^mapperctl: ' mapperctl --pool bad list
expect_fail -m '^mapperctl: ' mapperctl --pool bad status v
expect_fail -m '^mapperctl: ' mapperctl --pool bad create linear x --size 1M

mkdir mnt
cleanup_fn _t_undo_daemon "$T_DIR/mnt" ""	# in case it wrongly starts
expect_fail mapperfs --pool bad mnt
! mountpoint -q mnt || fail "mapperfs mounted a pool with a garbage database"

# The corruption was all there was to it: the untouched pool is fine.
[ "$(mapperctl list --json | jq length)" -eq 1 ] || fail "the original pool is damaged"
start_daemon
[ -f "$MNT/v" ] || fail "the original pool does not serve v"
