#!/usr/bin/env bash
# t527-slow-device-add-holds-up-no-commit.sh: `device add` of a slow device
# (every write delayed 3 s: the label write) holds no store transaction
# while it waits on the device, so a thin volume's writes and fsync, whose
# commit needs the database's write lock, finish while the device add is
# still writing its label.
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs
requires nbdkit nbdfuse jq

make_pool
add_file_device d0 64M >/dev/null
slow=$(nbd_device slow 32M delay-write=3)
mapperctl create thin-pool tp --size 32M >/dev/null
mapperctl create thin t --pool tp --size 16M >/dev/null
start_daemon
head -c $((4 * MiB)) /dev/urandom >data

mapperctl device add "$slow" --name slow >add.out 2>&1 &
adder=$!
cleanup_fn end_pid "$adder"
dd if=data of="$MNT/t" bs=1M conv=notrunc,fsync status=none ||
	fail "a thin write and fsync failed during a slow device add"
kill -0 "$adder" 2>/dev/null ||
	fail "the fsync waited for the slow device add to finish"
wait "$adder" || fail "the slow device add failed: $(cat add.out)"
[ "$(mapperctl device list --json | json_get '.[] | select(.name == "slow") | .state')" = ok ] ||
	fail "the slow device is not registered"
cmp data <(head -c $((4 * MiB)) "$MNT/t") || fail "the data written meanwhile is lost"
