# tests/lib/deps.sh: the one place that knows what mapperfs needs from the
# machine.  Sourced (not run) by tests/run.sh, tools/demo.sh and
# bench/run.sh, so a fresh Debian 12 box gets the same packages, kernel
# modules and build whichever of them is run first.
#
# Functions: deps_install, deps_kernel, deps_build BUILD_DIR [CMAKE_ARGS...].
# They assume root for apt-get and modprobe and say so when it is missing.

MAPPERFS_PACKAGES=(
	build-essential cmake pkg-config
	libfuse3-dev fuse3 liburing-dev liburcu-dev libsqlite3-dev sqlite3 check
	fio e2fsprogs xfsprogs util-linux jq kmod python3
	# the ASan/UBSan build and the libFuzzer harnesses (tests/fuzz):
	# clang, its sanitizer and libFuzzer runtimes, llvm-symbolizer
	clang libclang-rt-14-dev llvm
)

# Installs whatever of MAPPERFS_PACKAGES is missing; runs `apt-get update`
# once, and only when something is missing, so a ready machine is not
# touched (and needs no network).
deps_install()
{
	local p missing=()

	for p in "${MAPPERFS_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed' || missing+=("$p")
	done
	[ "${#missing[@]}" -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "deps: missing packages ${missing[*]}, and installing them needs root" >&2
		return 1
	fi
	echo "deps: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# Loads the loop and fuse modules if they are modules and absent.  Failure
# is not fatal here: they may be built in, or we may be in a container
# that already has /dev/fuse; the tests skip (77) on what is really absent.
deps_kernel()
{
	local m

	for m in loop fuse; do
		modprobe "$m" 2>/dev/null || true
	done
	[ -c /dev/fuse ] || echo "deps: warning: /dev/fuse is missing; mount tests will be skipped" >&2
	[ -e /dev/loop-control ] || echo "deps: warning: /dev/loop-control is missing; loop tests will be skipped" >&2
	return 0
}

# deps_build BUILD_DIR [EXTRA_CMAKE_ARGS...]: configures and builds the tree
# this file belongs to into BUILD_DIR (relative to the source root).
deps_build()
{
	local src dir=$1

	shift
	src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	case $dir in /*) ;; *) dir=$src/$dir ;; esac
	cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
	cmake --build "$dir" -j "$(nproc)"
}
