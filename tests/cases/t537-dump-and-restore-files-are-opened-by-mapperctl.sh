#!/usr/bin/env bash
# t537-dump-and-restore-files-are-opened-by-mapperctl.sh: the files that
# `dump -o` and `restore --from` name are opened by mapperctl, with its
# caller's rights, and handed to the daemon, as switch-map --file is:
# `--from -` and `--from /dev/stdin` read mapperctl's standard input (not
# a file named '-', nor the daemon's /dev/null), `-o -` and no -o write
# its standard output, also to a pipe; a dump that fails leaves no file.
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
