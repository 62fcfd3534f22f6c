#!/usr/bin/env bash
# t523-impossible-extend-is-refused-and-the-daemon-stays.sh: an extend to
# a size the daemon cannot map or place is refused in one line before
# anything changes, and the daemon goes on serving; a discard across the
# whole volume afterwards is fine.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq fallocate

make_pool
add_file_device d0 256M >/dev/null
mapperctl create linear lin --size 8M >/dev/null
mapperctl create thin-pool tp --size 64M >/dev/null
mapperctl create thin v --pool tp --size 16M >/dev/null
start_daemon
pid=$(daemon_pid)
head -c $((4 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=1M conv=notrunc,fsync status=none
mapperctl list --json >before

expect_fail -s 1 -m "thin pool 'tp' is at most" mapperctl extend v --size 1048576T
expect_fail -s 1 -m "thin pool 'tp' is at most" mapperctl extend v --size 144115188075921408
expect_fail -s 1 -m "too large" mapperctl extend v --size 99999999T
expect_fail -s 1 -m "not enough free space" mapperctl extend lin --size 1T
expect_fail -s 1 -m "not enough free space" mapperctl extend tp --size 1T
mapperctl list --json | cmp -s before - || fail "a refused extend changed the pool"

kill -0 "$pid" || fail "the daemon died"
[ "$(stat -c %s "$MNT/v")" -eq $((16 * MiB)) ] || fail "v's size changed"
cmp data <(head -c $((4 * MiB)) "$MNT/v") || fail "v's data changed"
fallocate -p -o 0 -l $((16 * MiB)) "$MNT/v" || fail "discarding v failed"
kill -0 "$pid" || fail "the daemon died on a discard"
mapperctl check >check.log || { cat check.log >&2; fail "check failed"; }
