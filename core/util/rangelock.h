/*
 * core/util/rangelock.h: a lock on byte ranges of one file, nearly free
 * for those who only share it.
 *
 * A read-modify-write must hold the bytes it rewrites alone: a write that
 * lands on them between its read and its write would be undone, and so
 * would the bytes of another read-modify-write of the same range.  Every
 * other write shares the lock.  Read-modify-writes are rare (io/direct.c
 * does them for pieces smaller than a sector), shared writes are every
 * write on the hot path, so the two are not treated alike:
 *
 *  - While no one holds or waits for a range alone, sharing is one atomic
 *    increment and one load of another counter (rangelock_try_share), and
 *    giving it back one decrement.  It names no range and never blocks.
 *  - One who wants a range alone announces it on that other counter and
 *    then waits until every such nameless sharer has gone, as a file
 *    system drains its direct I/O before an unaligned one.  Meanwhile, and
 *    as long as any range is held or wanted alone, sharers name their
 *    range under a mutex (rangelock_share) and wait only if it overlaps.
 *
 * Ranges queue in the order asked, and each waits only for overlapping
 * ones asked before it (or, alone, for the nameless sharers), so none
 * starves and none deadlocks as long as no one asks for a range while
 * holding another: what a holder waits for is I/O, never a lock.
 *
 * The two counters make a Dekker pair (each side writes its own, then
 * reads the other's, all sequentially consistent): a sharer that saw no
 * one alone is seen by the one alone, who waits for it.
 */
#ifndef MAPPERFS_RANGELOCK_H
#define MAPPERFS_RANGELOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct rangelock_range;

struct rangelock {
	atomic_uint shared;		/* nameless sharers (and those trying) */
	atomic_uint alone;		/* ranges held or wanted alone */
	pthread_mutex_t mutex;		/* guards queue */
	pthread_cond_t changed;		/* a range or the last nameless sharer left */
	struct rangelock_range *head, *tail;	/* named ranges, oldest first */
};

/* A range held or wanted: the caller's, on its stack until unlocked. */
struct rangelock_range {
	uint64_t off, end;		/* bytes [off, end) */
	bool alone;
	bool nameless;			/* shared with no range: rangelock_try_share */
	struct rangelock_range *prev, *next;
};

int rangelock_init(struct rangelock *l);	/* 0 or -errno */
void rangelock_destroy(struct rangelock *l);	/* nothing may be held */

/*
 * Shares the whole file, nameless, if no range is held or wanted alone;
 * false otherwise (then rangelock_share).  Never blocks: one increment,
 * one load.  Undone by rangelock_unshare().
 */
bool rangelock_try_share(struct rangelock *l);
void rangelock_unshare(struct rangelock *l);

/*
 * Shares [off, off + len): nameless if it can, else named once the ranges
 * held or wanted alone before it that overlap it are gone.  Blocks only
 * then.  Undone by rangelock_unlock(@r).
 */
void rangelock_share(struct rangelock *l, struct rangelock_range *r,
		     uint64_t off, uint64_t len);

/*
 * Holds [off, off + len) alone, once the nameless sharers and the ranges
 * asked before it that overlap it are gone.  Blocks for as long as their
 * I/O takes.  Undone by rangelock_unlock(@r).
 */
void rangelock_lock(struct rangelock *l, struct rangelock_range *r,
		    uint64_t off, uint64_t len);

void rangelock_unlock(struct rangelock *l, struct rangelock_range *r);

#endif
