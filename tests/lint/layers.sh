#!/usr/bin/env bash
# tests/lint/layers.sh: core's layers call one way, down.
#
# core/ has five folders, from the bottom: util, io, target, thin, pool.
# A file of one may include (#include "x.h") only headers of its own
# folder or of a folder below it.  The build already refuses that for a
# .c file (its library's include path holds only the folders below); this
# also catches a header that nothing of its own layer compiles, a quoted
# include that names no header of core at all, an include by a path that
# climbs out of the folder ("../pool/pool.h", <../pool/pool.h>), and a
# header of core included with angle brackets.  Calls up the layers,
# which no include needs to make, are circles.py's to find.  Prints every
# breach, one per line, and exits 1 if there is any.
set -euo pipefail

core=$(cd "$(dirname "$0")/../../core" && pwd)
layers=(util io target thin pool)

declare -A rank_of_header
for i in "${!layers[@]}"; do
	for h in "$core/${layers[$i]}"/*.h; do
		rank_of_header[$(basename "$h")]=$i
	done
done

breaches=0
for i in "${!layers[@]}"; do
	layer=${layers[$i]}
	for f in "$core/$layer"/*.[ch]; do
		while IFS= read -r header; do
			r=${rank_of_header[$header]-}
			if [ -z "$r" ]; then
				echo "core/$layer/$(basename "$f"): includes \"$header\", which is no header of core"
				breaches=$((breaches + 1))
			elif [ "$r" -gt "$i" ]; then
				echo "core/$layer/$(basename "$f"): includes \"$header\" of core/${layers[$r]}, a layer above"
				breaches=$((breaches + 1))
			fi
		done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
		while IFS= read -r header; do
			r=${rank_of_header[${header##*/}]-}
			if [[ $header == *..* ]]; then
				echo "core/$layer/$(basename "$f"): includes <$header>, a path out of its folder"
				breaches=$((breaches + 1))
			elif [ -n "$r" ] && [[ $header != */* ]]; then
				echo "core/$layer/$(basename "$f"): includes <$header>, a header of core/${layers[$r]}: quote it"
				breaches=$((breaches + 1))
			fi
		done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*<\([^>]*\)>.*/\1/p' "$f")
	done
done

if [ "$breaches" -ne 0 ]; then
	echo "layers.sh: $breaches include(s) against the direction util -> io -> target -> thin -> pool" >&2
	exit 1
fi
echo "layers.sh: every include of core points down or across"
