#!/usr/bin/env bash
# t537-dump-and-restore-files-are-opened-by-mapperctl.sh: the files that
# `dump -o` and `restore --from` name are opened by mapperctl, with its
# caller's rights, and handed to the daemon, as switch-map --file is:
# `--from -` and `--from /dev/stdin` read mapperctl's standard input (not
# a file named '-', nor the daemon's /dev/null), `-o -` and no -o write
# its standard output, also to a pipe; a dump that fails leaves no file.
# `dump -o F` writes a temporary beside F and renames it onto F only once
# the dump succeeded: a dump that fails leaves F (and its hard link) byte
# for byte.  The pool's own files, a raw device and a volume are refused
# before anything is written, online and offline; /dev/stdout and
# /proc/self/fd/N are the caller's own descriptors.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs

make_pool
add_file_device d0 128M >/dev/null
# No passdown: removing v below leaves its data where the dump says (restore refuses holes).
mapperctl create thin-pool tp --size 32M --no-discard-passdown >/dev/null
mapperctl create thin v --pool tp --size 4M >/dev/null
start_daemon
dd if=/dev/urandom of="$MNT/v" bs=64K count=2 conv=notrunc,fsync status=none

# Output: a file, -, none (a regular file, a pipe) all hold the same dump.
mapperctl dump tp -o file.xml
[ "$(stat -c %a file.xml)" = 600 ] || fail "the dump file is not 0600"
mapperctl dump tp -o - >dash.xml
[ ! -e ./- ] || fail "dump -o - made a file named '-'"
mapperctl dump tp >stdout.xml
mapperctl dump tp | cat >pipe.xml
for f in dash stdout pipe; do
	cmp -s file.xml "$f.xml" || fail "dump to $f differs from dump -o FILE"
done
grep -q 'name="v"' file.xml || fail "the dump lacks volume v"

# Input: restore reads mapperctl's standard input for - and /dev/stdin.
mapperctl remove v >/dev/null
mapperctl restore tp --from - --dry-run <file.xml >dash.out ||
	fail "restore --from - failed: $(cat dash.out)"
grep -q "would create thin volume 'v'" dash.out || fail "restore --from - read: $(cat dash.out)"
mapperctl restore tp --from /dev/stdin --dry-run <file.xml >devstdin.out 2>&1 ||
	fail "restore --from /dev/stdin failed: $(cat devstdin.out)"
grep -q "would create thin volume 'v'" devstdin.out ||
	fail "restore --from /dev/stdin read: $(cat devstdin.out)"
cat file.xml | mapperctl restore tp --from - >pipe.out || fail "restore from a pipe failed: $(cat pipe.out)"
[ "$(mapperctl status v --json | json_get .size)" -eq $((4 * MiB)) ] || fail "v was not restored"
expect_fail -s 1 -m "no volume 'nosuch'" mapperctl dump nosuch -o failed.xml
[ ! -e failed.xml ] || fail "a dump that failed left its file"

# A dump that fails leaves an existing F as it was, and its other name;
# one that succeeds replaces it (its mode kept; the hard link is the old file).
mapperctl dump tp >ref.xml		# the pool as restored
echo keep >keep.txt
chmod 640 keep.txt
ln keep.txt keep.link
expect_fail -s 1 -m "no volume 'nosuch'" mapperctl dump nosuch -o keep.txt
[ "$(cat keep.txt)" = keep ] || fail "a dump that failed changed keep.txt: $(head -c 100 keep.txt)"
[ "$(cat keep.link)" = keep ] || fail "a dump that failed changed keep.txt's hard link"
mapperctl dump tp -o keep.txt
cmp -s ref.xml keep.txt || fail "a dump did not replace keep.txt"
[ "$(stat -c %a keep.txt)" = 640 ] || fail "the dump did not keep keep.txt's mode"
[ "$(cat keep.link)" = keep ] || fail "the dump wrote through keep.txt's hard link"

# /dev/stdout and /proc/self/fd/N are the caller's: to a file, a pipe, fd 3.
mapperctl dump tp -o /dev/stdout >devstdout.xml || fail "dump -o /dev/stdout failed"
mapperctl dump tp -o /dev/stdout | cat >devstdout-pipe.xml
mapperctl dump tp -o /proc/self/fd/3 3>fd3.xml || fail "dump -o /proc/self/fd/3 failed"
for f in devstdout devstdout-pipe fd3; do
	cmp -s ref.xml "$f.xml" || fail "dump to $f differs from dump -o FILE"
done
ln -s ref.xml link.xml
expect_fail -s 1 -m "'$T_DIR/link.xml'.*symbolic link" mapperctl dump tp -o link.xml
cmp -s ref.xml link.xml || fail "a refused dump changed what link.xml points to"

# The pool's own files, a raw device (any pool's: a copy of the label
# will do) and a volume or the mount are refused; nothing changes.
d0=$T_DIR/devices/d0.img
head -c 4096 "$d0" >other-raw.img
v_sha=$(sha "$MNT/v")
d0_sha=$(head -c $((2 * MiB)) "$d0" | sha -)
refused_outputs()
{
	local f

	for f in "$POOL/pool.db" "$POOL/pool.db-wal" "$POOL/mapperfs.log" "$POOL/lock"; do
		expect_fail -s 1 -m "'$f': it is the pool's own file" mapperctl dump tp -o "$f"
	done
	(cd "$POOL" && expect_fail -s 1 -m "pool's own file" mapperctl dump tp -o pool.db)
	expect_fail -s 1 -m "'$d0': it carries a mapperfs device label" mapperctl dump tp -o "$d0"
	expect_fail -s 1 -m "device label" mapperctl dump tp -o other-raw.img
	[ "$(head -c $((2 * MiB)) "$d0" | sha -)" = "$d0_sha" ] || fail "a refused dump changed raw device d0"
	[ "$(stat -c %s other-raw.img)" = 4096 ] || fail "a refused dump changed other-raw.img"
	mapperctl check >check.out 2>&1 || fail "the pool is damaged: $(cat check.out)"
}
refused_outputs
expect_fail -s 1 -m "'$MNT/v': it is a file of a mapperfs mount" mapperctl dump tp -o "$MNT/v"
expect_fail -s 1 -m "cannot create a file in '$MNT'" mapperctl dump tp -o "$MNT/new.xml"
loop=$(attach_loop "$MNT/v")
expect_fail -s 1 -m "'$loop': it is a loop device over a file of a mapperfs mount" \
	mapperctl dump tp -o "$loop"
detach_loop "$loop"
[ "$(sha "$MNT/v")" = "$v_sha" ] || fail "a refused dump changed volume v"

# mapperctl killed while the daemon dumps leaves no temporary: the daemon
# is stopped, so the dump waits with its temporary made, until SIGTERM.
pid=$(daemon_pid)
kill -STOP "$pid"
"$MAPPERFS_BUILD/bin/mapperctl" dump tp -o killed.xml &
ctl=$!
# (Globs, not find: find would stat the stopped daemon's mount, for good.)
until compgen -G '.killed.xml.??????' >/dev/null; do
	kill -0 "$ctl" 2>/dev/null || fail "mapperctl ended before it made its temporary"
done
kill -TERM "$ctl"
wait "$ctl" && fail "mapperctl went on after SIGTERM"
kill -CONT "$pid"
! compgen -G '.killed.xml.*' >/dev/null || fail "SIGTERM left the dump's temporary"
[ ! -e killed.xml ] || fail "a dump killed by SIGTERM made killed.xml"
mapperctl list >/dev/null || fail "the daemon does not answer after its dump's client went away"
stop_daemon
refused_outputs
expect_fail -s 1 -m "no volume 'nosuch'" mapperctl dump nosuch -o keep.txt
cmp -s ref.xml keep.txt || fail "a dump that failed offline changed keep.txt"
mapperctl dump tp -o offline.xml
cmp -s ref.xml offline.xml || fail "the dump offline differs from the dump online"

# No temporary is left behind, whether the dump succeeded or failed.
leftover=$(find . "$POOL" -name '.*.??????' -newer ref.xml)
[ -z "$leftover" ] || fail "dumps left temporaries: $leftover"
