#!/usr/bin/env bash
# t875-a-flush-on-one-connection-commits-the-writes-of-all.sh: why the
# export may advertise multi-conn.  nbdcopy writes a fresh thin volume
# over several connections and never flushes; one flush on another
# connection (qemu-io) must make all of it durable: the daemon is killed
# with -9 right after, before its periodic commit (1 s) would have taken
# the last writes' new blocks, and the next daemon reads every byte back.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires nbdkit nbdcopy nbdinfo qemu-io jq
requires_that nbdkit file --version

make_pool
add_file_device d0 256M >/dev/null
mapperctl create thin-pool tp --size 128M --block-size 64K >/dev/null
mapperctl create thin vm --pool tp --size 64M >/dev/null
mapperctl export vm --unix "$T_DIR/vm.sock" >/dev/null
uri="nbd+unix:///?socket=$T_DIR/vm.sock"
no_nbdkit_left
start_daemon
[ "$(nbdinfo --json "$uri" | jq -r '.exports[0].can_multi_conn')" = true ] ||
	fail "the export does not advertise multi-conn"

dd if=/dev/urandom of=data bs=1M count=32 status=none
nbdcopy --connections=4 data "$uri" || fail "nbdcopy to the export failed"
qemu-io -f raw -c flush "$uri" >qio.log || fail "flush over a new connection failed: $(cat qio.log)"
crash_daemon
start_daemon
cmp data <(head -c 32M "$MNT/vm") || fail "writes of other connections were lost despite the flush"
