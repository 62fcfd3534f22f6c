# tests/lib/faults.sh: the fault-test kit, sourced after functions.sh by
# tests that stop daemons, break devices or hold locks on purpose.
#
# Every helper waits on a real event (a lock coming free, a fifo, a
# socket) and registers its undo step with cleanup_fn, so a test that
# fails midway leaves no mount, process or lock behind.  functions.sh
# already has wait_log (a line in the daemon's log) and hold_db_lock.

# wait_unlocked POOL SECONDS: waits until no process holds POOL's lock
# (the daemon holds it until its very last step, so this is when it is
# done), for at most SECONDS.  Fails otherwise.  A process that exited
# but was not reaped yet (its parent is gone) still answers `kill -0`;
# the kernel drops its locks at exit, which is what this waits for.
wait_unlocked()
{
	flock -w "$2" "$1/lock" true || fail "$1 is still locked after ${2}s"
}

# pool_locked POOL: true while a process holds POOL's lock.
pool_locked()
{
	! flock -n "$1/lock" true
}
