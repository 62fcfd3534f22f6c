#!/usr/bin/env bash
# dist/gen-man.sh TEMPLATE BINARY OUTPUT: writes the scdoc source OUTPUT
# from TEMPLATE, putting in place of its line "@HELP@" what BINARY --help
# prints, and in place of "@COMMANDS@" one section per command of BINARY
# (mapperctl) with what "BINARY COMMAND --help" prints.  So the man pages
# say exactly what --help says: both come from the command table.
set -euo pipefail

template=$1 bin=$2 out=$3

# Command names: the words of each synopsis line before its first argument,
# once each (a command with two forms has two synopsis lines).
commands()
{
	"$bin" --help | sed -n 's/^  \([a-z][a-z-]*\( [a-z][a-z-]*\)\?\)\( .*\)\?$/\1/p' |
		awk '!seen[$0]++'
}

# A literal block of scdoc; scdoc needs no escaping inside one.
literal()
{
	printf '```\n'
	cat
	printf '```\n'
}

{
	while IFS= read -r line; do
		case $line in
		@HELP@)
			"$bin" --help | literal
			;;
		@COMMANDS@)
			while read -r name; do
				printf '## %s\n\n' "$name"
				# shellcheck disable=SC2086 # the name is one or two words
				"$bin" $name --help | sed '1s/^usage: //' | literal
				printf '\n'
			done < <(commands)
			;;
		*)
			printf '%s\n' "$line"
			;;
		esac
	done <"$template"
} >"$out.tmp"
mv "$out.tmp" "$out"
