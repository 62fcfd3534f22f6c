#!/usr/bin/env bash
# t853-nbd-device-carries-a-thin-pool-under-fio-verify.sh: an NBD export
# (nbdkit's file plugin on a Unix socket) is a raw device: added by its
# URI, labelled, claimed (a second pool is refused, naming the holder),
# and a thin pool on it serves a thin volume and its snapshot under fio
# --verify.  What reached the server's file is what the volume reads (the
# bytes went over NBD, not elsewhere); status shows the device's
# connections; a restarted daemon opens it again by its URI and reads the
# same bytes; check finds the pool clean.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs
requires nbdkit fio jq

make_pool
uri=$(nbd_server r1 256M)
expect_fail -s 1 -m "give the NBD device .* a name with --name" mapperctl device add "$uri"
mapperctl device add "$uri" --name r1 | grep -q "added device 'r1' ('nbd+unix://" ||
	fail "device add of an NBD URI does not say so"
[ "$(mapperctl device list --json | json_get '.[0].path')" = "$uri" ] ||
	fail "device list does not show the URI"
expect_fail -s 1 -m "is registered already" mapperctl device add "$uri" --name again
mapperctl create thin-pool tp --size 200M >/dev/null
mapperctl create thin t --pool tp --size 1G >/dev/null
start_daemon

# The label went over NBD: the server's file carries it.
[ "$(head -c 15 "$T_DIR/nbd/r1/disk")" = MAPPERFS-LABEL1 ] || fail "the server's file has no label"
# Another pool of this host is kept off it while this one holds it.
mapperctl --pool "$T_DIR/other" init >/dev/null
expect_fail -s 1 -m "in use by mapperfs \(pid $(daemon_pid)\)" \
	mapperctl --pool "$T_DIR/other" device add "$uri" --name r1 --force

fio --name=thin --filename="$MNT/t" --rw=randwrite --bsrange=4k-256k --blockalign=4k \
	--direct=1 --ioengine=libaio --iodepth=16 --size=96M --verify=crc32c --verify_fatal=1 \
	--verify_state_save=0 --output=fio.out || fail "fio failed: $(tail -5 fio.out)"
grep -q "err= 0" fio.out || fail "fio saw errors: $(grep err= fio.out)"
mapperctl snapshot t s --active >/dev/null
dd if=/dev/urandom of="$MNT/t" bs=64k count=64 oflag=direct conv=notrunc status=none
cmp -n $((96 * MiB)) "$MNT/s" "$MNT/t" >/dev/null &&
	fail "the snapshot follows writes made after it"
before_t=$(head -c $((96 * MiB)) "$MNT/t" | sha -)
before_s=$(head -c $((96 * MiB)) "$MNT/s" | sha -)

mapperctl status --json >st.json
[ "$(json_get '.devices[0].state' <st.json)" = ok ] || fail "the NBD device is not ok"
[ "$(json_get '.devices[0].nbd.connections' <st.json)" -ge 1 ] ||
	fail "status shows no connection: $(jq -c '.devices[0]' st.json)"
[ "$(json_get '.devices[0].nbd.multi_conn' <st.json)" = true ] ||
	fail "nbdkit's file plugin allows multi-conn, status says not"
[ "$(json_get '.devices[0].nbd.failed' <st.json)" = 0 ] || fail "requests failed"
mapperctl check >check.out 2>&1 || fail "check: $(cat check.out)"

stop_daemon
start_daemon
[ "$(head -c $((96 * MiB)) "$MNT/t" | sha -)" = "$before_t" ] ||
	fail "the thin volume reads otherwise after a restart"
[ "$(head -c $((96 * MiB)) "$MNT/s" | sha -)" = "$before_s" ] ||
	fail "the snapshot reads otherwise after a restart"
mapperctl check >check.out 2>&1 || fail "check after the restart: $(cat check.out)"
stop_daemon
