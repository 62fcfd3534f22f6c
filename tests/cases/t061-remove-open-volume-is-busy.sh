#!/usr/bin/env bash
# t061-remove-open-volume-is-busy.sh: a volume whose file is open cannot be
# removed ("busy"), stays listed and served with its data; once closed it
# can be removed.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 32M >/dev/null
mapperctl create linear v --size 8M
start_daemon
head -c $((8 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=1M conv=notrunc,fsync status=none
mapperctl list --json >before

exec 3<>"$MNT/v"
expect_fail -s 1 -m '^mapperctl: .*busy' mapperctl remove v
mapperctl list --json | cmp -s before - || fail "a refused remove changed the list"
[ -f "$MNT/v" ] || fail "v vanished from the mount"
cmp data /dev/fd/3 || fail "v's data changed after a refused remove"
exec 3>&-

mapperctl remove v
[ "$(mapperctl list --json | jq length)" -eq 0 ] || fail "v is still listed after remove"
