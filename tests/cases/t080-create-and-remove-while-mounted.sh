#!/usr/bin/env bash
# t080-create-and-remove-while-mounted.sh: a volume created while the daemon
# runs appears in the mount at once (even right after a lookup of that name
# failed), is usable, and one removed disappears at once.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 32M >/dev/null
start_daemon
[ -z "$(ls -A "$MNT")" ] || fail "a new pool's mount is not empty: $(ls -A "$MNT")"

! stat "$MNT/n" >/dev/null 2>&1 || fail "n exists before it was created"	# the kernel may cache this miss
mapperctl create linear n --size 6M
[ "$(size_of "$MNT/n")" -eq $((6 * MiB)) ] || fail "new volume n is not visible at once with its size"
[ "$(ls "$MNT")" = n ] || fail "ls shows '$(ls "$MNT")', not n"
head -c $((6 * MiB)) /dev/urandom >data
dd if=data of="$MNT/n" bs=1M conv=notrunc,fsync status=none
cmp data "$MNT/n" || fail "new volume n does not read back"

mapperctl create linear m --size 2M
stat "$MNT/n" >/dev/null					# the kernel caches this hit
mapperctl remove n
! stat "$MNT/n" >/dev/null 2>&1 || fail "removed volume n is still visible"
[ "$(ls "$MNT")" = m ] || fail "after removing n, ls shows '$(ls "$MNT")'"
[ "$(mapperctl list --json | json_get '.[].name')" = m ] || fail "list does not show just m"
