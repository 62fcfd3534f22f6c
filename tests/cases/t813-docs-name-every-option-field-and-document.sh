#!/usr/bin/env bash
# t813-docs-name-every-option-field-and-document.sh: what the binaries
# say they take, the docs say too: every `-o NAME` of `mapperfs --help` has
# its row in docs/cli.md's table of options, every field of `mapperctl
# list -o help` is in docs/cli.md's paragraph of list's fields, and
# README.md's list of documentation names every docs/*.md.
. "$(dirname "$0")/../lib/functions.sh"
[ -x "$MAPPERFS_BUILD/bin/mapperfs" ] || fail "no $MAPPERFS_BUILD/bin/mapperfs (build first)"

make_pool
cli=$T_SRC/docs/cli.md

mapperfs --help | sed -n 's/^ *-o \([a-z_]*\)=.*/\1/p' >opts
[ -s opts ] || fail "mapperfs --help names no -o NAME=VALUE option"
while read -r o; do
	grep -q "^| \`-o $o=" "$cli" || fail "docs/cli.md's table of mapperfs options lacks '-o $o'"
done <opts

sed -n '/^Fields of `list`/,/^$/p' "$cli" >fields.md
[ -s fields.md ] || fail "docs/cli.md has no paragraph 'Fields of \`list\`'"
for f in $(mapperctl list -o help | awk '{ print $1 }'); do
	grep -q "\`$f\`" fields.md || fail "docs/cli.md's paragraph of list's fields lacks '$f'"
done

sed -n '/^## Documentation/,/^## /p' "$T_SRC/README.md" >docs.md
for d in "$T_SRC"/docs/*.md; do
	grep -q "(docs/$(basename "$d"))" docs.md || fail "README.md's documentation lacks docs/$(basename "$d")"
done
