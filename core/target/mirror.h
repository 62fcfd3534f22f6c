/*
 * core/target/mirror.h: the mirror target (dm-raid1, LVM's raid1): two to
 * four legs holding the same bytes.  A leg is any target that maps
 * everything at once (map never defers; flush, discard and seek are
 * what the mirror calls besides): a mirrored volume's legs are linear
 * targets on devices of their own, a move's (pool_move.c) are the
 * volume's table as it is and as it will be, linear or striped.
 *
 * Writes go to every leg that is not failed, on the fast path: map()
 * returns one copy of the segments per leg, and the engine submits them
 * together.  A write to a region whose bit is not set in the write-intent
 * log (mirror_log.h) is deferred: the bit is set on disk first.  Reads go
 * to one in-sync leg, spread by offset; a region that may differ between
 * legs (after a crash, until resynced) is read from the first in-sync leg.
 *
 * A leg that fails a request (EIO) is marked failed in the log's header
 * and left alone: the request is done again leg by leg (write_failed,
 * read_failed) and succeeds if one leg has it.  The last in-sync leg is
 * never marked failed: its errors reach the caller, as md does.
 *
 * A thread per mirror does the background work, in this order, each
 * pass: resyncs the regions the log came back with (NOSYNC), rebuilds
 * legs being replaced (or, for a leg taken back, only the regions written
 * while it was away) (from their cursor on, the cursor recorded after
 * each region, one small synced write per 2 MiB copied, so a rebuild
 * resumes where it was), both at most rate bytes per second, then
 * clears the bits of regions no write touched for a whole period
 * (mirror_log_sweep) after a grace period and a flush of every leg.  A
 * region being copied is SYNCING: writes to it wait in write_deferred
 * (the copy is short: one region), reads go on.
 */
#ifndef MAPPERFS_MIRROR_H
#define MAPPERFS_MIRROR_H

#include <stdbool.h>
#include <stdint.h>

#include "mirror_log.h"
#include "target.h"

#define MIRROR_STALL_LEN	96

struct mirror_status {
	unsigned int nr_legs;
	uint8_t leg_state[MIRROR_LEGS_MAX];	/* enum mirror_leg_state */
	uint64_t sync_done, sync_total;		/* regions: Cpy%Sync */
	uint64_t dirty;				/* regions whose bit is set */
	uint64_t resynced;			/* regions copied since start */
	char why[MIRROR_LEGS_MAX][64];		/* a failed leg's reason */
	char stall[MIRROR_STALL_LEN];		/* why a rebuild waits (its source unreadable), or "" */
};

/*
 * A mirror of @size bytes over @nr_legs legs (targets that never defer, taken; a
 * NULL leg is one whose devices are missing: it is marked failed), with
 * @log (taken).  @name names it in the log's messages; @leg_names each
 * leg.  @rate: rebuild bytes per second, 0 for no limit.  Its thread
 * waits for mirror_start.  0 or -errno; on failure everything given is
 * released.
 */
int mirror_create(const char *name, uint64_t size, struct target **legs,
		  const char *const *leg_names, unsigned int nr_legs,
		  struct mirror_log *log, uint64_t rate, struct target **out);

/*
 * Starts the thread that resyncs, rebuilds and clears bits: in the daemon,
 * not in a command that opened the pool for a moment.  Idempotent.  0 or
 * -errno.
 */
int mirror_start(struct target *t);

/* The background copy's rate from now on, bytes/s (0: no limit). */
void mirror_set_rate(struct target *t, uint64_t bytes_per_s);

/* Whether @t is a mirror. */
bool mirror_is(const struct target *t);

void mirror_status(struct target *t, struct mirror_status *out);

/*
 * Leg @leg's target (linear, for a mirrored volume's extend to publish a
 * longer table into); NULL for a missing leg.
 */
struct target *mirror_leg(struct target *t, unsigned int leg);

/* The volume grew to @size bytes (every leg's table already covers it). */
int mirror_grow(struct target *t, uint64_t size);

/*
 * Marks leg @leg failed for @why (recorded in the log before it returns),
 * unless it is the last in-sync leg.  0, -EBUSY for the last one, -errno.
 */
int mirror_fail_leg(struct target *t, unsigned int leg, const char *why);
/* The same for a leg taken out on purpose (a replace): logged as news, not an error. */
int mirror_retire_leg(struct target *t, unsigned int leg, const char *why);
/*
 * Gives leg @leg, whose devices were missing when the mirror was made, its
 * target (taken) now that they are open: it stays failed until
 * mirror_readd_leg.  Blocks for a grace period.  0, or -EBUSY (it has
 * one; @leg_target destroyed).
 */
int mirror_attach_leg(struct target *t, unsigned int leg, struct target *leg_target);

/*
 * Takes failed leg @leg back (its device answers again: lvchange
 * --refresh): it catches up in the background, copying only the regions
 * whose bits were set while it was away, and serves reads once in sync.
 * -EALREADY if it is not failed, -ENODEV if its device is missing.
 */
int mirror_readd_leg(struct target *t, unsigned int leg);

/*
 * Replaces leg @leg by @leg_target (taken) named @name: the leg is marked
 * failed, the new one published and rebuilt from the first region on by
 * the mirror's thread.  Blocks for a grace period.  0 or -errno.
 */
int mirror_replace_leg(struct target *t, unsigned int leg, struct target *leg_target,
		       const char *name);

#endif
