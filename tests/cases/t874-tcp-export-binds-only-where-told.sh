#!/usr/bin/env bash
# t874-tcp-export-binds-only-where-told.sh: in a network namespace of its
# own, a daemon exports a thin volume on TCP: it listens on the address
# given and no other (ss), a client there reads the volume as its file
# (qemu-img compare) and writes to it; an IPv6 read-only export works
# beside it; an address another export has, one another program listens
# on, and one on no interface of the host are refused in one line, as is
# the export itself as a raw device of its pool, a user name in its URI
# or not (the newcomer's replay added one and the label landed); an
# export whose address was taken while no daemon ran shows failed, with
# why, and is served once the address is free; once the daemon stops,
# nothing listens.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires nbdkit nbdinfo qemu-img qemu-io ip ss nsenter jq
requires_that nbdkit file --version

ns=mapperfs-t874-$$
ip netns add "$ns" || skip "cannot create a network namespace"
cleanup_fn ip netns del "$ns"
# nsenter, not `ip netns exec`, which gives its command a mount namespace
# of its own too: the daemon's mount must be the test's.
in_ns() { nsenter --net="/run/netns/$ns" "$@"; }
in_ns ip link set lo up
# The daemon runs in the namespace (start_daemon calls mapperfs).
mapperfs() { in_ns "$MAPPERFS_BUILD/bin/mapperfs" "$@"; }

make_pool
add_file_device d0 256M >/dev/null
mapperctl create thin-pool tp --size 128M >/dev/null
mapperctl create thin vm --pool tp --size 16M >/dev/null
mapperctl create thin v6 --pool tp --size 16M >/dev/null
mapperctl create thin other --pool tp --size 16M >/dev/null
no_nbdkit_left
start_daemon
dd if=/dev/urandom of="$MNT/vm" bs=64K count=8 seek=3 conv=notrunc,fsync status=none

mapperctl export vm --tcp 127.0.0.1:10809 >out || fail "tcp export failed"
grep -q "^exported volume 'vm' on nbd://127.0.0.1:10809\$" out || fail "export said: $(cat out)"
mapperctl export v6 --tcp '[::1]:10811' --read-only >/dev/null || fail "IPv6 export failed"
in_ns ss -ltnH >listening
grep -q '127.0.0.1:10809 ' listening || fail "nothing listens on 127.0.0.1:10809: $(cat listening)"
grep -q '\[::1\]:10811 ' listening || fail "nothing listens on [::1]:10811: $(cat listening)"
[ "$(wc -l <listening)" -eq 2 ] || fail "the exports listen elsewhere too: $(cat listening)"

in_ns qemu-img compare -f raw -F raw nbd://127.0.0.1:10809 "$MNT/vm" >compare.log ||
	fail "qemu-img compare over TCP: $(cat compare.log)"
in_ns qemu-io -f raw -c 'write -P 0x77 0 64k' nbd://127.0.0.1:10809 >qio.log ||
	fail "qemu-io write over TCP failed: $(cat qio.log)"
cmp <(head -c 64K /dev/zero | tr '\0' '\167') <(head -c 64K "$MNT/vm") ||
	fail "the write over TCP is not in the file"
[ "$(in_ns nbdinfo --json 'nbd://[::1]:10811' | jq -r '.exports[0].is_read_only')" = true ] ||
	fail "the IPv6 export is not read-only"

# Taken by another export, by another program, on no interface.
expect_fail -s 1 -m "address '127.0.0.1:10809' is taken by the export of volume 'vm'" \
	mapperctl export other --tcp 127.0.0.1:10809
(umask 077; printf 'hostb:%s\n' "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" >k.psk)
for u in "nbd://127.0.0.1:10809/" "nbd://someone@127.0.0.1:10809/" \
	"nbds://hostb@127.0.0.1:10809/?tls-psk-file=$T_DIR/k.psk"; do
	expect_fail -s 1 -m "'.*' is this pool's own export of volume 'vm'" \
		mapperctl device add "$u" --name self
done
# squatters: nbdkit servers of the test's own, stopped by pid if still there
stop_squatter() { kill "$1" 2>/dev/null || true; }
in_ns nbdkit -P "$T_DIR/squatter.pid" -i 127.0.0.1 -p 10810 memory 1M
cleanup_fn stop_squatter "$(cat "$T_DIR/squatter.pid")"
expect_fail -s 1 -m "TCP address '127.0.0.1:10810' is in use" mapperctl export other --tcp 127.0.0.1:10810
expect_fail -s 1 -m "TCP address '10.255.0.1:10809' is on no interface of this host" \
	mapperctl export other --tcp 10.255.0.1:10809

# Taken while no daemon ran: the export fails, saying why, and is served
# once the address is free again (the back-off retries it).
mapperctl export other --tcp 127.0.0.1:10812 >/dev/null
stop_daemon
in_ns nbdkit -P "$T_DIR/squatter2.pid" -i 127.0.0.1 -p 10812 memory 1M
squatter=$(cat "$T_DIR/squatter2.pid")
cleanup_fn stop_squatter "$squatter"
start_daemon
mapperctl status other --json >status.json
[ "$(json_get .export.state <status.json)" = failed ] || fail "other's export on a taken address: $(jq -c .export status.json)"
json_get .export.reason <status.json | grep -q "cannot listen on '127.0.0.1:10812': address in use" ||
	fail "other's export does not say why it failed: $(jq -c .export status.json)"
mark=$(log_mark)
kill "$squatter"
wait_log "export of volume 'other' on nbd://127.0.0.1:10812: nbdkit serves it" "$mark"
[ "$(mapperctl status other --json | json_get .export.state)" = serving ] || fail "other not served once its address was free"
in_ns nbdinfo --size nbd://127.0.0.1:10812 >/dev/null || fail "cannot connect to other's export"

stop_daemon
in_ns ss -ltnH >listening
! grep -q ':1080[9] \|:1081[12] ' listening || fail "an export still listens after the daemon stopped: $(cat listening)"
