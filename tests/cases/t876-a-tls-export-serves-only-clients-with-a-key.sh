#!/usr/bin/env bash
# t876-a-tls-export-serves-only-clients-with-a-key.sh: `export --tcp
# --tls-psk FILE` in a network namespace of its own.  A client without
# TLS, or with another key, is refused by the server; libnbd's clients
# with the URI export printed, and qemu with tls-creds-psk, read the
# volume as its file.  A key file others may read, a symbolic link, a
# file of another syntax or none at all are refused in one line; a key
# file that became readable by others while no daemon ran fails the
# export at start, saying why, and is served once mended.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires nbdkit nbdinfo nbdcopy qemu-img ip nsenter jq od
requires_that nbdkit --tls=require --tls-psk=/dev/null null --version

ns=mapperfs-t876-$$
ip netns add "$ns" || skip "cannot create a network namespace"
cleanup_fn ip netns del "$ns"
in_ns() { nsenter --net="/run/netns/$ns" "$@"; }	# as t874: the mount stays ours
in_ns ip link set lo up
mapperfs() { in_ns "$MAPPERFS_BUILD/bin/mapperfs" "$@"; }

hexkey() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
(umask 077 && printf 'alice:%s\n' "$(hexkey)" >keys.psk &&
	mkdir qemu && cp keys.psk qemu/keys.psk &&
	printf 'alice:%s\n' "$(hexkey)" >other.psk)

make_pool
add_file_device d0 128M >/dev/null
mapperctl create thin-pool tp --size 64M >/dev/null
mapperctl create thin vm --pool tp --size 16M >/dev/null
mapperctl create thin w --pool tp --size 16M >/dev/null
no_nbdkit_left
start_daemon
dd if=/dev/urandom of="$MNT/vm" bs=64K count=8 seek=3 conv=notrunc,fsync status=none

uri="nbds://alice@127.0.0.1:10809/?tls-psk-file=$T_DIR/keys.psk"
mapperctl export vm --tcp 127.0.0.1:10809 --tls-psk keys.psk >out || fail "tls export failed"
[ "$(cat out)" = "exported volume 'vm' on $uri, TLS required" ] || fail "export said: $(cat out)"
[ "$(mapperctl status vm --json | json_get .export.tls)" = true ] || fail "status does not say TLS"
[ "$(mapperctl status vm --json | json_get .export.uri)" = "$uri" ] || fail "status gives another URI"

! in_ns nbdinfo --size nbd://127.0.0.1:10809 >plain.out 2>&1 ||
	fail "a client without TLS was served: $(cat plain.out)"
! in_ns nbdinfo --size "nbds://alice@127.0.0.1:10809/?tls-psk-file=$T_DIR/other.psk" >other.out 2>&1 ||
	fail "a client with another key was served: $(cat other.out)"
in_ns nbdcopy "$uri" copy.img || fail "nbdcopy with the key failed"
cmp copy.img "$MNT/vm" || fail "what nbdcopy read over TLS is not the volume"
in_ns qemu-img compare --object "tls-creds-psk,id=tls0,endpoint=client,dir=$T_DIR/qemu,username=alice" \
	--image-opts "driver=nbd,host=127.0.0.1,port=10809,tls-creds=tls0" "driver=file,filename=$MNT/vm" \
	>compare.log 2>&1 ||
	fail "qemu-img compare with tls-creds-psk: $(cat compare.log)"

# Key files that are refused, each in one line.
cp keys.psk open.psk && chmod 644 open.psk
expect_fail -s 1 -m "TLS key file '$T_DIR/open.psk' may be read or written by others \(mode 0644\): chmod 600 it" \
	mapperctl export w --tcp 127.0.0.1:10810 --tls-psk open.psk
ln -s keys.psk link.psk
expect_fail -s 1 -m "TLS key file '$T_DIR/link.psk' cannot be opened: it is a symbolic link" \
	mapperctl export w --tcp 127.0.0.1:10810 --tls-psk link.psk
(umask 077 && echo 'alice:not-hex' >bad.psk && : >empty.psk)
expect_fail -s 1 -m "TLS key file '$T_DIR/bad.psk' line 1: the key is not hexadecimal" \
	mapperctl export w --tcp 127.0.0.1:10810 --tls-psk bad.psk
expect_fail -s 1 -m "TLS key file '$T_DIR/empty.psk' holds no key" \
	mapperctl export w --tcp 127.0.0.1:10810 --tls-psk empty.psk
expect_fail -s 1 -m "TLS key file '$T_DIR/none.psk' cannot be opened: No such file or directory" \
	mapperctl export w --tcp 127.0.0.1:10810 --tls-psk none.psk
mapperctl status w --json | jq -e '.export == null' >/dev/null || fail "a refused export was recorded"

# Made readable by others while no daemon ran: failed at start, with why.
stop_daemon
chmod 644 keys.psk
start_daemon
json_get .export.reason < <(mapperctl status vm --json) |
	grep -q "TLS key file '$T_DIR/keys.psk' may be read or written by others" ||
	fail "the export does not say why it failed: $(mapperctl status vm --json | jq -c .export)"
mark=$(log_mark)
chmod 600 keys.psk
wait_log "export of volume 'vm' on nbds://alice@127.0.0.1:10809/.*: nbdkit serves it" "$mark"
in_ns nbdinfo --size "$uri" >/dev/null || fail "the mended export does not serve"
stop_daemon
