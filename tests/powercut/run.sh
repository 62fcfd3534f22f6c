#!/usr/bin/env bash
# tests/powercut/run.sh: power-cut testing (docs/powercut.md).
#
#   tests/powercut/run.sh --cuts N [--seed S] [--per-workload K] [--ops OPS]
#                         [--break NAME[,NAME]] [--stop-on-breach]
#   tests/powercut/run.sh --case FILE [--break NAME[,NAME]]
#
# Records ceil(N / K) seeded workloads (powercut-drive: linear, switch and
# thin volumes with an external origin, writes, fsyncs, discards,
# snapshots, extends, switch-map, restarts), each against a daemon that
# logs every write and flush it makes to the raw devices and to pool.db
# (MAPPERFS_WRITELOG).  Then, for K cut points picked in each log, it
# builds the files as a power cut there may leave them (powercut-replay:
# unflushed writes lost, kept, reordered or torn at 512-byte sectors),
# starts the real daemon on a fresh pool directory holding them, runs
# `mapperctl check`, and checks every volume read through the mount
# against the journal of what was acknowledged (powercut-verify).  Every
# daemon runs on a memory budget of one thin map leaf (-o cache_size=2K),
# so leaves are unloaded and loaded again all along; a run of random
# workloads fails if none was.
#
# The last line is "powercut: N cut points, L lost acknowledged writes,
# I inconsistencies"; the exit status is 0 only if L and I are 0.  Every
# breach is printed with its workload, cut position and replay seed, and
# the recording of a workload with a breach is kept (its directory is
# printed) so that the cut can be rebuilt exactly: powercut-replay build
# LOG BASE ROOT OUT POS SEED, with ROOT the pool directory named in LOG.
#
# --case FILE records one workload whose operations after the set-up are
# the script FILE (a regression case, tests/powercut/cases/*.ops: see
# powercut-drive), and checks every cut point from the script's first
# operation to the end of the log, twice: with no unflushed write landed,
# and with all of them landed.
#
# --break passes MAPPERFS_WRITELOG_BREAK to the recording daemon: a
# deliberately broken commit order, which this suite must catch.
# --stop-on-breach ends the run after the first workload with a breach.

cuts=300 seed=1 per_workload=50 ops=150 breaks= case= stop_on_breach=
usage()
{
	echo "usage: $0 --cuts N [--seed S] [--per-workload K] [--ops OPS] [--break NAMES] [--stop-on-breach]" >&2
	echo "       $0 --case FILE [--break NAMES]" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	--case) case=$(realpath "$2"); ops=0; shift 2 ;;
	--cuts) cuts=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--per-workload) per_workload=$2; shift 2 ;;
	--ops) ops=$2; shift 2 ;;
	--break) breaks=$2; shift 2 ;;
	--stop-on-breach) stop_on_breach=1; shift ;;
	*) usage ;;
	esac
done
[[ $cuts =~ ^[0-9]+$ && $seed =~ ^[0-9]+$ && $per_workload =~ ^[1-9][0-9]*$ && $ops =~ ^[0-9]+$ ]] || usage
# 0.1 to 0.3 s a cut, plus the recordings; the harness's watchdog must not
# stop a long run.
: "${MAPPERFS_TEST_TIMEOUT:=$((240 + cuts))}"
export MAPPERFS_TEST_TIMEOUT

. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires jq
for tool in powercut-drive powercut-replay powercut-verify powercut-waitpid; do
	[ -x "$MAPPERFS_BUILD/bin/$tool" ] || fail "no $MAPPERFS_BUILD/bin/$tool (build first)"
done
bin=$MAPPERFS_BUILD/bin

T_DIR=$(realpath "$T_DIR")
POOL=$T_DIR/pool		# every cut is checked in this same directory:
MNT=$T_DIR/mnt			# the raw devices' paths are in pool.db
mkdir -p "$MNT"
cleanup_fn _pc_stop_daemon

# Unmounts MNT and waits for the daemon of POOL, whatever state it is in.
_pc_stop_daemon()
{
	local pid

	pid=$(cat "$POOL/mapperfs.pid" 2>/dev/null) || pid=
	if findmnt -n --mountpoint "$MNT" >/dev/null; then
		fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT"
	fi
	if [ -n "$pid" ] && _t_is_daemon "$pid"; then
		timeout 30 "$bin/powercut-waitpid" "$pid" || { kill -KILL "$pid"; return 1; }
	fi
	return 0
}

lost=0 inconsistent=0 checked=0 kept= unloaded=0

# breach WORKLOAD CUT SEED MESSAGE...: one line on stderr per breach.
breach()
{
	local w=$1 p=$2 s=$3

	shift 3
	printf 'powercut: workload %s, cut %s (replay seed %s): %s\n' "$w" "$p" "$s" "$*" >&2
}

# record W [SCRIPT]: a fresh pool with two raw devices, its copy in
# w$W/base, then the recorded workload.
record()
{
	local w=$1 dir=$T_DIR/w$1
	local -a script=()

	[ -z "${2:-}" ] || script=("$2")
	rm -rf "$POOL" && mkdir -p "$dir/base"
	mapperctl --pool "$POOL" init >/dev/null
	mapperctl --pool "$POOL" device add "$POOL/d0.img" --create 24M --name d0 >/dev/null
	mapperctl --pool "$POOL" device add "$POOL/d1.img" --create 24M --name d1 >/dev/null
	cp --sparse=always "$POOL/pool.db" "$POOL/d0.img" "$POOL/d1.img" "$dir/base/"
	MAPPERFS_WRITELOG_BREAK=$breaks "$bin/powercut-drive" "$bin" "$POOL" "$MNT" "$dir/log" \
		"$dir/origin.img" "$dir/journal" "$((seed * 1000 + w))" "$ops" "${script[@]}" \
		>"$dir/drive.out" 2>&1 || { cat "$dir/drive.out" >&2; fail "workload $w: the driver failed"; }
	n=$(sed -n 's/^powercut-drive: the memory budget unloaded \([0-9]*\) leaves$/\1/p' "$dir/drive.out")
	[ -n "$n" ] || fail "workload $w: the driver did not say what the budget unloaded"
	unloaded=$((unloaded + n))
}

# check_cut W POS SEED [POLICY]: builds the cut, serves it, checks it.
check_cut()
{
	local w=$1 p=$2 s=$3 dir=$T_DIR/w$1 pid counts

	checked=$((checked + 1))
	rm -rf "$POOL" && mkdir -m 700 "$POOL"
	"$bin/powercut-replay" build "$dir/log" "$dir/base" "$POOL" "$POOL" "$p" "$s" ${4:+"$4"} \
		>"$T_DIR/replay.out" || fail "workload $w: cannot build cut $p"
	if ! mapperfs --pool "$POOL" "$MNT" -o cache_size=2K 2>"$T_DIR/start.err"; then
		breach "$w" "$p" "$s" "the daemon does not start: $(grep -v ': warning: ' "$T_DIR/start.err" | head -1)"
		inconsistent=$((inconsistent + 1))
		touch "$dir/failed"
		return
	fi
	pid=$(cat "$POOL/mapperfs.pid")
	if ! mapperctl --pool "$POOL" check >"$T_DIR/check.out" 2>&1; then
		breach "$w" "$p" "$s" "mapperctl check fails: $(grep -v '^thin pool' "$T_DIR/check.out" | head -3 | tr '\n' ' ')"
		inconsistent=$((inconsistent + 1))
		touch "$dir/failed"
	fi
	if ! mapperctl --pool "$POOL" list --json >"$T_DIR/list.json" 2>&1; then
		breach "$w" "$p" "$s" "mapperctl list fails: $(head -1 "$T_DIR/list.json")"
		inconsistent=$((inconsistent + 1))
		touch "$dir/failed"
		_pc_stop_daemon
		return
	fi
	jq -r '.[] | "\(.name) \(.kind) \(.size)"' "$T_DIR/list.json" >"$T_DIR/list.txt"
	mapperctl --pool "$POOL" switch-map sw --dump >"$T_DIR/dump.txt" 2>/dev/null ||
		: >"$T_DIR/dump.txt"
	"$bin/powercut-verify" "$dir/journal" "$p" "$MNT" "$T_DIR/list.txt" "$T_DIR/dump.txt" \
		>"$T_DIR/verify.out" || true
	counts=$(tail -1 "$T_DIR/verify.out")
	[[ $counts =~ ^lost\ ([0-9]+)\ inconsistent\ ([0-9]+)$ ]] ||
		fail "workload $w, cut $p: the verifier said: $(tail -3 "$T_DIR/verify.out")"
	lost=$((lost + BASH_REMATCH[1]))
	inconsistent=$((inconsistent + BASH_REMATCH[2]))
	if [ "${BASH_REMATCH[1]}${BASH_REMATCH[2]}" != 00 ]; then
		touch "$dir/failed"
		head -n -1 "$T_DIR/verify.out" | head -12 | while read -r line; do
			breach "$w" "$p" "$s" "$line"
		done
		breach "$w" "$p" "$s" "$(cat "$T_DIR/replay.out")"
	fi
	fusermount3 -u "$MNT" || fail "workload $w, cut $p: cannot unmount"
	"$bin/powercut-waitpid" "$pid"
}

# done_with W: a workload without breaches goes; one with is kept.
done_with()
{
	local dir=$T_DIR/w$1

	if [ -e "$dir/failed" ]; then
		[ -n "$kept" ] || kept=$(mktemp -d "${TMPDIR:-/tmp}/powercut-failed.XXXXXX")
		mv "$dir" "$kept/"
		log "workload $1 had breaches: its log, base and journal are in $kept/w$1 (pool directory $POOL)"
	elif [ -z "${MAPPERFS_KEEP:-}" ]; then
		rm -rf "$dir"
	fi
}

if [ -n "$case" ]; then
	record 1 "$case"
	first=$(awk '$1 !~ /^create-/ { print $2; exit }' "$T_DIR/w1/journal")
	last=$(($(stat -c %s "$T_DIR/w1/log/log") / 64))
	[ -n "$first" ] || fail "the case $case has no operation"
	for p in $(seq "$first" "$last"); do
		check_cut 1 "$p" 0 nothing
		check_cut 1 "$p" 0 all
	done
	log "case $(basename "$case"): cuts $first..$last of $(wc -l <"$T_DIR/w1/journal") operations"
	done_with 1
	cuts=0
fi

workloads=$(((cuts + per_workload - 1) / per_workload))
for w in $(seq 1 "$workloads"); do
	record "$w"
	n=$((cuts - (w - 1) * per_workload))
	[ "$n" -le "$per_workload" ] || n=$per_workload
	"$bin/powercut-replay" pick "$T_DIR/w$w/log" "$n" "$((seed * 1000 + w))" >"$T_DIR/w$w/cuts"
	while read -r p s; do
		check_cut "$w" "$p" "$s"
	done <"$T_DIR/w$w/cuts"
	log "workload $w: $(($(stat -c %s "$T_DIR/w$w/log/log") / 64)) log records, $(wc -l <"$T_DIR/w$w/journal") operations, $n cuts; so far $lost lost, $inconsistent inconsistent"
	done_with "$w"
	[ -z "$stop_on_breach" ] || [ $((lost + inconsistent)) -eq 0 ] || break
done

# Every daemon keeps one leaf of a thin map loaded (-o cache_size=2K): the
# recordings must have unloaded and loaded leaves again, or they did not
# test it.
log "the recording daemons' memory budget unloaded $unloaded leaves"
[ -n "$case" ] || [ "$unloaded" -gt 0 ] || fail "a budget of one leaf unloaded nothing"
echo "powercut: $checked cut points, $lost lost acknowledged writes, $inconsistent inconsistencies"
[ "$lost" -eq 0 ] && [ "$inconsistent" -eq 0 ]
