#!/usr/bin/env bash
# t543-the-owner-of-a-pool-reaches-its-root-daemon.sh: a root daemon
# serves root and the owner of the pool directory (docs/cli.md), so the
# owner's mapperctl must reach it: control.sock is root's (root's
# mapperctl trusts only a socket of root's or its own), in the owner's
# primary group, mode 0660.  A third user cannot connect at all; one in
# the owner's group connects and is refused by the daemon (SO_PEERCRED).
#
# The owner and the third user are throwaway users made here and removed
# at exit.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires useradd userdel setpriv jq

_undo_user()
{
	userdel "$1"
	if getent group "$1" >/dev/null; then groupdel "$1"; fi
}
OWNER=mfs-t543o-$$
THIRD=mfs-t543t-$$
for u in "$OWNER" "$THIRD"; do
	useradd --system --no-create-home --user-group --shell /bin/sh "$u" >/dev/null 2>&1 ||
		skip "cannot add a user"
	cleanup_fn _undo_user "$u"
done
OWNER_UID=$(id -u "$OWNER")
OWNER_GID=$(id -g "$OWNER")
THIRD_UID=$(id -u "$THIRD")
THIRD_GID=$(id -g "$THIRD")

# as UID GID [GROUPS] CMD...: CMD as that user, with only those groups.
as()
{
	local uid=$1 gid=$2 groups=--clear-groups

	[ -z "$3" ] || groups=--groups=$3
	shift 3
	setpriv --reuid="$uid" --regid="$gid" "$groups" \
		env PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/ "$@"
}

chmod 0711 "$T_DIR"
make_pool "$T_DIR/own/pool"
add_file_device d0 32M >/dev/null
mapperctl create linear v --size 4M >/dev/null
chown -R "$OWNER:$OWNER" "$T_DIR/own" "$T_DIR/devices"
start_daemon

sock=$(stat -c '%u %g %a' "$POOL/control.sock")
[ "$sock" = "0 $OWNER_GID 660" ] ||
	fail "control.sock is uid, gid, mode $sock; expected 0 $OWNER_GID 660"

# The owner reaches the daemon (without it, its mapperctl would wait for
# the daemon's lock and give up).
as "$OWNER_UID" "$OWNER_GID" "" timeout 30 "$MAPPERFS_BUILD/bin/mapperctl" --pool "$POOL" \
	list --json >list 2>err || fail "the owner's list failed: $(cat err)"
jq -e 'length == 1 and .[0].name == "v"' list >/dev/null || fail "the owner's list says: $(cat list)"
[ ! -s err ] || fail "the owner's list said: $(cat err)"
mapperctl list --json | jq -e 'length == 1' >/dev/null || fail "root was not served"

# A third user cannot connect, even where the owner lets it reach the socket.
chmod 0711 "$T_DIR/own" "$POOL"
expect_fail -s 1 -m "^mapperctl: list: cannot reach the daemon of pool '$POOL': Permission denied" \
	as "$THIRD_UID" "$THIRD_GID" "" "$MAPPERFS_BUILD/bin/mapperctl" --pool "$POOL" list

# One in the owner's group connects, and the daemon refuses it.
mark=$(log_mark)
expect_fail -s 1 -m "^mapperctl: permission denied: only root and the owner of pool '$POOL' \(uid $OWNER_UID\) may use its daemon; you are uid $THIRD_UID" \
	as "$THIRD_UID" "$THIRD_GID" "$OWNER_GID" "$MAPPERFS_BUILD/bin/mapperctl" --pool "$POOL" remove v
wait_log "control: refused a command from uid $THIRD_UID" "$mark"
mapperctl list --json | jq -e 'length == 1' >/dev/null || fail "the refused remove removed v"

# What the owner's command names is opened and made as the owner could,
# never with root's rights: a file only root may write is not taken as a
# raw device, even with --force, nor is a file made where only root may.
owner_ctl() { as "$OWNER_UID" "$OWNER_GID" "" "$MAPPERFS_BUILD/bin/mapperctl" --pool "$POOL" "$@"; }
mkdir -m 0700 "$T_DIR/root-only"
head -c $((8 * MiB)) /dev/urandom >"$T_DIR/root-only/victim"
cp "$T_DIR/root-only/victim" "$T_DIR/victim.orig"
chmod 0755 "$T_DIR/root-only"		# the owner may look, not write
expect_fail -s 1 -m "Permission denied" owner_ctl device add "$T_DIR/root-only/victim" --force
cmp "$T_DIR/root-only/victim" "$T_DIR/victim.orig" || fail "the owner's device add wrote a file of root's"
expect_fail -s 1 -m "Permission denied" owner_ctl device add "$T_DIR/root-only/new.img" --create 8M
[ ! -e "$T_DIR/root-only/new.img" ] || fail "the owner's device add made a file where only root may"
# One of the owner's own is taken, and made the owner's.
as "$OWNER_UID" "$OWNER_GID" "" mkdir "$T_DIR/own/devs"
owner_ctl device add "$T_DIR/own/devs/d1.img" --create 8M --name d1 >/dev/null ||
	fail "the owner could not add a device of its own"
[ "$(stat -c %u "$T_DIR/own/devs/d1.img")" = "$OWNER_UID" ] ||
	fail "the owner's new device file is uid $(stat -c %u "$T_DIR/own/devs/d1.img")'s"
