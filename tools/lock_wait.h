/*
 * tools/lock_wait.h: taking a pool's lock when its holder may be about to
 * let go, for both hosts.
 *
 * `fusermount3 -u M && mapperfs P M` and `fusermount3 -u M && mapperctl
 * ...` must work: the daemon that was just unmounted holds POOL/lock for
 * a moment after its mount is gone (it closes the store and the devices),
 * and its control socket goes first.  An offline mapperctl holds the lock
 * for its one command.  So both hosts retry a busy lock with back-off for
 * LOCK_WAIT_MS, and say once, after LOCK_NOTE_MS, whom they wait for.  A
 * daemon that answers on the control socket serves the pool: mapperctl
 * sends it the command; mapperfs gives up once one has answered for
 * @live_ms (a second daemon on a served pool is refused).
 */
#ifndef MAPPERFS_LOCK_WAIT_H
#define MAPPERFS_LOCK_WAIT_H

#include <stddef.h>

#define LOCK_WAIT_MS	10000
#define LOCK_NOTE_MS	1000

struct lock_wait {
	const char *who;		/* written in the lock: "mapperfs", "'list'" */
	unsigned int live_ms;		/* a daemon answered this long: give up */
	/* Called once, after LOCK_NOTE_MS, with the holder ("mapperfs (pid 12)"). */
	void (*waiting)(void *arg, const char *holder);
	void *arg;
	char holder[160];		/* out: who held it, on -EBUSY and -EISCONN */
};

/*
 * Takes DIR/lock as pool_lock() does, waiting as above.  Blocks up to
 * LOCK_WAIT_MS.  Returns the descriptor, -EBUSY (still held: w->holder
 * names the holder), -EISCONN (a daemon answers on the control socket),
 * or the -errno of opening it.
 */
int lock_wait(const char *dir, struct lock_wait *w);

#endif
