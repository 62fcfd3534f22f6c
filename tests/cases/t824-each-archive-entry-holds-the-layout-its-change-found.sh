#!/usr/bin/env bash
# t824-each-archive-entry-holds-the-layout-its-change-found.sh: the archive
# entry a change writes holds the layout as `backup` showed it just before
# (the records the previous change left, which the daemon keeps rather
# than reads back), under a header of its own: its number, and the command
# that followed.  So through a run of changes of every kind in one
# daemon, across a restart, and after a change that failed.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs

make_pool
add_file_device d0 64M >/dev/null
mapperctl create thin-pool tp --size 16M >/dev/null
mapperctl create thin a --pool tp --size 8M >/dev/null

# change CMD...: runs `mapperctl CMD...` and checks the entry it archived.
change()
{
	local seq entry

	mapperctl backup -o "$T_DIR/before.layout" >/dev/null || fail "backup before '$*' failed"
	seq=$(sed -n 's/^layout .* seq=\([0-9]*\) .*/\1/p' "$T_DIR/before.layout")
	[ -n "$seq" ] || fail "backup has no seq: $(head -n 2 "$T_DIR/before.layout")"
	mapperctl "$@" >/dev/null || fail "mapperctl $* failed"
	entry=$POOL/archive/$(printf '%08d' "$seq").layout
	[ -f "$entry" ] || fail "'$*' archived no entry $seq: $(ls "$POOL/archive")"
	sed -n 2p "$entry" | grep -q "^layout version=1 pool=.* seq=$seq time=[0-9]* command=\"mapperctl $*\"$" ||
		fail "entry $seq's header does not name '$*': $(sed -n 2p "$entry")"
	cmp -s <(tail -n +3 "$T_DIR/before.layout") <(tail -n +3 "$entry") ||
		fail "entry $seq, before '$*', differs from the layout before it: $(diff <(tail -n +3 "$T_DIR/before.layout") <(tail -n +3 "$entry") | head -n 6)"
}

start_daemon
change snapshot a s1
change set s1 --addtag web
change rename s1 s2
change create linear l --size 4M
change extend l --size 8M
change set a --read-only
expect_fail -s 1 mapperctl create linear l --size 4M	# taken: nothing changed
change remove s2
stop_daemon
start_daemon
change snapshot a s3
change remove l
change remove s3
stop_daemon
