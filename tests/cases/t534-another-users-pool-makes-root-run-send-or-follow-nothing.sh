#!/usr/bin/env bash
# t534-another-users-pool-makes-root-run-send-or-follow-nothing.sh: root,
# serving or running mapperctl on a pool directory that another user owns,
# runs nothing that user names as root, sends nothing to a listener of
# theirs, opens nothing they planted but regular files, and follows none
# of their links (docs/architecture.md, "Pools of other users").
#
# The attacker is a throwaway user made here and removed at exit: it owns
# the pool directory, its raw device and its hooks, and runs each attack
# itself, one case per function:
#   event_command   an event command stored offline runs as the owner
#   hook_directory  a hook directory runs as the owner, and not at all if
#                   anyone else could write it or a hook, or a hook is a link
#   control_socket  a listener, or a link to root's, put in place of
#                   control.sock receives not one byte from root's mapperctl
#   fifo_at_start   a FIFO as mapperfs.log, mapperfs.pid, lock or pool.db:
#                   the daemon refuses in one line at once
#   fifo_at_sighup  a FIFO as the log at SIGHUP: refused, the daemon serves on
#   writelog        MAPPERFS_WRITELOG records only in a directory of root's
#                   alone, through no link
#   origin_as_owner an origin the owner names in pool.db (a file only root
#                   may read, a block device of root's) is read as the
#                   owner or not at all: the volume fails, naming why, and
#                   no byte of it reaches the owner's raw device
#   fifo_in_rows    a FIFO named in pool.db as an origin or a raw device:
#                   the daemon starts at once, that volume or device failed
#                   (after origin_as_owner, which makes the volume)
# T534_CASES="name ..." runs only those (to see each fail on another build).
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires useradd userdel groupadd groupdel usermod setpriv timeout sqlite3 jq blockdev
PY=/usr/bin/python3		# one the attacker can run (root's may be in /root)
[ -x "$PY" ] || skip "no $PY for the listener"

ATT=mfs-t534-$$
useradd --system --no-create-home --user-group --shell /bin/sh "$ATT" >/dev/null 2>&1 ||
	skip "cannot add a user"
_undo_user()
{
	userdel "$1"
	if getent group "$1" >/dev/null; then groupdel "$1"; fi
}
cleanup_fn _undo_user "$ATT"
ATT_UID=$(id -u "$ATT")
ATT_GID=$(id -g "$ATT")

# as_att CMD...: CMD as the attacker, with a PATH of its own.
as_att()
{
	setpriv --reuid="$ATT_UID" --regid="$ATT_GID" --clear-groups \
		env PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/ "$@"
}
att_mapperctl() { as_att "$MAPPERFS_BUILD/bin/mapperctl" --pool "$POOL" "$@"; }

# The attacker's corner: $OWN, with the pool, the hooks and what they write.
chmod 0711 "$T_DIR"
OWN=$T_DIR/own
OUT=$OWN/out
make_pool "$OWN/pool"
add_file_device d0 64M >/dev/null
for tp in tc td tw tl ts to; do
	mapperctl create thin-pool "$tp" --size 4M --on d0 >/dev/null
done
mkdir -p "$OUT" "$T_DIR/root-only"
chmod 0700 "$T_DIR/root-only"
chown -R "$ATT:$ATT" "$OWN" "$T_DIR/devices"
MNT=$T_DIR/mnt
mkdir -p "$MNT"

# A daemon that hangs before it writes its pid file is found by its
# command line (this build's mapperfs, on this pool) and killed at exit.
_undo_stray_daemons()
{
	local p

	if findmnt -n --mountpoint "$MNT" >/dev/null; then fusermount3 -uz "$MNT"; fi
	for p in /proc/[0-9]*; do
		_t_is_daemon "${p#/proc/}" && tr '\0' ' ' <"$p/cmdline" | grep -qF -- "--pool $POOL " &&
			kill -KILL "${p#/proc/}"
	done
	return 0
}
cleanup_fn _undo_stray_daemons

# hook_outcome NAME: the uid thin pool NAME's hook wrote to $OUT/NAME, or
# "refused" once the log says it did not run it.
hook_outcome()
{
	local pid line

	exec 6< <(exec timeout 60 tail -q -n +1 -F "$OUT/$1" "$POOL/mapperfs.log" 2>/dev/null)
	pid=$!
	line=$(grep -E -m 1 "^[0-9]+\$|thin pool '$1': not running its hook directory" <&6) || true
	kill "$pid" 2>/dev/null || true
	exec 6<&-
	case $line in
	'') fail "thin pool $1: its hook neither ran nor was refused within 60 s" ;;
	*"not running"*) echo refused ;;
	*) echo "$line" ;;
	esac
}

# write_hook DIR FILE: an executable hook in DIR that appends its uid to FILE.
write_hook()
{
	mkdir -p "$1"
	printf '#!/bin/sh\nid -u >>"%s"\n' "$2" >"$1/10-uid"
	chmod 0755 "$1" "$1/10-uid"
}

case_event_command()
{
	local uid

	att_mapperctl change tc --on-event "id -u >>'$OUT/tc'" >/dev/null ||
		fail "the owner cannot change its own pool offline"
	start_daemon "$POOL" "$MNT"
	mapperctl extend tc --size 8M >/dev/null	# raises "extended"
	uid=$(hook_outcome tc)
	[ "$uid" = "$ATT_UID" ] ||
		fail "the event command the owner stored ran as uid $uid, not as the owner ($ATT_UID)"
	stop_daemon "$MNT" "$POOL"
}

case_hook_directory()
{
	local uid got tp

	# td: the owner's own hooks, run as the owner.
	write_hook "$OWN/hooks" "$OUT/td"
	# tw: a directory anyone can write (a hook there may be anyone's).
	write_hook "$T_DIR/open-hooks" "$OUT/tw"
	chmod 0777 "$T_DIR/open-hooks"
	# tl: the owner's directory, one hook anyone can write.
	write_hook "$OWN/loose-hooks" "$OUT/tl"
	chmod 0777 "$OWN/loose-hooks/10-uid"
	# ts: a hook that is a link (to whatever it points to later).
	mkdir -p "$OWN/linked-hooks"
	ln -s "$OWN/hooks/10-uid" "$OWN/linked-hooks/10-uid"
	chown -R "$ATT:$ATT" "$OWN"
	att_mapperctl change td --on-event "$OWN/hooks" >/dev/null
	att_mapperctl change tw --on-event "$T_DIR/open-hooks" >/dev/null
	att_mapperctl change tl --on-event "$OWN/loose-hooks" >/dev/null
	att_mapperctl change ts --on-event "$OWN/linked-hooks" >/dev/null
	start_daemon "$POOL" "$MNT"
	for tp in td tw tl ts; do
		mapperctl extend "$tp" --size 8M >/dev/null
	done
	uid=$(hook_outcome td)
	[ "$uid" = "$ATT_UID" ] || fail "the owner's hook directory ran as uid $uid, not as the owner ($ATT_UID)"
	for tp in tw tl ts; do
		got=$(hook_outcome "$tp")
		[ "$got" = refused ] || fail "thin pool $tp: a hook that others could change ran (as uid $got)"
	done
	grep -E "thin pool 't[wls]': not running its hook directory" "$POOL/mapperfs.log" | sed 's/^/t534: log: /' >&2 || true
	stop_daemon "$MNT" "$POOL"
	! grep -qx 0 "$OUT"/t? 2>/dev/null || fail "a hook ran as root"
}

# The listener, as the attacker or as root: counts the bytes of every
# connection, prints "ready" once listening and, after a connection that
# says only "END", the count.  Read on fd 5.
cat >"$T_DIR/listen.py" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(16)
print("ready", flush=True)
total = 0
while True:
    c, _ = s.accept()
    data = b""
    while True:
        b = c.recv(65536)
        if not b:
            break
        data += b
    c.close()
    if data == b"END":
        break
    total += len(data)
print(total, flush=True)
EOF
chmod 0644 "$T_DIR/listen.py"

_undo_listener() { kill "$1" 2>/dev/null || true; }

# start_listener attacker|root SOCK
start_listener()
{
	local line

	if [ "$1" = attacker ]; then
		exec 5< <(exec setpriv --reuid="$ATT_UID" --regid="$ATT_GID" --clear-groups \
			"$PY" "$T_DIR/listen.py" "$2")
	else
		exec 5< <(exec "$PY" "$T_DIR/listen.py" "$2")
	fi
	cleanup_fn _undo_listener "$!"
	read -r -t 30 -u 5 line && [ "$line" = ready ] || fail "the listener on $2 did not start"
}

# bytes_received SOCK: ends the listener on SOCK; prints what it received.
bytes_received()
{
	local n

	"$PY" -c 'import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(b"END")' "$1"
	read -r -t 30 -u 5 n || fail "the listener on $1 did not count"
	exec 5<&-
	echo "$n"
}

# root_mapperctl_refuses WHAT SOCK REGEX: root's `mapperctl list` on the
# pool sends nothing to the listener on SOCK, and refuses in one line.
root_mapperctl_refuses()
{
	local rc=0 n

	timeout 20 "$MAPPERFS_BUILD/bin/mapperctl" --pool "$POOL" list >/dev/null 2>"$T_DIR/err" || rc=$?
	n=$(bytes_received "$2")
	[ "$n" -eq 0 ] || fail "root's mapperctl sent $n bytes to $1"
	[ "$rc" -eq 1 ] || fail "root's mapperctl exited $rc before $1 (stderr: $(head -c 300 "$T_DIR/err"))"
	[ "$(wc -l <"$T_DIR/err")" -eq 1 ] && grep -Eq -- "$3" "$T_DIR/err" ||
		fail "root's mapperctl said '$(cat "$T_DIR/err")', not one line matching /$3/"
	log "ok, $1 -> $(cat "$T_DIR/err")"
}

case_control_socket()
{
	as_att rm -f "$POOL/control.sock"
	start_listener attacker "$POOL/control.sock"
	root_mapperctl_refuses "the owner's listener" "$POOL/control.sock" \
		"^mapperctl: list: '$POOL/control.sock' belongs to uid $ATT_UID, neither root nor you .*: not sending it the command"
	as_att rm -f "$POOL/control.sock"

	# A link to a socket that root listens on (another daemon, say).
	start_listener root "$T_DIR/root-only/root.sock"
	as_att ln -s "$T_DIR/root-only/root.sock" "$POOL/control.sock"
	root_mapperctl_refuses "a link to root's listener" "$T_DIR/root-only/root.sock" \
		"^mapperctl: list: '$POOL/control.sock' is a symbolic link: not sending it the command"
	as_att rm -f "$POOL/control.sock"
}

case_fifo_at_start()
{
	local f

	for f in mapperfs.log mapperfs.pid lock pool.db; do
		as_att sh -c "if [ -e '$POOL/$f' ]; then mv '$POOL/$f' '$POOL/$f.kept'; fi; mkfifo '$POOL/$f'"
		expect_fail -s 1 -m "'$POOL/$f'.*not a regular file: refusing it" \
			timeout 20 "$MAPPERFS_BUILD/bin/mapperfs" --pool "$POOL" "$MNT"
		! mountpoint -q "$MNT" || fail "mapperfs mounted with a FIFO as $f"
		as_att sh -c "rm '$POOL/$f'; if [ -e '$POOL/$f.kept' ]; then mv '$POOL/$f.kept' '$POOL/$f'; fi"
	done
}

case_fifo_at_sighup()
{
	local pid

	start_daemon "$POOL" "$MNT"
	pid=$(daemon_pid)
	as_att sh -c "mv '$POOL/mapperfs.log' '$POOL/mapperfs.log.1' && mkfifo '$POOL/mapperfs.log'"
	kill -HUP "$pid"
	wait_line "$POOL/mapperfs.log.1" "SIGHUP: cannot reopen the log: not a regular file; still writing the old one"
	mapperctl list >/dev/null || fail "the daemon stopped answering after the refused reopen"
	as_att sh -c "rm '$POOL/mapperfs.log' && mv '$POOL/mapperfs.log.1' '$POOL/mapperfs.log'"
	stop_daemon "$MNT" "$POOL"		# SIGHUP left its signal thread free
}

# set_origin VOLUME PATH: the owner points VOLUME's origin at PATH in
# pool.db, as it was recorded when the volume was made (size and mtime).
set_origin()
{
	as_att sqlite3 "$POOL/pool.db" "UPDATE thin_origin SET origin_path = '$2',
		origin_size = $(blockdev --getsize64 "$2" 2>/dev/null || stat -L -c %s "$2"),
		origin_mtime_ns = $(date -r "$2" +%s%N)
		WHERE volume = (SELECT id FROM volume WHERE name = '$1');" ||
		fail "the owner could not edit pool.db"
	# A block device's mtime is not compared, nor recorded.
	if [ -b "$2" ]; then
		as_att sqlite3 "$POOL/pool.db" "UPDATE thin_origin SET origin_mtime_ns = NULL
			WHERE volume = (SELECT id FROM volume WHERE name = '$1');"
	fi
}

# failed_because VOLUME REGEX: the daemon serves VOLUME failed, for that reason.
failed_because()
{
	mapperctl status "$1" --json | jq -e --arg re "$2" '.state == "failed" and (.reason | test($re))' \
		>/dev/null || fail "volume $1 is not failed for /$2/: $(mapperctl status "$1" --json)"
}

case_origin_as_owner()
{
	local loop

	as_att sh -c "head -c $MiB /dev/zero >'$OWN/base.img'"
	att_mapperctl create thin ov --pool to --size 1M --origin "$OWN/base.img" >/dev/null
	# What only root may read: a file, and a block device over one.
	{ yes TOPSECRET-ROOT-ONLY || true; } | head -c $MiB >"$T_DIR/root-only/secret.img"
	chmod 0600 "$T_DIR/root-only/secret.img"
	loop=$(attach_loop "$T_DIR/root-only/secret.img")
	blockdev --setro "$loop"
	cleanup_fn blockdev --setrw "$loop"
	for secret in "$T_DIR/root-only/secret.img" "$loop"; do
		set_origin ov "$secret"
		start_daemon "$POOL" "$MNT"
		failed_because ov "origin '$secret' cannot be read by the pool's owner \\(uid $ATT_UID\\), as whom it is read"
		expect_fail -m "No such file or directory" dd if="$MNT/ov" of=/dev/null bs=4K count=1 status=none
		stop_daemon "$MNT" "$POOL"
		! grep -q TOPSECRET "$T_DIR/devices/d0.img" || fail "the secret reached the owner's raw device"
		log "ok, origin $secret -> $(grep -o "volume 'ov' is not served.*" "$POOL/mapperfs.log" | tail -n 1)"
	done
	# One the owner may read is served: its own, and one it reads through
	# a group it is a member of (as a disk group reads a block device).
	set_origin ov "$OWN/base.img"
	start_daemon "$POOL" "$MNT"
	cmp <(head -c $MiB /dev/zero) "$MNT/ov" || fail "the owner's own origin does not read back"
	stop_daemon "$MNT" "$POOL"
	groupadd "$ATT-r"
	cleanup_fn groupdel "$ATT-r"
	usermod -a -G "$ATT-r" "$ATT"
	# (a copy: the loop device above holds the first open for writing)
	cp "$T_DIR/root-only/secret.img" "$T_DIR/root-only/group.img"
	chgrp "$ATT-r" "$T_DIR/root-only" "$T_DIR/root-only/group.img"
	chmod 0750 "$T_DIR/root-only"
	chmod 0640 "$T_DIR/root-only/group.img"
	set_origin ov "$T_DIR/root-only/group.img"
	start_daemon "$POOL" "$MNT"
	cmp "$T_DIR/root-only/group.img" "$MNT/ov" ||
		fail "an origin the owner reads through its group $ATT-r is not served: $(mapperctl status ov --json)"
	stop_daemon "$MNT" "$POOL"
}

case_fifo_in_rows()
{
	as_att mkfifo "$OWN/fifo"
	set_origin ov "$OWN/base.img"
	as_att sqlite3 "$POOL/pool.db" "UPDATE thin_origin SET origin_path = '$OWN/fifo'
		WHERE volume = (SELECT id FROM volume WHERE name = 'ov');"
	start_daemon "$POOL" "$MNT"	# at once: it does not wait for a writer
	failed_because ov "origin '$OWN/fifo' is neither a regular file nor a block device"
	stop_daemon "$MNT" "$POOL"
	as_att sqlite3 "$POOL/pool.db" "UPDATE device SET path = '$OWN/fifo' WHERE name = 'd0';"
	start_daemon "$POOL" "$MNT"
	mapperctl device list --json | jq -e '.[] | select(.name == "d0") | .state == "failed"' \
		>/dev/null || fail "a FIFO as raw device d0 is not failed: $(mapperctl device list --json)"
	stop_daemon "$MNT" "$POOL"
	as_att sqlite3 "$POOL/pool.db" "UPDATE device SET path = '$T_DIR/devices/d0.img' WHERE name = 'd0';"
}

# writelog_refused DIR TARGET REGEX: root's `mapperctl device list` with
# MAPPERFS_WRITELOG=DIR creates nothing at TARGET and stops in one line.
writelog_refused()
{
	local rc=0

	MAPPERFS_WRITELOG=$1 "$MAPPERFS_BUILD/bin/mapperctl" --pool "$POOL" device list \
		>/dev/null 2>"$T_DIR/err" || rc=$?
	[ ! -e "$2" ] && [ ! -e "$2.data" ] || fail "root's mapperctl created $2 (MAPPERFS_WRITELOG=$1)"
	[ "$rc" -ne 0 ] || fail "root's mapperctl recorded into $1"
	[ "$(wc -l <"$T_DIR/err")" -eq 1 ] && grep -Eq -- "$3" "$T_DIR/err" ||
		fail "mapperctl said '$(cat "$T_DIR/err")', not one line matching /$3/"
	log "ok, MAPPERFS_WRITELOG=$1 -> $(cat "$T_DIR/err")"
}

case_writelog()
{
	# The attacker's directory, its files links into one only root can write.
	as_att sh -c "mkdir '$OWN/wl' && ln -s '$T_DIR/root-only/wl' '$OWN/wl/log' &&
		ln -s '$T_DIR/root-only/wl.data' '$OWN/wl/data'"
	writelog_refused "$OWN/wl" "$T_DIR/root-only/wl" \
		"MAPPERFS_WRITELOG: '$OWN/wl' is not a directory of this user's or root's that only its owner can write"
	# Root's own directory, with a link left in it: not followed either.
	mkdir -m 0700 "$T_DIR/wl-root"
	ln -s "$T_DIR/root-only/wl2" "$T_DIR/wl-root/log"
	writelog_refused "$T_DIR/wl-root" "$T_DIR/root-only/wl2" \
		"MAPPERFS_WRITELOG: cannot record into '$T_DIR/wl-root': it or a file in it is a symbolic link, not followed"
	# A directory like /tmp, that anyone may write.
	mkdir -m 1777 "$T_DIR/wl-open"
	chmod 1777 "$T_DIR/wl-open"
	writelog_refused "$T_DIR/wl-open" "$T_DIR/wl-open/log" \
		"MAPPERFS_WRITELOG: '$T_DIR/wl-open' is not a directory of this user's or root's"
}

for c in ${T534_CASES:-event_command hook_directory control_socket fifo_at_start fifo_at_sighup writelog origin_as_owner fifo_in_rows}; do
	log "case $c"
	"case_$c"
done
