#!/usr/bin/env bash
# t092-io-uring-serves-where-the-kernel-offers-it.sh: with FUSE over
# io_uring switched on, the daemon's default transport is io_uring, says so
# in its log, and its per-CPU ring threads (not the /dev/fuse worker) serve
# the requests; -o transport=dev-fuse serves over /dev/fuse with no ring
# thread at all; a bad transport name is refused in one line.  With spin
# on (the default), the ring threads poll while requests come and stop
# using the CPU as soon as they stop coming.  A ring thread takes eight
# entries when the raw devices are memory (tmpfs), one when they are on a
# disk file system, or -o batch=N.
. "$(dirname "$0")/../lib/functions.sh"
requires_mapperfs
requires dd jq

param=/sys/module/fuse/parameters/enable_uring
make_pool
add_file_device d0 16M >/dev/null
mapperctl create linear v --size 8M

expect_fail -s 1 -m 'transport=' mapperfs --pool "$POOL" "$T_DIR" -o transport=bogus

# switches THREAD_NAME_PREFIX: voluntary context switches of the daemon's
# threads whose name starts with the prefix, summed.
switches()
{
	local pid t sum=0 n

	pid=$(daemon_pid)
	for t in /proc/"$pid"/task/*; do
		case $(cat "$t/comm") in "$1"*) ;; *) continue ;; esac
		n=$(awk '/^voluntary_ctxt_switches/ { print $2 }' "$t/status")
		sum=$((sum + n))
	done
	echo "$sum"
}

nr_threads()
{
	grep -l "^$1" /proc/"$(daemon_pid)"/task/*/comm 2>/dev/null | wc -l
}

MAPPERFS_TRANSPORT=dev-fuse start_daemon "$POOL" "$T_DIR/mnt" -o threads=1
grep -q "over /dev/fuse with 1 worker (not io_uring: -o transport=dev-fuse)" "$POOL/mapperfs.log" ||
	fail "the log does not say /dev/fuse serves: $(grep serving "$POOL/mapperfs.log")"
[ "$(nr_threads uring-)" -eq 0 ] || fail "ring threads run under -o transport=dev-fuse"
dd if="$MNT/v" of=/dev/null bs=4k count=16 iflag=direct status=none
stop_daemon

[ "$(cat "$param" 2>/dev/null)" = Y ] ||
	skip "FUSE over io_uring is off here ($param; tests/run.sh switches it on as root)"
: >"$POOL/mapperfs.log"
# spin=0: every request wakes a ring thread, which the switches count.
MAPPERFS_TRANSPORT='' start_daemon "$POOL" "$T_DIR/mnt" -o spin=0
grep -Eq "over io_uring: [0-9]+ queues? \(one per CPU\) x [0-9]+ threads? x [0-9]+ entr(y|ies), spin 0 us$" \
	"$POOL/mapperfs.log" ||
	fail "the log does not say io_uring serves: $(grep serving "$POOL/mapperfs.log")"
! grep -Eq "serving .*[^0-9]1 (queues|threads|entries)" "$POOL/mapperfs.log" ||
	fail "the log counts one thing in the plural: $(grep serving "$POOL/mapperfs.log")"
queues=$(sed -n 's/.* over io_uring: \([0-9]*\) queues\{0,1\} .*/\1/p' "$POOL/mapperfs.log")
[ "$queues" -eq "$(grep -c ^processor /proc/cpuinfo)" ] ||
	log "note: $queues queues for $(grep -c ^processor /proc/cpuinfo) online CPUs (queues follow the possible CPUs)"
[ "$(nr_threads uring-)" -ge "$queues" ] || fail "fewer ring threads than queues"
fs=$(stat -f -c %T "$POOL")
case $fs in
tmpfs) want='x 8 entries' ;;
ext2/ext3 | xfs | btrfs) want='x 1 entry' ;;
*)
	want=''
	log "note: raw devices on $fs: the batch it gets is not checked"
	;;
esac
[ -z "$want" ] || grep -q "over io_uring: .* $want, spin" "$POOL/mapperfs.log" ||
	fail "raw devices on $fs, but not '$want': $(grep serving "$POOL/mapperfs.log")"

# At queue depth 1 every request wakes a ring thread; none reaches /dev/fuse.
ring_before=$(switches uring-) dev_before=$(switches fuse-dev)
dd if="$MNT/v" of=/dev/null bs=4k count=200 iflag=direct status=none
ring_after=$(switches uring-) dev_after=$(switches fuse-dev)
[ $((ring_after - ring_before)) -ge 200 ] ||
	fail "200 reads woke the ring threads $((ring_after - ring_before)) times"
[ $((dev_after - dev_before)) -lt 10 ] ||
	fail "200 reads woke the /dev/fuse worker $((dev_after - dev_before)) times"
log "200 reads: ring threads woke $((ring_after - ring_before)) times, the /dev/fuse worker $((dev_after - dev_before))"
[ "$(mapperctl status --json | json_get .pool.transport)" = io_uring ] ||
	fail "status does not say io_uring serves the mount"

stop_daemon

# ring_ticks: CPU time (clock ticks) the daemon's ring threads used so far.
ring_ticks()
{
	local pid t sum=0

	pid=$(daemon_pid)
	for t in /proc/"$pid"/task/*; do
		case $(cat "$t/comm") in uring-*) ;; *) continue ;; esac
		# utime and stime: fields 14 and 15, after the "(comm)" field
		sum=$((sum + $(sed 's/.*) //' "$t/stat" | awk '{ print $12 + $13 }')))
	done
	echo "$sum"
}

# The default spin: reads are still served by the rings, and once they
# stop, the threads go to sleep: over a quiet second they use (next to)
# no CPU.  This second is a measurement, not a wait for anything.
: >"$POOL/mapperfs.log"
MAPPERFS_TRANSPORT='' start_daemon
grep -q "over io_uring: .*, spin 50 us$" "$POOL/mapperfs.log" ||
	fail "the log does not give the default spin: $(grep serving "$POOL/mapperfs.log")"
dev_before=$(switches fuse-dev)
dd if="$MNT/v" of=/dev/null bs=4k count=2000 iflag=direct status=none
[ $(($(switches fuse-dev) - dev_before)) -lt 10 ] ||
	fail "with spin, reads reached the /dev/fuse worker"
quiet_before=$(ring_ticks)
sleep 1
quiet=$(($(ring_ticks) - quiet_before))
[ "$quiet" -le 5 ] || fail "the ring threads used $quiet ticks of CPU in a quiet second"
log "spin: 2000 reads served by the rings; $quiet ticks of ring-thread CPU in the quiet second after"
stop_daemon

: >"$POOL/mapperfs.log"
MAPPERFS_TRANSPORT='' start_daemon "$POOL" "$T_DIR/mnt" -o batch=3,threads=12
grep -q "over io_uring: [0-9]* queues\{0,1\} (one per CPU) x 2 threads x 3 entries, spin" \
	"$POOL/mapperfs.log" ||
	fail "-o batch=3,threads=12 (6 per CPU) is not 2 threads of 3: $(grep serving "$POOL/mapperfs.log")"
head -c 8M /dev/urandom >"$T_DIR/data"
dd if="$T_DIR/data" of="$MNT/v" bs=64k oflag=direct conv=notrunc status=none
cmp "$T_DIR/data" "$MNT/v" || fail "8 MiB written through 3-entry ring threads read back wrong"
