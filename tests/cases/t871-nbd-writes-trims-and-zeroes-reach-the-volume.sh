#!/usr/bin/env bash
# t871-nbd-writes-trims-and-zeroes-reach-the-volume.sh: over an exported
# thin volume, qemu-io's writes (plain and FUA) are in the volume's file,
# a flush commits them, a discard unmaps the thin blocks (mapped bytes and
# the pool's used bytes fall, the file has a hole there), a write of
# zeroes reads zeros; an export made --read-only says so, clients cannot
# write to it, and the volume stays as it was.
# TRANSPORTS: io_uring dev-fuse
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires nbdkit qemu-io nbdinfo nbdcopy jq
requires_that nbdkit file --version

make_pool
add_file_device d0 256M >/dev/null
mapperctl create thin-pool tp --size 128M --block-size 64K >/dev/null
mapperctl create thin vm --pool tp --size 32M >/dev/null
mapperctl create thin ro --pool tp --size 32M >/dev/null
no_nbdkit_left
start_daemon
mapperctl export vm --unix "$T_DIR/vm.sock" >/dev/null
mapperctl export ro --unix "$T_DIR/ro.sock" --read-only >/dev/null
vm="nbd+unix:///?socket=$T_DIR/vm.sock"
ro="nbd+unix:///?socket=$T_DIR/ro.sock"
mapped() { mapperctl status "$1" --json | json_get .mapped_bytes; }

# Writes, one with FUA, then a flush: all in the file.
qemu-io -f raw -c 'write -P 0x5a 0 1M' -c 'write -P 0xa5 -f 4M 256k' -c flush "$vm" >qio.log ||
	fail "qemu-io write over NBD failed: $(cat qio.log)"
cmp <(head -c 1M /dev/zero | tr '\0' '\132') <(head -c 1M "$MNT/vm") ||
	fail "the first MiB written over NBD is not in the file"
cmp <(head -c 256K /dev/zero | tr '\0' '\245') <(dd if="$MNT/vm" bs=256K skip=16 count=1 status=none) ||
	fail "the FUA write over NBD is not in the file"
[ "$(mapped vm)" -eq $((1280 * 1024)) ] || fail "mapped after the writes: $(mapped vm), not 1.25 MiB"

# A discard unmaps the blocks.
pool_before=$(mapperctl status tp --json | json_get .data_used_bytes)
qemu-io -f raw -c 'discard 0 1M' "$vm" >qio.log || fail "discard over NBD failed: $(cat qio.log)"
[ "$(mapped vm)" -eq $((256 * 1024)) ] || fail "mapped after the discard: $(mapped vm), not 256 KiB"
pool_after=$(mapperctl status tp --json | json_get .data_used_bytes)
[ "$pool_after" -lt "$pool_before" ] || fail "the pool's used bytes did not fall ($pool_before -> $pool_after)"
cmp -n 1M /dev/zero "$MNT/vm" || fail "the discarded MiB does not read zeros"
python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); sys.exit(os.lseek(fd, 0, os.SEEK_DATA) != 4 << 20)' \
	"$MNT/vm" || fail "SEEK_DATA does not skip the discarded MiB"

# A write of zeroes reads zeros.
qemu-io -f raw -c 'write -z 4M 256k' "$vm" >qio.log || fail "write -z over NBD failed: $(cat qio.log)"
cmp -n 256K /dev/zero <(dd if="$MNT/vm" bs=256K skip=16 count=1 status=none) ||
	fail "the zeroed range does not read zeros"

# Read-only: refused, nothing changed.
dd if=/dev/urandom of=orig bs=64K count=4 status=none
dd if=orig of="$MNT/ro" bs=64K conv=notrunc,fsync status=none
[ "$(nbdinfo --json "$ro" | jq -r '.exports[0].is_read_only')" = true ] ||
	fail "the --read-only export does not say it is read-only"
# The server says read-only, so clients refuse before they send: qemu-io
# cannot open it for writing, nbdcopy will not write to it.
qemu-io -f raw -c 'write -P 1 0 64k' -c 'discard 0 64k' "$ro" >qio.log 2>&1 &&
	fail "qemu-io wrote to the read-only export: $(cat qio.log)"
grep -q 'Permission denied' qio.log || fail "qemu-io on the read-only export: $(cat qio.log)"
nbdcopy orig "$ro" 2>copy.log && fail "nbdcopy wrote to the read-only export"
grep -q 'read-only' copy.log || fail "nbdcopy to the read-only export: $(cat copy.log)"
cmp orig <(head -c 256K "$MNT/ro") || fail "the read-only export's volume changed"
[ "$(mapperctl status ro --json | json_get .export.read_only)" = true ] || fail "status: not read-only"
