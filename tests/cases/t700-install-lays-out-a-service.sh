#!/usr/bin/env bash
# t700-install-lays-out-a-service.sh: `cmake --install` into a staging
# prefix lays out both binaries, their man pages (which render, and name
# every command and option that --help does), bash completion that
# completes commands and volume names, the systemd unit (which passes
# systemd-analyze verify where systemd is installed) and the mount
# helper; both binaries answer --version.
. "$(dirname "$0")/../lib/functions.sh"
requires cmake man
[ -x "$MAPPERFS_BUILD/bin/mapperfs" ] || fail "no $MAPPERFS_BUILD/bin/mapperfs (build first)"
[ -e "$MAPPERFS_BUILD/dist/mapperctl.8" ] || skip "no man pages were built (is scdoc installed?)"

stage=$T_DIR/stage/usr
cmake --install "$MAPPERFS_BUILD" --prefix "$stage" >install.log 2>&1 ||
	{ cat install.log >&2; fail "cmake --install failed"; }
for f in bin/mapperfs bin/mapperctl share/man/man8/mapperfs.8 share/man/man8/mapperctl.8 \
	 share/bash-completion/completions/mapperctl share/bash-completion/completions/mapperfs \
	 lib/systemd/system/mapperfs@.service sbin/mount.fuse.mapperfs; do
	[ -e "$stage/$f" ] || fail "cmake --install did not lay out $f"
done
[ "$(readlink "$stage/sbin/mount.fuse.mapperfs")" = "$stage/bin/mapperfs" ] ||
	fail "the mount helper does not lead to the installed mapperfs"

version=$(sed -n 's/^project(mapperfs VERSION \([0-9.]*\).*/\1/p' "$T_SRC/CMakeLists.txt")
[ "$("$stage/bin/mapperfs" --version)" = "mapperfs $version" ] || fail "mapperfs --version"
[ "$("$stage/bin/mapperctl" --version)" = "mapperctl $version" ] || fail "mapperctl --version"

# The pages render, and say what --help says.
for page in mapperfs mapperctl; do
	MANWIDTH=200 man -l "$stage/share/man/man8/$page.8" >"$page.txt" 2>man.err ||
		fail "man -l $page.8 does not render: $(cat man.err)"
	grep -q "^NAME" "$page.txt" || fail "$page(8) has no NAME section"
done
"$stage/bin/mapperctl" --help | sed -n 's/^  *//p' | while IFS= read -r synopsis; do
	grep -qF -- "$synopsis" mapperctl.txt || fail "mapperctl(8) lacks '$synopsis'"
done
# The list of commands shows each synopsis whole, as each command's --help.
"$stage/bin/mapperctl" --help >help.txt
sed -n 's/^  \([a-z][a-z-]*\( [a-z][a-z-]*\)\?\)\( .*\)\?$/\1/p' help.txt | sort -u |
	while read -r name; do
		# shellcheck disable=SC2086 # the name is one or two words
		"$stage/bin/mapperctl" $name --help | sed -e '/^$/,$d' -e 's/^[a-z: ]*mapperctl //' -e 's/^ *//' |
			while IFS= read -r line; do
				grep -qF -- "$line" help.txt || fail "'mapperctl --help' lacks '$line' of $name"
			done
	done
for opt in $("$stage/bin/mapperfs" --help | grep -o -- '-o [a-z_]*=\?' | sed 's/-o //'); do
	grep -qF -- "-o $opt" mapperfs.txt || fail "mapperfs(8) lacks -o $opt"
done

# Completion: commands from --help, volume names from the pool.
if [ -r /usr/share/bash-completion/bash_completion ]; then
	make_pool
	add_file_device d0 16M >/dev/null
	mapperctl create linear vol-one --size 4M >/dev/null
	out=$(PATH="$stage/bin:$PATH" bash -c '
		. /usr/share/bash-completion/bash_completion
		. "$1/share/bash-completion/completions/mapperctl"
		complete_words() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"
			COMP_POINT=${#COMP_LINE}; _mapperctl; printf "%s\n" "${COMPREPLY[@]}"; }
		complete_words mapperctl snap
		complete_words mapperctl remove vol-' _ "$stage") || fail "completion failed"
	grep -qx snapshot <<<"$out" || fail "completion does not offer 'snapshot': $out"
	grep -qx vol-one <<<"$out" || fail "completion does not offer volume 'vol-one': $out"
fi

if command -v systemd-analyze >/dev/null; then
	MANPATH=$stage/share/man systemd-analyze verify \
		"$stage/lib/systemd/system/mapperfs@srv-pool.service" >verify.log 2>&1 ||
		{ cat verify.log >&2; fail "systemd-analyze verify refuses mapperfs@.service"; }
else
	log "systemd-analyze is not installed: the unit is not verified"
fi
