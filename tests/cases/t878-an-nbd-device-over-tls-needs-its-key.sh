#!/usr/bin/env bash
# t878-an-nbd-device-over-tls-needs-its-key.sh: a raw device whose server
# (nbdkit --tls=require --tls-psk) takes only clients with its key.  Added
# by an nbds+unix:// URI with tls-psk-file (relative paths made absolute
# by mapperctl), it carries a linear volume whose bytes reach the server's
# file, and a daemon started again reconnects with the key.  Without TLS,
# with another key, with a key file others may read or reached through a
# link, or with a key but no TLS in the scheme, device add is refused in
# one line and nothing is registered.
. "$(dirname "$0")/../lib/functions.sh"
. "$T_SRC/tests/lib/faults.sh"
requires_mapperfs
requires nbdkit jq
requires_that nbdkit --tls=require --tls-psk=/dev/null null --version

cd "$T_DIR"
hexkey() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
(umask 077 && printf 'alice:%s\n' "$(hexkey)" >keys.psk &&
	printf 'alice:%s\n' "$(hexkey)" >other.psk)
truncate -s 64M disk
cleanup_fn _t_undo_nbdkit "$T_DIR/nbdkit.pid"
nbdkit --unix "$T_DIR/sock" --pidfile "$T_DIR/nbdkit.pid" --tls=require \
	--tls-psk="$T_DIR/keys.psk" file "$T_DIR/disk" </dev/null >/dev/null 2>nbdkit.log ||
	fail "nbdkit did not start: $(cat nbdkit.log)"
tls() { echo "nbds+unix://alice@/?socket=$T_DIR/sock&tls-psk-file=$1"; }

make_pool
expect_fail -s 1 -m "^mapperctl: device add: cannot open 'nbd\+unix:///\?socket=$T_DIR/sock': .*server requires TLS" \
	mapperctl device add "nbd+unix:///?socket=$T_DIR/sock" --name r1
expect_fail -s 1 -m "^mapperctl: device add: cannot open '.*tls-psk-file=$T_DIR/other.psk': .*gnutls_handshake.* \(the TLS handshake failed: are the key in tls-psk-file and the identity before '@' the server's\?\)$" \
	mapperctl device add "$(tls "$T_DIR/other.psk")" --name r1
(umask 077 && sed 's/^alice:/bob:/' keys.psk >bob.psk)
expect_fail -s 1 -m "\(the TLS handshake failed: are the key in tls-psk-file and the identity before '@' the server's\?\)$" \
	mapperctl device add "nbds+unix://bob@/?socket=$T_DIR/sock&tls-psk-file=$T_DIR/bob.psk" --name r1
# An identity the key file does not hold: the error names the file, not a descriptor.
expect_fail -s 1 -m "^mapperctl: device add: cannot open '.*': .*$T_DIR/keys.psk" \
	mapperctl device add "nbds+unix://carol@/?socket=$T_DIR/sock&tls-psk-file=$T_DIR/keys.psk" --name r1
mapperctl device add "nbds+unix://carol@/?socket=$T_DIR/sock&tls-psk-file=$T_DIR/keys.psk" \
	--name r1 2>&1 | grep -q /dev/fd && fail "a TLS error names a descriptor, not the key file"
cp keys.psk open.psk && chmod 644 open.psk
expect_fail -s 1 -m "^mapperctl: device add: TLS key file '$T_DIR/open.psk' may be read or written by others \(mode 0644\): chmod 600 it$" \
	mapperctl device add "$(tls "$T_DIR/open.psk")" --name r1
ln -s keys.psk link.psk
expect_fail -s 1 -m "^mapperctl: device add: TLS key file '$T_DIR/link.psk' .*link" \
	mapperctl device add "$(tls "$T_DIR/link.psk")" --name r1
expect_fail -s 1 -m "^mapperctl: device add: '.*' gives a TLS key file without TLS: the URI must be nbds://IDENTITY@HOST/... or nbds\+unix://IDENTITY@/...$" \
	mapperctl device add "nbd+unix:///?socket=$T_DIR/sock&tls-psk-file=$T_DIR/keys.psk" --name r1
[ "$(mapperctl device list --json | jq length)" = 0 ] || fail "a refused device was registered"

# Relative paths, as a user types them: made absolute by the client.
mapperctl device add "nbds+unix://alice@/?socket=sock&tls-psk-file=keys.psk" --name r1 >/dev/null
[ "$(mapperctl device list --json | json_get '.[0].path')" = "$(tls "$T_DIR/keys.psk")" ] ||
	fail "device list shows $(mapperctl device list --json | json_get '.[0].path')"
mapperctl create linear v --size 32M --on r1 >/dev/null
start_daemon
head -c $((8 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=1M oflag=direct conv=notrunc status=none
dd if="$MNT/v" of=back bs=1M count=8 iflag=direct status=none
cmp data back || fail "the volume does not read what was written over TLS"
# The bytes reached the server's file, at the volume's start on r1 (a MiB boundary).
found=
for mib in $(seq 0 31); do
	if cmp -s -n $((8 * MiB)) data <(tail -c +$((mib * MiB + 1)) disk); then
		found=$mib
		break
	fi
done
[ -n "$found" ] || fail "the server's file does not hold what was written"
stop_daemon
start_daemon
dd if="$MNT/v" of=back bs=1M count=8 iflag=direct status=none
cmp data back || fail "a daemon started again does not read the volume over TLS"

# A key file loosened after device add is refused at the next connection.
stop_daemon
chmod 644 keys.psk
start_daemon
mapperctl status --json >st.json
jq -r '.devices[] | select(.name == "r1") | .reason // empty' st.json |
	grep -q "TLS key file '$T_DIR/keys.psk' may be read or written by others" ||
	fail "status does not say why r1 is not open: $(jq -c '.devices' st.json)"
! dd if="$MNT/v" of=/dev/null bs=1M count=1 iflag=direct status=none 2>/dev/null ||
	fail "a volume was read over a key file others may read"
stop_daemon
chmod 600 keys.psk
start_daemon
dd if="$MNT/v" of=back bs=1M count=8 iflag=direct status=none
cmp data back || fail "the volume does not read again once the key file is mended"
