# tests/lib/faults.sh: the fault-test kit, sourced after functions.sh by
# tests that stop daemons, break devices or hold locks on purpose.
#
# Every helper waits on a real event (a lock coming free, a fifo, a
# socket) and registers its undo step with cleanup_fn, so a test that
# fails midway leaves no mount, process or lock behind.  functions.sh
# already has wait_log (a line in the daemon's log) and hold_db_lock.

# wait_unlocked POOL SECONDS: waits until no process holds POOL's lock
# (the daemon holds it until its very last step, so this is when it is
# done), for at most SECONDS.  Fails otherwise.  A process that exited
# but was not reaped yet (its parent is gone) still answers `kill -0`;
# the kernel drops its locks at exit, which is what this waits for.
wait_unlocked()
{
	flock -w "$2" "$1/lock" true || fail "$1 is still locked after ${2}s"
}

# pool_locked POOL: true while a process holds POOL's lock.
pool_locked()
{
	! flock -n "$1/lock" true
}

# ---- faulty raw devices: nbdkit behind nbdfuse -----------------------------------

# nbd_device NAME SIZE [NBDKIT_PARAM=VALUE...]: a raw device whose faults
# the test controls, and prints its path (a regular file: give it to
# `mapperctl device add`).  nbdkit serves SIZE bytes of memory on a Unix
# socket through the log, pause, error and delay filters (params such as
# delay-read=1, delay-write=500ms go to them); nbdfuse shows it as the file
# $T_DIR/nbd/NAME/mnt/NAME.  Every request fails with EIO while
# nbd_fail NAME is in force (nbd_heal NAME ends it), and waits while
# nbd_pause NAME is (nbd_resume NAME ends it); nbd_wait_request tells when
# a request reached the device.  Registers nbdfuse's unmount and nbdkit's
# end.  Safe inside $(...).
nbd_device()
{
	local name=$1 size=$2 dir=$T_DIR/nbd/$1 pid

	shift 2
	mkdir -p "$dir/mnt"
	cleanup_fn _t_undo_nbdkit "$dir/nbdkit.pid"	# before it starts: it detaches
	nbdkit --unix "$dir/sock" --pidfile "$dir/nbdkit.pid" \
		--filter=log --filter=pause --filter=error --filter=delay memory size="$size" \
		logfile="$dir/requests.log" pause-control="$dir/pause.sock" \
		error-rate=100% error-file="$dir/fail" "$@" </dev/null >/dev/null 2>"$dir/nbdkit.log" ||
		fail "nbdkit for $name did not start: $(cat "$dir/nbdkit.log")"
	# nbdfuse writes its pid when it serves: into a fifo, that is the event.
	mkfifo "$dir/nbdfuse.pid"
	nbdfuse -P "$dir/nbdfuse.pid" "$dir/mnt/$name" --unix "$dir/sock" \
		</dev/null >/dev/null 2>"$dir/nbdfuse.log" &
	cleanup_fn _t_undo_nbdfuse "$dir/mnt" "$!"
	pid=$(timeout 30 cat "$dir/nbdfuse.pid") && [ -n "$pid" ] ||
		fail "nbdfuse for $name did not start: $(cat "$dir/nbdfuse.log")"
	echo "$dir/mnt/$name"
}

# nbd_fail NAME / nbd_heal NAME: from now on every request to NAME fails
# with EIO / is served again.
nbd_fail() { : >"$T_DIR/nbd/$1/fail"; }
nbd_heal() { rm -f "$T_DIR/nbd/$1/fail"; }

# nbd_pause NAME: from now on every request to NAME waits, as on a device
# that hangs, until nbd_resume NAME (which the test's cleanup also does,
# before anything that would wait on the device).  Each returns once the
# filter has done it.
nbd_pause()
{
	_t_nbd_control "$1" p
	cleanup_fn _t_nbd_control "$1" r
}
nbd_resume() { _t_nbd_control "$1" r; }

# _t_nbd_control NAME p|r: sends the pause filter its command and waits
# for its answer (the command in upper case).
_t_nbd_control()
{
	timeout 30 python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode())
sys.exit(s.recv(1) != sys.argv[2].upper().encode())
' "$T_DIR/nbd/$1/pause.sock" "$2" || fail "nbdkit's pause filter of $1 did not answer '$2'"
}

# nbd_mark NAME: where NAME's request log ends now, for nbd_wait_request.
nbd_mark()
{
	stat -c %s "$T_DIR/nbd/$1/requests.log"
}

# nbd_wait_request NAME REGEX [MARK [COUNT]]: waits (up to 60 s) until a
# request (COUNT of them) matching REGEX (nbdkit's log filter: "Read id=3
# offset=0x0 count=...") reached device NAME after MARK: the moment a
# command is in its I/O.
nbd_wait_request()
{
	wait_line "$T_DIR/nbd/$1/requests.log" "$2" "${3:-0}" "${4:-1}"
}

_t_undo_nbdfuse()
{
	local mnt=$1 pid=$2 rc=0

	if mountpoint -q "$mnt"; then
		fusermount3 -u "$mnt" || { fusermount3 -uz "$mnt"; rc=1; }
	fi
	wait_pid "$pid" || { kill -KILL "$pid" 2>/dev/null; rc=1; }
	return "$rc"
}

# _t_undo_nbdkit PIDFILE: ends the nbdkit that wrote PIDFILE, if it runs.
_t_undo_nbdkit()
{
	local pid

	pid=$(cat "$1" 2>/dev/null) || return 0
	[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = nbdkit ] || return 0
	kill "$pid"
	wait_pid "$pid"
}

# ---- raw devices over NBD: nbdkit serving a file --------------------------------

# nbd_server NAME SIZE [NBDKIT_PARAM=VALUE...]: an NBD export of a file of
# SIZE bytes ($T_DIR/nbd/NAME/disk: read it to see what reached the
# server), served by nbdkit's file plugin on a Unix socket through the
# log, pause, error and delay filters, as nbd_device's (nbd_fail,
# nbd_pause, nbd_wait_request work on it; params such as delay-read=20ms
# go to the filters); prints its URI, for `mapperctl device add URI`.
# nbd_server_kill NAME ends the server as a crash would (kill -9),
# nbd_server_start NAME starts it again on the same socket.  Registers
# the server's end.  Safe inside $(...).
nbd_server()
{
	local dir=$T_DIR/nbd/$1

	mkdir -p "$dir"
	truncate -s "$2" "$dir/disk"
	printf '%s\n' "${@:3}" >"$dir/params"
	cleanup_fn _t_undo_nbdkit "$dir/nbdkit.pid"
	nbd_server_start "$1"
	echo "nbd+unix:///?socket=$dir/sock"
}

# nbd_server_start NAME: returns once the server listens (nbdkit writes
# its pid file then).
nbd_server_start()
{
	local dir=$T_DIR/nbd/$1
	local -a params

	mapfile -t params < <(grep . "$dir/params")
	rm -f "$dir/sock" "$dir/nbdkit.pid"
	nbdkit --unix "$dir/sock" --pidfile "$dir/nbdkit.pid" \
		--filter=log --filter=pause --filter=error --filter=delay file "$dir/disk" \
		logfile="$dir/requests.log" pause-control="$dir/pause.sock" \
		error-rate=100% error-file="$dir/fail" "${params[@]}" \
		</dev/null >/dev/null 2>>"$dir/nbdkit.log" ||
		fail "nbdkit for $1 did not start: $(cat "$dir/nbdkit.log")"
}

nbd_server_kill()
{
	local dir=$T_DIR/nbd/$1 pid

	pid=$(cat "$dir/nbdkit.pid") || fail "no nbdkit runs for $1"
	kill -KILL "$pid"
	wait_pid "$pid" || fail "nbdkit $pid of $1 did not end"
}

# read_fails_eio FILE WHEN: a direct 64 KiB read of FILE must fail with
# EIO, neither hang (60 s) nor succeed; WHEN ("while the server was
# away") completes the failure's message.
read_fails_eio()
{
	local rc=0

	timeout 60 dd if="$1" of=/dev/null bs=64k count=1 iflag=direct status=none \
		2>"$T_DIR/.dd.err" || rc=$?
	[ "$rc" -ne 124 ] || fail "a read hung $2"
	[ "$rc" -ne 0 ] || fail "a read succeeded $2"
	grep -q "Input/output error" "$T_DIR/.dd.err" ||
		fail "the read did not fail with EIO $2: $(cat "$T_DIR/.dd.err")"
}

# ---- a file system that fills up ---------------------------------------------------

# small_tmpfs DIR SIZE: mounts a tmpfs of SIZE (K/M suffixes) on DIR
# (created) and registers its unmount: a pool or a raw device on it runs
# out of space when the test wants.
small_tmpfs()
{
	mkdir -p "$1"
	mount -t tmpfs -o size="$2",mode=0700 mapperfs-test "$1" || fail "cannot mount a tmpfs on $1"
	cleanup_fn _t_undo_mount "$(realpath "$1")"
}

