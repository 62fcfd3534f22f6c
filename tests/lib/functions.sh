# tests/lib/functions.sh: sourced by every tests/cases/*.sh.
#
# A shell test runs against the real daemon and the real CLI, so what it
# leaves behind is real too: FUSE mounts, loop devices, file systems
# mounted on them, a detached daemon.  Everything a test sets up therefore
# registers its own undo step in one list as it goes, and a single EXIT
# trap runs that list in reverse order whether the test passed, failed
# midway, or was stopped by its watchdog.  The undo steps are idempotent and
# check what they are about to undo (a loop device is detached only if it
# still points at our file, a daemon is killed only if that PID is still
# ours), so a test may also undo things itself (stop_daemon, detach_loop)
# and the trap does not trip over it.
#
# The list lives in a file in the test's scratch directory, not in a shell
# array, so helpers called inside $(...) (attach_loop) can register too.
#
# Exit codes follow automake and ctest: 0 pass, 77 skip, anything else fail.
# A failing undo step turns a passing test into a failing one: leaving a
# mount behind, or a daemon that would not exit, is a bug worth seeing.

set -euo pipefail
shopt -s inherit_errexit		# helpers also stop at the first error inside $(...)

T_NAME=$(basename "$0" .sh)
T_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${MAPPERFS_BUILD:=$T_SRC/build}"
export MAPPERFS_BUILD

# ---- reporting -------------------------------------------------------------

log() { printf '%s: %s\n' "$T_NAME" "$*" >&2; }

fail()
{
	printf '%s: FAIL: %s\n' "$T_NAME" "$*" >&2
	exit 1
}

skip()
{
	printf '%s: SKIP: %s\n' "$T_NAME" "$*" >&2
	exit 77
}

# requires PROG...: skip unless every PROG is on PATH.
requires()
{
	local p

	for p; do
		command -v "$p" >/dev/null 2>&1 || skip "'$p' is not installed"
	done
}

# requires_that CMD [ARGS...]: skip unless CMD succeeds (nbdkit's `requires`).
requires_that()
{
	"$@" </dev/null >/dev/null 2>&1 || skip "needs: $*"
}

# sanitized: the build under test is AddressSanitizer's, whose quarantine
# and shadow make the daemon's RSS say nothing of its own memory.
sanitized()
{
	grep -qa __asan_init "$MAPPERFS_BUILD/bin/mapperfs"
}

requires_root()
{
	[ "$(id -u)" -eq 0 ] || skip "must run as root"
}

# What every test needs: the binaries and a usable /dev/fuse.
requires_mapperfs()
{
	[ -x "$MAPPERFS_BUILD/bin/mapperfs" ] || fail "no $MAPPERFS_BUILD/bin/mapperfs (build first)"
	[ -x "$MAPPERFS_BUILD/bin/mapperctl" ] || fail "no $MAPPERFS_BUILD/bin/mapperctl (build first)"
	requires fusermount3 findmnt
	[ -c /dev/fuse ] || skip "no /dev/fuse"
	requires_root
}

requires_loop()
{
	requires losetup
	requires_root
	[ -e /dev/loop-control ] || skip "no loop devices (/dev/loop-control)"
}

# ---- scratch directory and cleanup -------------------------------------------

T_DIR=$(mktemp -d "${TMPDIR:-/tmp}/mapperfs-$T_NAME.XXXXXX")
_T_UNDO=$T_DIR/.undo		# one shell-quoted command per line
: >"$_T_UNDO"

# cleanup_fn CMD [ARGS...]: run CMD ARGS at exit, after everything that is
# registered later.  Each step runs in a subshell, so one that fails (or
# calls fail) is reported and the others still run.
cleanup_fn()
{
	printf '%q ' "$@" >>"$_T_UNDO"
	printf '\n' >>"$_T_UNDO"
}

# end_pid PID: the undo step for a helper process the test started: kills
# it if it still runs (it may well have ended by itself).
end_pid()
{
	kill "$1" 2>/dev/null || true
}

_t_exit()
{
	local rc=$1 cmd i st
	local -a steps=()

	trap - EXIT INT TERM
	set +e
	[ -n "${_T_WATCHDOG:-}" ] && kill "$_T_WATCHDOG" 2>/dev/null && wait "$_T_WATCHDOG" 2>/dev/null
	cd /
	exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-	# a test's open volume would keep the mount busy
	mapfile -t steps <"$_T_UNDO"
	for ((i = ${#steps[@]} - 1; i >= 0; i--)); do
		cmd=${steps[i]}
		(set -e; eval "$cmd")
		st=$?
		if [ "$st" -ne 0 ]; then
			printf '%s: cleanup step failed: %s\n' "$T_NAME" "$cmd" >&2
			[ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] && rc=1
		fi
	done
	# Never recurse into something still mounted below the scratch dir.
	if findmnt -rn -o TARGET | grep -q "^$T_DIR/"; then
		printf '%s: left %s in place: something is still mounted in it\n' "$T_NAME" "$T_DIR" >&2
		rc=1
	elif [ -n "${MAPPERFS_KEEP:-}" ]; then
		printf '%s: kept %s\n' "$T_NAME" "$T_DIR" >&2
	else
		rm -rf --one-file-system "$T_DIR"
	fi
	exit "$rc"
}
trap '_t_exit $?' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# _t_is_daemon PID: PID is a mapperfs of this build.
_t_is_daemon()
{
	[ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$(realpath "$MAPPERFS_BUILD/bin/mapperfs")" ]
}

# The watchdog stops a hung test before ctest's TIMEOUT would SIGKILL it
# (and skip the cleanup).  A test blocked in I/O on a hung FUSE mount would
# not see a signal until the I/O returns, so it first kills the daemons the
# test started: that aborts the FUSE connection and unblocks the I/O.  It
# runs without the test's errexit (a daemon the test already stopped must
# not end it before the test is stopped), and kills a PID only while it is
# still a mapperfs (PIDs wrap at 32768 here).
_t_watchdog()
{
	local pid sleeper

	set +e
	trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
	sleep "${MAPPERFS_TEST_TIMEOUT:-270}" </dev/null >/dev/null 2>&1 &
	sleeper=$!
	wait "$sleeper"
	printf '%s: watchdog: no result after %ss, stopping the test\n' \
		"$T_NAME" "${MAPPERFS_TEST_TIMEOUT:-270}" >&2
	for pid in $(cat "$T_DIR/.daemons" 2>/dev/null); do
		_t_is_daemon "$pid" && kill -KILL "$pid" 2>/dev/null
	done
	kill -TERM $$
}
_t_watchdog </dev/null >/dev/null &	# stderr stays: it reports the timeout
_T_WATCHDOG=$!

cd "$T_DIR"

# ---- the binaries ------------------------------------------------------------

mapperctl() { "$MAPPERFS_BUILD/bin/mapperctl" "$@"; }
mapperfs() { "$MAPPERFS_BUILD/bin/mapperfs" "$@"; }

# ---- pools and raw devices ------------------------------------------------------

# make_pool [DIR]: creates a pool (default $T_DIR/pool) and makes it the
# pool of every later mapperctl call (MAPPERFS_POOL) and of start_daemon.
make_pool()
{
	POOL=$(realpath -m "${1:-$T_DIR/pool}")
	mapperctl --pool "$POOL" init >/dev/null || fail "mapperctl init $POOL failed"
	export MAPPERFS_POOL=$POOL
}

# add_file_device NAME SIZE: registers a new sparse file-backed raw device
# of SIZE bytes (K/M/G suffixes) and prints the backing file's path.
add_file_device()
{
	local name=$1 size=$2 file

	mkdir -p "$T_DIR/devices"
	file=$T_DIR/devices/$name.img
	mapperctl device add "$file" --create "$size" --name "$name" >/dev/null ||
		fail "cannot add device $name ($size)"
	echo "$file"
}

# send_pools [TP_MIB [B_TP_MIB]]: two pools for send and receive, neither
# served yet: A ($T_DIR/a: raw device d0, thin pool tp of TP_MIB, default
# 64, and thin volume v of half that) and B ($T_DIR/b: raw device e0,
# thin pool tp of B_TP_MIB, default TP_MIB).  Sets A and B; POOL is B's.
# ca and cb run mapperctl on A and on B.
send_pools()
{
	local tp=${1:-64} tpb=${2:-${1:-64}}

	A=$T_DIR/a B=$T_DIR/b
	make_pool "$A"
	add_file_device d0 $((tp + 32))M >/dev/null
	mapperctl create thin-pool tp --size "${tp}M" >/dev/null
	mapperctl create thin v --pool tp --size "$((tp / 2))M" >/dev/null
	make_pool "$B"
	add_file_device e0 $((tpb + 32))M >/dev/null
	mapperctl create thin-pool tp --size "${tpb}M" >/dev/null
}
ca() { mapperctl --pool "$A" "$@"; }
cb() { mapperctl --pool "$B" "$@"; }

# ---- the daemon ------------------------------------------------------------------

# start_daemon [POOL [MNT [MAPPERFS_ARGS...]]]: mounts POOL (default $POOL)
# at MNT (default $T_DIR/mnt, exported as MNT) and registers the unmount.
# mapperfs returns only once the mount is ready, so nothing here waits or
# polls.  MAPPERFS_TRANSPORT (auto, io_uring, dev-fuse), if set, chooses
# the transport: tests/CMakeLists.txt runs the I/O tests once per transport.
start_daemon()
{
	local pool=${1:-$POOL} mnt=${2:-$T_DIR/mnt} pid
	local -a args=("${@:3}")

	pool=$(realpath -m "$pool")
	mnt=$(realpath -m "$mnt")
	mkdir -p "$mnt"
	[ -z "${MAPPERFS_TRANSPORT:-}" ] || args+=(-o "transport=$MAPPERFS_TRANSPORT")
	mapperfs --pool "$pool" "$mnt" "${args[@]}" ||
		fail "mapperfs --pool $pool $mnt ${args[*]} failed (exit $?)"
	[ -s "$pool/mapperfs.pid" ] || fail "mapperfs did not write $pool/mapperfs.pid"
	pid=$(cat "$pool/mapperfs.pid")
	echo "$pid" >>"$T_DIR/.daemons"
	cleanup_fn _t_undo_daemon "$mnt" "$pid"
	[ "$(findmnt -n -o FSTYPE --mountpoint "$mnt")" = fuse.mapperfs ] ||
		fail "mapperfs returned but $mnt is not a fuse.mapperfs mount"
	kill -0 "$pid" 2>/dev/null || fail "daemon $pid is not running after start"
	MNT=$mnt
	export MNT
}

# make_mapped_pool N: make_pool with thin pool tp and its volume `vol` of N
# mapped 64 KiB blocks, restored from generated thin_dump XML (no data
# written: every block reads as a hole), as bench/scale.sh builds them.
make_mapped_pool()
{
	local n=$1 vol

	vol="1:vol:$((n * 64))K"
	make_pool
	mapperctl device add "$T_DIR/raw" --create $(( (n + 8192 + 32) * 64 ))K --name r >/dev/null
	mapperctl create thin-pool tp --size $(( (n + 8192) * 64 ))K --low-water 0 \
		--metadata-limit $(( n * 16 / 1024 + 65536 ))K >/dev/null
	awk -v n="$n" 'BEGIN {
		printf "<superblock uuid=\"\" time=\"0\" transaction=\"1\" flags=\"0\" version=\"2\" data_block_size=\"128\" nr_data_blocks=\"%d\">\n", n + 8192
		printf "  <device dev_id=\"1\" mapped_blocks=\"%d\" transaction=\"0\" creation_time=\"0\" snap_time=\"0\">\n", n
		for (b = 0; b < n; b += 4096)
			printf "    <range_mapping origin_begin=\"%d\" data_begin=\"%d\" length=\"%d\" time=\"0\"/>\n", b, b, (n - b < 4096 ? n - b : 4096)
		print "  </device>"
		print "</superblock>" }' >"$T_DIR/in.xml"
	mapperctl restore tp --from "$T_DIR/in.xml" --force --volume "$vol" >/dev/null 2>&1 ||
		fail "restore failed: $(mapperctl restore tp --from "$T_DIR/in.xml" --force --volume "$vol" 2>&1 | tail -n 1)"
}

# daemon_pid [POOL]: the PID the running daemon of POOL wrote.
daemon_pid()
{
	cat "${1:-$POOL}/mapperfs.pid"
}

# wait_pid PID: waits (up to 30 s) for a process that is not our child to
# exit: its files closed, its pool lock and mount let go.  A pidfd says so
# the moment it exits (powercut-waitpid); tail --pid, the fallback, waits
# until its parent reaped it, and the init of some machines reaps orphans
# about once a second, which a test that stops the daemon often paid each
# time.
wait_pid()
{
	if [ -x "$MAPPERFS_BUILD/bin/powercut-waitpid" ]; then
		timeout 30 "$MAPPERFS_BUILD/bin/powercut-waitpid" "$1"
	else
		timeout 30 tail -s 0.05 --pid="$1" -f /dev/null
	fi
}

# crash_daemon [PID]: kills the daemon with SIGKILL at once, waits until
# it is gone, waits for PID (a writer on the mount, which fails now) if
# given, then detaches the dead mount (after the writer: a writer that
# opens by name would otherwise make its file beneath it).
crash_daemon()
{
	local pid

	pid=$(daemon_pid)
	kill -KILL "$pid"
	wait_pid "$pid"
	[ -z "${1:-}" ] || wait "$1" 2>/dev/null || true
	fusermount3 -uz "$MNT" 2>/dev/null || umount -l "$MNT"
}

# ack_writer_started ROUND: waits until tests/lib/ack_writer.py of seed
# ROUND opened its file and logged its first write to acks.log, so that the
# crash that follows falls while it writes: a Python that takes a second to
# start (a pyenv shim on a loaded machine) otherwise found the daemon gone.
ack_writer_started()
{
	wait_line acks.log "^I $1[0-9]{6} "
}

# ack_crash_rounds FILE ROUNDS [BLOCKS]: ROUNDS times, starts the daemon
# with the test's start function, writes and fsyncs FILE in the mount with
# tests/lib/ack_writer.py (its first BLOCKS 64 KiB blocks, default 512),
# kills the daemon at a random moment, starts it again, checks that every
# fsync-acknowledged write reads back (or a later one to its block) and
# that check passes, and stops it.  The writer's log is acks.log, which
# the test empties first and may verify again later.
ack_crash_rounds()
{
	local file=$1 rounds=$2 blocks=${3:-512} round writer

	for round in $(seq 1 "$rounds"); do
		start
		python3 "$T_SRC/tests/lib/ack_writer.py" "$MNT/$file" acks.log "$round" "$blocks" &
		writer=$!
		ack_writer_started "$round"
		sleep "0.$((RANDOM % 9 + 1))"	# the random moment (not a synchronisation)
		crash_daemon "$writer"
		start
		python3 "$T_SRC/tests/lib/ack_verify.py" "$MNT/$file" acks.log ||
			fail "round $round: an fsync-acknowledged write was lost"
		mapperctl check >check.log 2>&1 || { cat check.log >&2; fail "round $round: check failed"; }
		stop_daemon
	done
}

# stop_daemon [MNT [POOL]]: unmounts MNT the normal way and waits for the
# daemon to exit.  Fails if the unmount fails (something still open) or the
# daemon does not exit.  The daemon is not our child, so its exit status
# is not ours to read; its log must not report an error at exit instead.
# _t_mount_users MNT: what holds files under MNT open (processes, loop
# devices), for a failed unmount's message.
_t_mount_users()
{
	local fd pid

	for fd in /proc/[0-9]*/fd/*; do
		case $(readlink "$fd" 2>/dev/null) in
		"$1"/*)
			pid=${fd#/proc/}
			pid=${pid%%/*}
			echo "pid $pid ($(cat "/proc/$pid/comm" 2>/dev/null)): $(readlink "$fd")" ;;
		esac
	done
	losetup -a 2>/dev/null | grep -F "$1/" || true
}

stop_daemon()
{
	local mnt=${1:-$MNT} pool=${2:-$POOL} pid

	mnt=$(realpath -m "$mnt")
	pid=$(cat "$pool/mapperfs.pid") || fail "no pid file in $pool"
	fusermount3 -u "$mnt" ||
		fail "fusermount3 -u $mnt failed; open there: $(_t_mount_users "$mnt" | tr '\n' ';')"
	wait_pid "$pid" || fail "daemon $pid did not exit within 30 s of the unmount"
	! mountpoint -q "$mnt" || fail "$mnt is still mounted after the daemon exited"
}

# The undo step start_daemon registers: a normal unmount if possible, a
# lazy one otherwise, then make sure the daemon is gone.
_t_undo_daemon()
{
	local mnt=$1 pid=$2 rc=0

	if findmnt -n --mountpoint "$mnt" >/dev/null; then
		if ! fusermount3 -u "$mnt" 2>/dev/null; then
			echo "$T_NAME: $mnt busy, unmounting lazily" >&2
			fusermount3 -uz "$mnt" 2>/dev/null || umount -l "$mnt"
			rc=1
		fi
	fi
	if kill -0 "$pid" 2>/dev/null && _t_is_daemon "$pid"; then
		if ! wait_pid "$pid"; then
			echo "$T_NAME: daemon $pid did not exit, killing it" >&2
			kill -KILL "$pid" 2>/dev/null
			wait_pid "$pid"
			rc=1
		fi
	fi
	return "$rc"
}

# ---- loop devices and file systems -----------------------------------------------

# attach_loop FILE [SECTOR_SIZE]: attaches FILE to a free loop device with
# direct I/O and 4 KiB sectors (as users are told to; or SECTOR_SIZE bytes),
# prints /dev/loopN, registers the detach.  Safe inside $(...).
attach_loop()
{
	local file dev

	file=$(realpath "$1")
	dev=$(losetup --find --show --direct-io=on --sector-size "${2:-4096}" "$file") ||
		fail "losetup of $file failed"
	cleanup_fn _t_undo_loop "$dev" "$file"
	echo "$dev"
}

# loop_dio DEV: prints 1 if the loop device really does direct I/O.
loop_dio()
{
	cat "/sys/block/${1#/dev/}/loop/dio"
}

# detach_loop DEV: detaches DEV now (its undo step then does nothing).
detach_loop()
{
	losetup -d "$1" || fail "losetup -d $1 failed"
}

_t_undo_loop()
{
	local dev=$1 file=$2 back

	back=$(losetup -n -O BACK-FILE "$dev" 2>/dev/null) || return 0
	# The kernel may append " (deleted)"; anything else is not ours.
	case $back in
	"$file" | "$file (deleted)") losetup -d "$dev" ;;
	esac
}

# mount_fs DEV DIR [MOUNT_ARGS...]: mounts DEV on DIR (created) and
# registers the unmount.
mount_fs()
{
	local dev=$1 dir=$2

	shift 2
	mkdir -p "$dir"
	dir=$(realpath "$dir")
	mount "$@" "$dev" "$dir" || fail "mount $dev $dir failed"
	cleanup_fn _t_undo_mount "$dir"
}

_t_undo_mount()
{
	if mountpoint -q "$1"; then
		umount "$1" || { umount -l "$1"; return 1; }
	fi
}

# ---- faults --------------------------------------------------------------------------

# hold_db_lock DB: a sqlite3 shell takes DB's write lock (BEGIN IMMEDIATE)
# and keeps it until release_db_lock; returns once the lock is held.  The
# shell reads its commands from a fifo, so the test decides when.
hold_db_lock()
{
	local line

	mkfifo "$T_DIR/.sql.in" "$T_DIR/.sql.out"
	sqlite3 "$1" <"$T_DIR/.sql.in" >"$T_DIR/.sql.out" 2>&1 &
	_T_SQL_PID=$!
	cleanup_fn _t_undo_db_lock "$_T_SQL_PID"
	exec 7>"$T_DIR/.sql.in" 8<"$T_DIR/.sql.out"
	printf '.timeout 30000\nBEGIN IMMEDIATE;\n.print locked\n' >&7
	read -r -u 8 line || fail "the sqlite3 shell holding $1 died"
	[ "$line" = locked ] || fail "sqlite3 could not lock $1: $line"
}

# release_db_lock: the shell commits its empty transaction and exits.
release_db_lock()
{
	printf 'COMMIT;\n.quit\n' >&7
	exec 7>&- 8<&-
	wait "$_T_SQL_PID" || fail "the sqlite3 shell holding the lock failed"
	rm -f "$T_DIR/.sql.in" "$T_DIR/.sql.out"
}

_t_undo_db_lock()
{
	kill "$1" 2>/dev/null || true
}

# LOG_TIME: an extended regex of the time that starts each line of the
# pool's log ("2026-12-01T03:15:10.123Z"); the level follows it.
LOG_TIME='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z'

# log_mark: where the pool's log ends now, for wait_log.
log_mark()
{
	stat -c %s "$POOL/mapperfs.log"
}

# wait_log REGEX [MARK]: waits (up to 60 s) until a line matching the
# extended REGEX is in the pool's log after byte MARK (log_mark; default
# its start), reading the log as it grows: an event, not a poll.
wait_log()
{
	wait_line "$POOL/mapperfs.log" "$@"
}

# wait_line FILE REGEX [MARK [COUNT]]: the same for any FILE (which may
# not exist yet), e.g. one that an event command writes; with COUNT, until
# that many lines match.
wait_line()
{
	local file=$1 count=${4:-1} pid found

	exec 6< <(exec timeout 60 tail -c +$((${3:-0} + 1)) -F "$file" 2>/dev/null)
	pid=$!
	found=$(grep -E -c -m "$count" -- "$2" <&6) || true
	kill "$pid" 2>/dev/null || true
	exec 6<&-
	[ "$found" -eq "$count" ] ||
		fail "$found of $count lines matching /$2/ in $file within 60 s"
}

# ---- NBD exports (mapperctl export) ------------------------------------------------

# export_pid VOLUME: the pid of the nbdkit serving VOLUME's export, as
# status --json says it; fails if there is none.
export_pid()
{
	mapperctl status "$1" --json | json_get .export.pid
}

# nbdkits_under DIR: the pids of the nbdkit processes serving a file under
# DIR (their file= argument), one per line.
nbdkits_under()
{
	local d

	for d in /proc/[0-9]*; do
		[ "$(cat "$d/comm" 2>/dev/null)" = nbdkit ] || continue
		tr '\0' '\n' <"$d/cmdline" 2>/dev/null | grep -q "^file=$1/" && echo "${d#/proc/}"
	done
	return 0
}

# no_nbdkit_left [DIR]: registers, before start_daemon so that it runs
# after the daemon stopped, a check that no nbdkit serves a file under DIR
# (default the test's scratch directory): any left is killed, by pid, and
# the test fails.
no_nbdkit_left()
{
	cleanup_fn _t_undo_nbdkits "${1:-$T_DIR}"
}

_t_undo_nbdkits()
{
	local pids

	pids=$(nbdkits_under "$1")
	[ -z "$pids" ] && return 0
	echo "$T_NAME: nbdkit left running after the daemon stopped: $pids" >&2
	# shellcheck disable=SC2086
	kill -KILL $pids 2>/dev/null
	return 1
}

# ---- assertions ------------------------------------------------------------------------

# expect_fail [-s STATUS] [-m REGEX] CMD [ARGS...]: CMD must fail (with
# exit STATUS, if given) and say why in exactly one non-empty line on
# stderr (matching the extended REGEX, if given).  Lines of the form
# "prog: warning: ..." are not the error and are not counted (the daemon
# may warn about its environment before it
# gets to the pool), nor is "mapperctl: waiting for ...", which says for
# whom a command waited before it answered.  The message is echoed to the test log so a reader
# sees what users would see.
expect_fail()
{
	local want_status='' regex='' rc=0 err lines

	while [ $# -gt 0 ]; do
		case $1 in
		-s) want_status=$2; shift 2 ;;
		-m) regex=$2; shift 2 ;;
		--) shift; break ;;
		*) break ;;
		esac
	done
	err=$T_DIR/.stderr
	"$@" >"$T_DIR/.stdout" 2>"$T_DIR/.stderr.all" || rc=$?
	grep -Ev '^[^ :]+: warning: |^mapperctl: waiting for ' "$T_DIR/.stderr.all" >"$err" || true
	if [ "$rc" -eq 0 ]; then
		fail "'$*' succeeded; expected it to fail"
	fi
	[ -z "$want_status" ] || [ "$rc" -eq "$want_status" ] ||
		fail "'$*' exited $rc, expected $want_status (stderr: $(head -c 300 "$err"))"
	lines=$(wc -l <"$err")
	[ "$lines" -eq 1 ] && [ -n "$(tr -d '[:space:]' <"$err")" ] ||
		fail "'$*' should explain its failure in one line, wrote $lines lines: $(head -c 300 "$err")"
	[ -z "$regex" ] || grep -Eq -- "$regex" "$err" ||
		fail "'$*' said '$(cat "$err")', which does not match /$regex/"
	printf '%s: ok, %s -> %s' "$T_NAME" "$*" "$(cat "$err")" >&2
	printf '\n' >&2
}

# json_get [JQ_OPTIONS...] FILTER: jq -r FILTER on stdin; fails (instead
# of printing "null" or nothing) when the value is absent.
json_get()
{
	local out

	out=$(jq -r "$@") || fail "invalid JSON, or jq $* failed"
	[ -n "$out" ] && [ "$out" != null ] || fail "JSON has no value for: ${*: -1}"
	printf '%s\n' "$out"
}

# size_of FILE: bytes, as stat reports them.
size_of()
{
	stat -c %s "$1"
}

# sha FILE: the sha256 of FILE (or of stdin with -).
sha()
{
	sha256sum "$1" | cut -d' ' -f1
}

MiB=$((1024 * 1024))
GiB=$((1024 * MiB))
LABEL_SIZE=$MiB			# data area starts here on every raw device

# ---- where a volume's bytes are -----------------------------------------------------

# device_path NAME: the file that holds raw device NAME's bytes: the path
# `device list --json` gives, or, for an export of faults.sh's nbd_server
# (nbd+unix:///?socket=$T_DIR/nbd/X/sock), that server's file.
device_path()
{
	local path

	path=$(mapperctl device list --json |
		json_get --arg d "$1" '.[] | select(.name == $d) | .path')
	case $path in
	"nbd+unix:///?socket=$T_DIR/nbd/"*/sock)
		path=${path#nbd+unix:///?socket=}
		path=${path%/sock}/disk ;;
	esac
	printf '%s\n' "$path"
}

# leg_caught_up VOL LEG DEVICE MARK: waits (wait_log) until leg LEG of
# mirror VOL, on DEVICE, caught up after log mark MARK, and prints how
# many regions it copied.
leg_caught_up()
{
	wait_log "volume '$1': leg $2 \\($3\\) caught up, in sync" "$4"
	tail -c +$(($4 + 1)) "$POOL/mapperfs.log" |
		sed -nE "s/.*volume '$1': leg $2 \\($3\\) caught up, in sync \\(([0-9]+) region.*/\\1/p"
}

# read_raw FILE OFFSET LENGTH: LENGTH bytes of the data area of raw device
# file FILE at OFFSET (so from file offset LABEL_SIZE + OFFSET) on stdout.
read_raw()
{
	dd if="$1" bs=1M iflag=skip_bytes,count_bytes skip=$((LABEL_SIZE + $2)) \
		count="$3" status=none
}

# vol_from_devices NAME: volume NAME reassembled on stdout from its raw
# devices, segment by segment as `mapperctl status NAME --json` lists them.
# Comparing it with what was written through the mount proves the bytes
# went where the metadata says, not merely somewhere that reads back.
vol_from_devices()
{
	local dev off len

	mapperctl status "$1" --json |
		json_get '.segments[] | "\(.device) \(.offset) \(.length)"' >"$T_DIR/.segs"
	while read -r dev off len; do
		read_raw "$(device_path "$dev")" "$off" "$len"
	done <"$T_DIR/.segs"
}

# stripes_from_devices NAME: the striped volume NAME reassembled on stdout
# from its raw device files, chunk by chunk, as status --json places its
# stripes.
stripes_from_devices()
{
	mapperctl status "$1" --json >"$T_DIR/.status.json"
	mapperctl device list --json >"$T_DIR/.devices.json"
	python3 - "$T_DIR/.status.json" "$T_DIR/.devices.json" "$LABEL_SIZE" <<'EOF'
import json, sys
st = json.load(open(sys.argv[1]))
paths = {d["name"]: d["path"] for d in json.load(open(sys.argv[2]))}
label = int(sys.argv[3])
n, chunk, size = st["stripes"], st["stripe_size"], st["size"]
stripes = [b""] * n
for s in st["segments"]:
    with open(paths[s["device"]], "rb") as f:
        f.seek(label + s["offset"])
        stripes[s["stripe"]] += f.read(s["length"])
out = sys.stdout.buffer
for c in range(size // chunk):
    k, row = c % n, c // n
    out.write(stripes[k][row * chunk:(row + 1) * chunk])
EOF
}

# switch_from_devices NAME: switch volume NAME reassembled on stdout from
# its raw device files: region r read from the path its table names (as
# `switch-map NAME --dump` says), at that path's offset plus r's, as
# status --json places the paths.
switch_from_devices()
{
	mapperctl status "$1" --json >"$T_DIR/.status.json"
	mapperctl device list --json >"$T_DIR/.devices.json"
	mapperctl switch-map "$1" --dump >"$T_DIR/.table"
	python3 - "$T_DIR/.status.json" "$T_DIR/.devices.json" "$T_DIR/.table" "$LABEL_SIZE" <<'EOF'
import json, sys
st = json.load(open(sys.argv[1]))
paths = {d["name"]: d["path"] for d in json.load(open(sys.argv[2]))}
label = int(sys.argv[4])
table = []
for arg in open(sys.argv[3]).read().split():
    if arg[0] in "Rr":
        n, m = (int(x, 16) for x in arg[1:].split(","))
        for _ in range(m):
            table.append(table[-n])
    else:
        idx, path = arg.split(":")
        if idx:
            table = table[:int(idx, 16)]
        table.append(int(path, 16))
rs, size = st["region_size"], st["size"]
out = sys.stdout.buffer
for r in range((size + rs - 1) // rs):
    p = st["paths"][table[r]]
    with open(paths[p["device"]], "rb") as f:
        f.seek(label + p["offset"] + r * rs)
        out.write(f.read(min(rs, size - r * rs)))
EOF
}

# leg_from_devices VOL LEG: leg LEG of mirror VOL reassembled on stdout
# from its raw devices, segment by segment as status lists them.
leg_from_devices()
{
	local dev off len

	mapperctl status "$1" --json |
		json_get --argjson l "$2" '.mirror.leg_list[$l].segments[] |
			"\(.device) \(.offset) \(.length)"' >"$T_DIR/.legsegs"
	while read -r dev off len; do
		read_raw "$(device_path "$dev")" "$off" "$len"
	done <"$T_DIR/.legsegs"
}
