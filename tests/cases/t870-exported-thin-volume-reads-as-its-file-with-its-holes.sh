#!/usr/bin/env bash
# t870-exported-thin-volume-reads-as-its-file-with-its-holes.sh: a thin
# volume with data and holes, exported on a Unix socket, reads over NBD
# byte for byte as its file in the mount (qemu-img compare); `nbdinfo
# --map` gives the same data and holes as SEEK_DATA/SEEK_HOLE on the file;
# the socket is the daemon's alone (0600), in the pool directory if no
# path is given; the export offers trim, zero,
# flush, FUA and multi-conn; status, list and their --json say where it is
# served, by which nbdkit, and that it serves.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires nbdkit nbdinfo qemu-img jq python3
requires_that nbdkit file --version

make_pool
add_file_device d0 256M >/dev/null
mapperctl create thin-pool tp --size 128M --block-size 64K >/dev/null
mapperctl create thin vm --pool tp --size 64M >/dev/null
mapperctl create thin w --pool tp --size 8M >/dev/null
no_nbdkit_left
start_daemon

# Data in places, holes between: whole blocks, a part of one (the rest of
# its block reads zeros but is mapped), the last block.
dd if=/dev/urandom of=data bs=64K count=3 status=none
dd if=data of="$MNT/vm" bs=64K seek=2 conv=notrunc,fsync status=none
dd if=data of="$MNT/vm" bs=4K count=1 seek=$((5 * MiB / 4096 + 3)) conv=notrunc,fsync status=none
dd if=data of="$MNT/vm" bs=64K count=1 seek=$((64 * 16 - 1)) conv=notrunc,fsync status=none

sock=$T_DIR/vm.sock
mapperctl export vm --unix "$sock" >out || fail "export failed"
grep -q "^exported volume 'vm' on nbd+unix:///?socket=$sock\$" out ||
	fail "export said: $(cat out)"
uri="nbd+unix:///?socket=$sock"
[ -S "$sock" ] || fail "no socket at $sock once export answered"
[ "$(stat -c %a "$sock")" = 600 ] || fail "the socket's mode is $(stat -c %a "$sock"), not 600"

# Without --unix: POOL/nbd-NAME.sock, absolute though POOL is given relative.
(cd "$POOL/.." && mapperctl --pool "$(basename "$POOL")" export w) >out || fail "export w failed"
grep -q "^exported volume 'w' on nbd+unix:///?socket=$POOL/nbd-w.sock\$" out || fail "export w said: $(cat out)"
[ -S "$POOL/nbd-w.sock" ] && [ "$(stat -c %a "$POOL/nbd-w.sock")" = 600 ] || fail "no 0600 socket at $POOL/nbd-w.sock"

qemu-img compare -f raw -F raw "$uri" "$MNT/vm" >compare.log ||
	fail "qemu-img compare: the export differs from the file: $(cat compare.log)"

python3 "$T_SRC/tests/lib/data_runs.py" seek "$MNT/vm" >seek.runs
nbdinfo --map --json "$uri" | python3 "$T_SRC/tests/lib/data_runs.py" nbd >nbd.runs
[ "$(wc -l <seek.runs)" -eq 3 ] || fail "SEEK_DATA sees $(wc -l <seek.runs) data runs, wrote 3: $(cat seek.runs)"
diff -u seek.runs nbd.runs >map.diff || fail "nbdinfo --map differs from SEEK_DATA: $(cat map.diff)"

nbdinfo --json "$uri" >info.json
for can in can_trim can_zero can_flush can_fua can_multi_conn; do
	[ "$(jq -r ".exports[0].$can" info.json)" = true ] || fail "the export does not offer $can"
done
[ "$(jq -r '.exports[0].is_read_only' info.json)" = false ] || fail "the export is read-only"
[ "$(jq -r '.exports[0]."export-size"' info.json)" -eq $((64 * MiB)) ] || fail "export size wrong"

# Where, by whom, and that it serves: status, list, their --json.
pid=$(export_pid vm)
[ "$(cat "/proc/$pid/comm")" = nbdkit ] || fail "status's export pid $pid is not an nbdkit"
mapperctl status vm --json >status.json
[ "$(json_get .export.state <status.json)" = serving ] || fail "status: $(jq -c .export status.json)"
[ "$(json_get .export.uri <status.json)" = "$uri" ] || fail "status's uri: $(jq -c .export status.json)"
[ "$(json_get .export.read_only <status.json)" = false ] || fail "status says read-only"
mapperctl status | grep -q "uri: $uri" || fail "status (text) does not show the export"
[ "$(mapperctl list --json | json_get '.[] | select(.name == "vm") | .export.pid')" = "$pid" ] ||
	fail "list --json does not carry the export"
[ "$(mapperctl list -o name,export,export_state,export_pid --noheadings --separator ' ' \
	--select 'export_state == serving && name == vm')" = "vm $uri serving $pid" ] ||
	fail "list -o export,...: $(mapperctl list -o name,export,export_state,export_pid)"
