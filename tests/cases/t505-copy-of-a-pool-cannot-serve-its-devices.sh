#!/usr/bin/env bash
# t505-copy-of-a-pool-cannot-serve-its-devices.sh: while a daemon serves a
# pool, a copy of the pool directory (`cp -a`: same database, same devices)
# cannot serve the same raw devices, a file or a block device: the copy's
# daemon and an offline mapperctl on the copy report each device failed,
# naming it and its holder (the daemon's pid for a file, "in use" for a
# block device), and serve none of their bytes.  Once the original stops,
# the copy serves them.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires_loop
requires jq

make_pool
d0=$(add_file_device d0 32M)
truncate -s 32M blk.img
b0=$(attach_loop blk.img)
mapperctl device add "$b0" --name b0 >/dev/null
mapperctl create linear v --size 16M --on d0 >/dev/null
mapperctl create linear w --size 16M --on b0 >/dev/null
start_daemon
pid=$(daemon_pid)
head -c $((16 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v" bs=1M conv=notrunc,fsync status=none
dd if=data of="$MNT/w" bs=1M conv=notrunc,fsync status=none

cp -a "$POOL" copy
copy=$T_DIR/copy
rm -f "$copy/mapperfs.log"

# Offline, on the copy: both devices failed, with their holders.
devices=$(mapperctl --pool "$copy" device list --json)
reason() { jq -r --arg d "$1" '.[] | select(.name == $d) | "\(.state): \(.reason)"' <<<"$devices"; }
[[ $(reason d0) == "failed: cannot be opened: in use by mapperfs (pid $pid)" ]] ||
	fail "offline on the copy, d0 is '$(reason d0)'"
[[ $(reason b0) == "failed: cannot be opened: in use"* ]] ||
	fail "offline on the copy, b0 is '$(reason b0)'"

# A daemon on the copy serves neither volume, and its log says why.
mkdir -p mnt2
cleanup_fn _t_undo_daemon "$T_DIR/mnt2" ""
if mapperfs --pool "$copy" mnt2 2>copy.err; then
	echo "$(daemon_pid "$copy")" >>"$T_DIR/.daemons"
	[ ! -e mnt2/v ] && [ ! -e mnt2/w ] || fail "the copy serves the original's volumes"
	stop_daemon mnt2 "$copy"
fi
grep -q "raw device 'd0' at '$d0' cannot be opened: in use by mapperfs (pid $pid)" \
	"$copy/mapperfs.log" copy.err || fail "the copy's daemon did not name d0's holder"
grep -q "raw device 'b0' at '$b0' cannot be opened: in use" "$copy/mapperfs.log" copy.err ||
	fail "the copy's daemon did not say b0 is in use"

# The original still serves both, unharmed.
cmp data "$MNT/v" || fail "v changed while the copy tried"
cmp data "$MNT/w" || fail "w changed while the copy tried"

# Once the original stops, the copy may have them.
stop_daemon
start_daemon "$copy" mnt2
cmp data mnt2/v || fail "the copy does not serve v once the original stopped"
cmp data mnt2/w || fail "the copy does not serve w once the original stopped"
