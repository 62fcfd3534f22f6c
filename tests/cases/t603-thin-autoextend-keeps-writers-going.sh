#!/usr/bin/env bash
# t603-thin-autoextend-keeps-writers-going.sh: a thin pool made with
# --autoextend-threshold/--autoextend-percent (LVM's meaning) and
# --when-full wait grows by itself as a writer fills it past the
# threshold: the writer never sees ENOSPC, the pool grows right after its
# own extent on the device it was made on, and the event command ran
# with the pool's name, the event and its figures; a full pool runs every
# hook of its hook directory; a manual extend raises "extended" as well;
# a pool's hooks run one at a time, in order, and one that hangs is
# killed after the daemon's event_timeout.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq

make_pool
add_file_device d0 128M >/dev/null
add_file_device d1 256M >/dev/null
mapperctl create linear filler --size 64M --on d0 >/dev/null	# d0 is not empty
mapperctl create thin-pool tp --size 16M --on d1 --when-full wait:60 \
	--autoextend-threshold 70 --autoextend-percent 50 \
	--on-event "echo \"\$MAPPERFS_THIN_POOL \$MAPPERFS_EVENT \$MAPPERFS_DATA_PERCENT\" >>'$T_DIR/events'" \
	>/dev/null
mapperctl create thin v1 --pool tp --size 128M >/dev/null
start_daemon

head -c $((96 * MiB)) /dev/urandom >data
dd if=data of="$MNT/v1" bs=1M conv=notrunc,fsync status=none || fail "the writer failed"
cmp data <(head -c $((96 * MiB)) "$MNT/v1") || fail "what was written does not read back"
mapperctl status tp --json >tp.json
size=$(json_get .size <tp.json)
[ "$size" -gt $((96 * MiB)) ] || fail "the pool did not grow enough: $size bytes"
[ "$(jq '.volume_no_space // 0' tp.json)" -eq 0 ] || fail "a write saw ENOSPC"
[ "$(mapperctl status v1 --json | json_get .no_space)" -eq 0 ] || fail "v1 counted ENOSPC"
# Every extension continued on d1, right after the pool's end.
jq -e '[.segments[].device] | unique == ["d1"]' tp.json >/dev/null ||
	fail "the pool grew onto another device: $(jq -c .segments tp.json)"
jq -e '.segments as $s | [range(1; $s | length) | $s[.].offset == $s[. - 1].offset + $s[. - 1].length] | all' \
	tp.json >/dev/null || fail "the pool's extents are not contiguous: $(jq -c .segments tp.json)"
wait_line "$T_DIR/events" '^tp extended [0-9]+$'
grep -q "autoextended from" "$POOL/mapperfs.log" || fail "the log does not say the pool grew"
mapperctl check >/dev/null || fail "check fails"

# A pool with no autoextend that fills up says so: the event "full", to
# every hook of a hook directory.
mkdir hooks
printf '#!/bin/sh\necho "$MAPPERFS_THIN_POOL $MAPPERFS_EVENT $MAPPERFS_DATA_PERCENT" >>"%s/events"\n' \
	"$T_DIR" >hooks/10-log
printf '#!/bin/sh\necho "$MAPPERFS_EVENT" >>"%s/events2"\n' "$T_DIR" >hooks/20-log
chmod +x hooks/10-log hooks/20-log
mapperctl create thin-pool tf --size 4M --on d0 --on-event "$T_DIR/hooks" >/dev/null
mapperctl create thin f1 --pool tf --size 16M >/dev/null
! dd if=/dev/zero of="$MNT/f1" bs=1M count=8 conv=notrunc,fsync status=none 2>/dev/null ||
	fail "a write past the full pool succeeded"
wait_line "$T_DIR/events" '^tf full 100$'
wait_line "$T_DIR/events2" '^full$'

# A manual extend of a pool made --on d0 also continues on d0, and raises
# "extended" too.  Its hook blocks on a fifo until the test lets it go:
# the next event's hook does not start meanwhile (no second hook process
# once `extend` returned), and runs once the first has ended, so their
# lines never interleave.  A hook that hangs is killed after the
# daemon's event_timeout, and the events after it still run: that part
# has a daemon of its own with a 3 s timeout, which the steps before it
# must not depend on outrunning on a loaded machine.
mkfifo gate
# let_go: lets the hook that waits at the gate go on.
let_go() { timeout 60 sh -c 'echo go >gate' || fail "no hook waits at the gate"; }
cat >hook.sh <<EOF_HOOK
#!/bin/sh
echo "begin \$MAPPERFS_EVENT \$MAPPERFS_DATA_TOTAL_BYTES" >>"$T_DIR/hooklog"
read -r go <"$T_DIR/gate"
echo "end \$MAPPERFS_EVENT \$MAPPERFS_DATA_TOTAL_BYTES" >>"$T_DIR/hooklog"
EOF_HOOK
chmod +x hook.sh
hooks_running() { pgrep -c -f "$T_DIR/hook.sh" || true; }
mapperctl create thin-pool tq --size 8M --on d0 --on-event "$T_DIR/hook.sh" >/dev/null
mapperctl extend tq --size 16M >/dev/null
mapperctl status tq --json | jq -e '[.segments[].device] | unique == ["d0"]' >/dev/null ||
	fail "extend did not continue on the pool's device: $(mapperctl status tq --json | jq -c .segments)"
wait_line hooklog "^begin extended $((16 * MiB))$"
running=$(hooks_running)
mapperctl extend tq --size 24M >/dev/null	# returns with its event queued
[ "$(hooks_running)" -eq "$running" ] || fail "a second hook runs while the first does"
let_go
wait_line hooklog "^begin extended $((24 * MiB))$"
let_go
wait_line hooklog "^end extended $((24 * MiB))$"
[ "$(cat hooklog)" = "begin extended $((16 * MiB))
end extended $((16 * MiB))
begin extended $((24 * MiB))
end extended $((24 * MiB))" ] || fail "the hooks ran out of order: $(cat hooklog)"
stop_daemon
start_daemon "$POOL" "$T_DIR/mnt" -o event_timeout=3
mark=$(log_mark)
mapperctl extend tq --size 32M >/dev/null	# its hook is never let go
mapperctl extend tq --size 40M >/dev/null
wait_log "thin pool 'tq': its event command for extended ran past its time: killed" "$mark"
wait_line hooklog "^begin extended $((40 * MiB))$"
let_go
wait_line hooklog "^end extended $((40 * MiB))$"
! grep -q "^end extended $((32 * MiB))$" hooklog || fail "the hook that hung was not killed"
