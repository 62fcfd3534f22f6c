#!/usr/bin/env bash
# tests/fuzz/run.sh: builds the libFuzzer harnesses (build-fuzz: clang,
# -DMAPPERFS_FUZZ=ON, ASan and UBSan) and fuzzes each of them in turn.
#
#   tests/fuzz/run.sh [--time SECONDS] [--runs N] [--jobs N] [--work DIR]
#                     [--no-build] [HARNESS...] [-- LIBFUZZER-FLAGS...]
#
# --time   seconds per harness (default 30, what CI gives each)
# --runs   stop a harness after N executions instead (the time still bounds it)
# --jobs   harnesses run side by side (default 1)
# --work   keep each harness's new corpus, crash inputs and log in
#          DIR/HARNESS/ (default: a temporary directory, removed when all
#          passed); a second run with the same DIR resumes from that corpus
# HARNESS  e.g. size pool_open (default: every bin/fuzz_* of the build)
#
# A harness starts from its seeds (tests/fuzz/corpus/NAME) and regression
# inputs (tests/fuzz/regress/NAME); new inputs go to the work directory,
# never into the tree.  Exits 1 if any harness crashed, leaked, timed out,
# ran out of memory or hit a sanitizer report or a broken contract; the
# input that did it is in DIR/HARNESS/ and named in the summary.
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
. "$src/tests/lib/deps.sh"

time_s=30 runs= jobs=1 work= build=1 harnesses=() extra=()
while [ $# -gt 0 ]; do
	case $1 in
	--time) time_s=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--jobs) jobs=$2; shift 2 ;;
	--work) work=$2; shift 2 ;;
	--no-build) build=0; shift ;;
	--) shift; extra=("$@"); break ;;
	-*) echo "tests/fuzz/run.sh: unknown option '$1'" >&2; exit 2 ;;
	*) harnesses+=("$1"); shift ;;
	esac
done

bin=$src/build-fuzz/bin
if [ "$build" -eq 1 ]; then
	deps_build build-fuzz -DCMAKE_C_COMPILER=clang -DMAPPERFS_FUZZ=ON >/dev/null
fi
if [ "${#harnesses[@]}" -eq 0 ]; then
	for f in "$bin"/fuzz_*; do harnesses+=("${f##*/fuzz_}"); done
fi

keep=1
if [ -z "$work" ]; then
	work=$(mktemp -d "${TMPDIR:-/tmp}/mapperfs-fuzz.XXXXXX")
	keep=0
fi
work=$(realpath "$work")

# fuzz NAME: runs one harness; leaves its log and exit status in $work/NAME/.
fuzz()
{
	local name=$1 dir=$work/$1 d st=0
	local -a inputs=("$dir/corpus") flags

	mkdir -p "$dir/corpus"
	for d in corpus regress; do
		[ -d "$src/tests/fuzz/$d/$name" ] && inputs+=("$src/tests/fuzz/$d/$name")
	done
	flags=(-max_total_time="$time_s" -timeout=25 -rss_limit_mb=2048
	       -print_final_stats=1 -artifact_prefix="$dir/")
	[ -n "$runs" ] && flags+=(-runs="$runs")
	"$bin/fuzz_$name" "${flags[@]}" "${extra[@]}" "${inputs[@]}" >"$dir/log" 2>&1 || st=$?
	echo "$st" >"$dir/status"
}

# summary NAME: one line of figures from the harness's final report, and
# for a failure what it hit and how to reproduce it.  Returns its status.
summary()
{
	local name=$1 dir=$work/$1 st last execs rate crash

	st=$(cat "$dir/status")
	last=$(grep -E '^#[0-9]+' "$dir/log" | tail -n 1 || true)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log")
	printf '%-14s %-6s execs %-10s exec/s %-7s %s\n' "$name" \
		"$([ "$st" -eq 0 ] && echo ok || echo FAILED)" "${execs:-?}" "${rate:-?}" \
		"$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*' <<<"$last" || true)"
	[ "$st" -eq 0 ] && return 0
	grep -E 'ERROR|runtime error|contract broken' "$dir/log" | head -n 5 | sed 's/^/    /'
	crash=$(sed -n 's/.*Test unit written to //p' "$dir/log" | tail -n 1)
	[ -n "$crash" ] && echo "    reproduce: $bin/fuzz_$name $crash"
	return 1
}

for name in "${harnesses[@]}"; do
	[ -x "$bin/fuzz_$name" ] || { echo "tests/fuzz/run.sh: no harness '$name' in $bin" >&2; exit 2; }
done
for name in "${harnesses[@]}"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
	echo "== fuzz_$name: ${time_s} s${runs:+ or $runs runs}"
	fuzz "$name" &
done
wait

status=0
echo "== fuzz results (logs in $work)"
for name in "${harnesses[@]}"; do
	summary "$name" || status=1
done
if [ "$status" -eq 0 ] && [ "$keep" -eq 0 ]; then
	rm -rf "$work"
fi
exit "$status"
