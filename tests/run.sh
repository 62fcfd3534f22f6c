#!/usr/bin/env bash
# tests/run.sh: everything CI does, runnable by hand on a fresh Debian 12
# machine as root: install what is missing; build three ways (normal,
# ThreadSanitizer, AddressSanitizer + UBSan); run the unit tests on each,
# the shell tests once, against the ASan build (the daemon and mapperctl
# under ASan and UBSan: every report fails the run, even from a command a
# test expected to fail), but the power-cut suite against the plain build
# (it checks what a crash leaves, replaying hundreds of cuts: ASan made it
# a third of the whole run, 14 of 37 minutes, and finds nothing there
# that the other shell tests do not); then fuzz every parser of outside input for
# FUZZ_SECONDS (default 30) each (tests/fuzz/run.sh).  Shell tests that
# mount run twice: over the default transport (io_uring, switched on here
# where the kernel has it) and over /dev/fuse (NAME@dev-fuse).  Exits
# non-zero if any test failed; skipped tests (exit 77: no /dev/fuse, no
# loop devices) do not fail it.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/tests/lib/deps.sh"

deps_install
deps_kernel
deps_fuse_uring		# shell tests then run over io_uring, and again over /dev/fuse

deps_build build
deps_build build-tsan -DMAPPERFS_TSAN=ON
# clang: gcc's UBSan ignores log_path when linked with ASan, and its
# reports must land in files (below).
deps_build build-asan -DCMAKE_C_COMPILER=clang -DMAPPERFS_ASAN=ON

status=0

# TSan maps its shadow memory at fixed addresses; on kernels with high
# mmap randomisation it aborts with "unexpected memory mapping".  Running
# without ASLR sidesteps that and changes nothing else for the tests.
tsan_run=()
if command -v setarch >/dev/null && setarch "$(uname -m)" -R true 2>/dev/null; then
	tsan_run=(setarch "$(uname -m)" -R)
fi
echo "== unit tests under ThreadSanitizer (build-tsan)"
"${tsan_run[@]}" ctest --test-dir "$src/build-tsan" -L unit --output-on-failure \
	-j "$(nproc)" || status=1

echo "== unit tests (build)"
ctest --test-dir "$src/build" -L unit --output-on-failure -j "$(nproc)" || status=1

# Every process of the suite (tests, daemons, mapperctl) writes its
# sanitizer reports to a file here rather than to stderr: a daemon's exit
# status is nobody's to read, and a test that expects mapperctl to fail
# would pass over a report.  Any file here fails the run.
reports=$(mktemp -d "${TMPDIR:-/tmp}/mapperfs-asan.XXXXXX")
echo "== all tests under AddressSanitizer and UBSan (build-asan)"
ASAN_OPTIONS=log_path=$reports/asan:detect_leaks=1 \
LSAN_OPTIONS=suppressions=$src/tests/lsan.supp:print_suppressions=0 \
UBSAN_OPTIONS=log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=1 \
	ctest --test-dir "$src/build-asan" -LE powercut --output-on-failure || status=1
if [ -n "$(ls -A "$reports")" ]; then
	echo "tests/run.sh: sanitizer reports:" >&2
	for f in "$reports"/*; do echo "--- $f" >&2; cat "$f" >&2; done
	status=1
fi
rm -rf "$reports"

echo "== the power-cut suite (build)"
ctest --test-dir "$src/build" -L powercut --output-on-failure || status=1

# One harness per CPU: each is a single busy thread, and side by side they
# take half the wall time for the same executions each.
echo "== fuzzing (build-fuzz, ${FUZZ_SECONDS:-30} s per harness, $(nproc) at a time)"
"$src/tests/fuzz/run.sh" --time "${FUZZ_SECONDS:-30}" --jobs "$(nproc)" || status=1

if [ "$status" -ne 0 ]; then
	echo "tests/run.sh: FAILED" >&2
else
	echo "tests/run.sh: all tests passed"
fi
exit "$status"
