#!/usr/bin/env bash
# tests/run.sh: everything CI does, runnable by hand on a fresh Debian 12
# machine as root: install what is missing, build, build again with
# ThreadSanitizer and run the unit tests there, then run every test (unit
# and shell) against the normal build.  Shell tests that mount run twice:
# over the default transport (io_uring, switched on here where the kernel
# has it) and over /dev/fuse (NAME@dev-fuse).  Exits non-zero if any test failed;
# skipped tests (exit 77: no /dev/fuse, no loop devices) do not fail it.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/tests/lib/deps.sh"

deps_install
deps_kernel
deps_fuse_uring		# shell tests then run over io_uring, and again over /dev/fuse

deps_build build
deps_build build-tsan -DMAPPERFS_TSAN=ON

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

echo "== all tests (build)"
ctest --test-dir "$src/build" --output-on-failure || status=1

if [ "$status" -ne 0 ]; then
	echo "tests/run.sh: FAILED" >&2
else
	echo "tests/run.sh: all tests passed"
fi
exit "$status"
