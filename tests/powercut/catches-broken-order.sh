#!/usr/bin/env bash
# tests/powercut/catches-broken-order.sh: the power-cut suite must notice a
# broken commit order.  Runs it once per deliberate bug the recording
# daemon can be asked for (MAPPERFS_WRITELOG_BREAK: the metadata committed
# before the data is flushed; a freed block reused before the commit that
# freed it) and fails unless each run reports lost acknowledged writes or
# inconsistencies within 300 cut points (it stops at the first workload
# with a breach).  A suite that passed here would prove nothing.
set -euo pipefail

here=$(dirname "$0")
status=0
# Each run keeps the recordings it found breaches in: here, and then gone.
TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/powercut-broken.XXXXXX")
export TMPDIR
trap 'rm -rf --one-file-system "$TMPDIR"' EXIT
for name in commit-before-flush reuse-before-commit; do
	out=$(bash "$here/run.sh" --cuts 300 --per-workload 25 --seed 1 --break "$name" \
		--stop-on-breach 2>/dev/null) || true
	last=$(tail -1 <<<"$out")
	echo "with $name: $last"
	if ! [[ $last =~ ^powercut:\ [0-9]+\ cut\ points,\ ([0-9]+)\ lost.*,\ ([0-9]+)\ inconsistencies$ ]]; then
		echo "catches-broken-order: FAIL: the suite did not run with $name" >&2
		status=1
	elif [ "${BASH_REMATCH[1]}" -eq 0 ] && [ "${BASH_REMATCH[2]}" -eq 0 ]; then
		echo "catches-broken-order: FAIL: the suite did not notice $name" >&2
		status=1
	fi
done
exit "$status"
