# tests/lib/deps.sh: the one place that knows what mapperfs needs from the
# machine.  Sourced (not run) by tests/run.sh, tools/demo.sh and
# bench/run.sh, so a fresh Debian 12 box gets the same packages, kernel
# modules and build whichever of them is run first.
#
# Functions: deps_install [PACKAGES...], deps_kernel, deps_fuse_uring,
# deps_build BUILD_DIR [CMAKE_ARGS...].
# They assume root for apt-get and modprobe and say so when it is missing.

MAPPERFS_PACKAGES=(
	build-essential cmake pkg-config
	libfuse3-dev fuse3 liburing-dev liburcu-dev libsqlite3-dev sqlite3 check
	libblkid-dev libnbd-dev libexpat1-dev zlib1g-dev thin-provisioning-tools libsystemd-dev scdoc
	bash-completion man-db systemd qemu-utils
	fio e2fsprogs xfsprogs util-linux jq kmod python3
	nbdkit libnbd-bin iproute2
	# the ASan/UBSan build and the libFuzzer harnesses (tests/fuzz):
	# clang, its sanitizer and libFuzzer runtimes, llvm-symbolizer
	clang libclang-rt-14-dev llvm
)

# What the benches need besides: gnuplot draws their charts;
# qemu-system-common carries qemu-storage-daemon, whose FUSE export
# bench/run.sh and bench/fresh.sh measure for reference (2 MiB, no QEMU
# system emulator).
MAPPERFS_BENCH_PACKAGES=(gnuplot-nox qemu-system-common time)

# deps_install [MORE_PACKAGES...]: installs whatever of MAPPERFS_PACKAGES
# (and MORE_PACKAGES) is missing; runs `apt-get update` once, and only when
# something is missing, so a ready machine is not touched (and needs no
# network).
deps_install()
{
	local p missing=()

	for p in "${MAPPERFS_PACKAGES[@]}" "$@"; do
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

# Switches FUSE over io_uring on (kernel 6.14+ built with it; the fuse
# module's enable_uring parameter reads N after boot), so that mapperfs's
# default transport is io_uring, and says which transport mounts will get.
# Not fatal: without it mapperfs serves over /dev/fuse.
deps_fuse_uring()
{
	local p=/sys/module/fuse/parameters/enable_uring

	if [ ! -e "$p" ]; then
		echo "deps: this kernel has no FUSE over io_uring ($p): mapperfs will serve over /dev/fuse" >&2
	elif [ "$(cat "$p")" = Y ]; then
		echo "deps: FUSE over io_uring is on ($p = Y): mapperfs will serve over io_uring" >&2
	elif { echo Y >"$p"; } 2>/dev/null; then
		echo "deps: switched FUSE over io_uring on (echo Y > $p): mapperfs will serve over io_uring" >&2
	else
		echo "deps: cannot switch FUSE over io_uring on ($p, needs root): mapperfs will serve over /dev/fuse" >&2
	fi
	return 0
}

# deps_build BUILD_DIR [EXTRA_CMAKE_ARGS...]: configures and builds the tree
# this file belongs to into BUILD_DIR (relative to the source root), with
# warnings as errors (MAPPERFS_WERROR): the project's own builds, CI's and
# tests/run.sh's, fail on a warning; a packager's need not.
deps_build()
{
	local src dir=$1

	shift
	src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	case $dir in /*) ;; *) dir=$src/$dir ;; esac
	cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMAPPERFS_WERROR=ON "$@"
	cmake --build "$dir" -j "$(nproc)"
}
