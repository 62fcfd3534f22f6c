/*
 * core/target/mirror_log.h: a mirror's write-intent log (md's bitmap,
 * dm-log's disk log), kept in a file of the pool directory.
 *
 * The volume is cut into regions (MIRROR_REGION_SIZE by default, as LVM's
 * raid_region_size).  A region's bit is set on disk before the first
 * write to it reaches any leg, and cleared only when no write to it was
 * seen for a whole period of the cleaner and every leg was flushed after
 * the last one.  So after a crash or kill -9 the legs can differ only in
 * regions whose bit is set, and only those are copied again (resync).
 * While a leg is failed, or catching up after it came back, no bit is
 * cleared: what it missed is what the bits say.
 *
 * The header records each leg's state (in sync, failed, rebuilding from a
 * region on), so a failed leg stays failed across restarts until it is
 * replaced, and a rebuild resumes where its last recorded region was.
 *
 * In memory each region has one byte of state.  The fast path only reads
 * it, and sets MIRROR_SEEN with one store when it is not set yet; every
 * other change is made under the log's lock with atomic operations, so
 * no change is lost to the fast path's.
 *
 * File: a 4 KiB header, then the bits, little-endian bytes, bit i of
 * byte j for region 8j + i.  Each change writes the pages it touched and
 * fdatasyncs the file before it returns.
 */
#ifndef MAPPERFS_MIRROR_LOG_H
#define MAPPERFS_MIRROR_LOG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MIRROR_REGION_SIZE	(2u << 20)	/* bytes, LVM's default */
#define MIRROR_LEGS_MAX		4
#define MIRROR_LOG_HEADER	4096u		/* bytes before the bits */

/* Region state bits. */
enum {
	MIRROR_DIRTY = 1,	/* its bit is set on disk: writes go straight on */
	MIRROR_NOSYNC = 2,	/* the legs may differ: read from the first leg */
	MIRROR_SYNCING = 4,	/* being copied: writes wait */
	MIRROR_SEEN = 8,	/* written since the cleaner last looked */
};

enum mirror_leg_state {
	MIRROR_LEG_IN_SYNC = 0,
	MIRROR_LEG_FAILED = 1,
	MIRROR_LEG_REBUILDING = 2,	/* in sync below its cursor */
	/* back after a failure: the regions written meanwhile copied below its cursor */
	MIRROR_LEG_CATCHING_UP = 3,
};

struct mirror_log {
	int fd;				/* the log file; owned */
	uint32_t region_size;		/* bytes, a power of two */
	unsigned int nr_legs;
	pthread_mutex_t lock;		/* every change but the fast path's SEEN */
	_Atomic uint8_t *_Atomic state;	/* per region; replaced when it grows (RCU) */
	_Atomic uint64_t nr_regions;
	_Atomic uint8_t leg_state[MIRROR_LEGS_MAX];
	_Atomic uint64_t cursor[MIRROR_LEGS_MAX];	/* rebuilding: regions done */
	uint64_t nr_bits;		/* regions the file has bits for */
};

/*
 * Makes a new log in @fd (taken, an empty file) for @nr_legs legs in sync
 * and @nr_regions regions, clean, or with @all_dirty every one to be
 * resynced (legs whose content is not known to agree), written and
 * synced.  0 or -errno.
 */
int mirror_log_create(int fd, unsigned int nr_legs, uint32_t region_size,
		      uint64_t nr_regions, bool all_dirty, struct mirror_log **out);

/*
 * Opens the log in @fd (taken) for a volume of @nr_regions regions of
 * @nr_legs legs.  Regions whose bit is set come back DIRTY|NOSYNC: they
 * are to be resynced.  -EUCLEAN if the file is not such a log (bad
 * magic, checksum, or legs), -errno on I/O.
 */
int mirror_log_open(int fd, unsigned int nr_legs, uint64_t nr_regions,
		    struct mirror_log **out);

void mirror_log_close(struct mirror_log *l);

/*
 * Reads the log in @fd (not taken) without changing it, for check: 0 if
 * its header is whole and for @nr_legs legs, with *dirty the regions
 * whose bit is set; -EUCLEAN if not such a log, -errno on I/O.
 */
int mirror_log_inspect(int fd, unsigned int nr_legs, uint64_t *dirty);

/* The region of byte @off.  Fast path. */
static inline uint64_t mirror_region(const struct mirror_log *l, uint64_t off)
{
	return off / l->region_size;
}

/*
 * Sets the bits of regions [first, last] that are not set yet, on disk
 * and then in memory.  Waits while one of them is SYNCING.  Blocks (one
 * write and one fdatasync when a bit was clear).  0 or -errno.
 */
int mirror_log_mark(struct mirror_log *l, uint64_t first, uint64_t last);

/*
 * The cleaner's pass: regions DIRTY and not SEEN since the last pass
 * become clean in memory (returned in @cleared, malloc'ed, *nr of them)
 * and SEEN is reset on the rest.  The caller waits for a grace period,
 * flushes the legs, then calls mirror_log_commit_clean.  Nothing is
 * cleared while a leg is failed or catching up.  0 or -ENOMEM.
 */
int mirror_log_sweep(struct mirror_log *l, uint64_t **cleared, size_t *nr);

/* Writes the bits of @cleared (clear unless marked again since).  0 or -errno. */
int mirror_log_commit_clean(struct mirror_log *l, const uint64_t *cleared, size_t nr);

/* Records leg @leg's state and cursor in the header, synced.  0 or -errno. */
int mirror_log_set_leg(struct mirror_log *l, unsigned int leg,
		       enum mirror_leg_state state, uint64_t cursor);

/*
 * The same, only if leg @leg is still in state @from (a rebuild's
 * progress, which a failure of the leg meanwhile must win over).
 * -ESTALE if it is not.
 */
int mirror_log_advance(struct mirror_log *l, unsigned int leg, enum mirror_leg_state from,
		       enum mirror_leg_state to, uint64_t cursor);

/*
 * Grows to @nr_regions regions; those from @resync_from on (the one the
 * old end fell in, if it was partial, and the new ones) are to be
 * resynced (DIRTY|NOSYNC, bits written): what the legs hold past the old
 * end was never written through the mirror.  Admin path.  0 or -errno.
 */
int mirror_log_grow(struct mirror_log *l, uint64_t nr_regions, uint64_t resync_from);

/* Regions with a bit set, for status.  O(regions). */
uint64_t mirror_log_dirty(const struct mirror_log *l);

/*
 * Region states change under the lock with these, waking waiters: the
 * resync sets SYNCING, copies, then drops NOSYNC|SYNCING.
 */
void mirror_log_set_bits(struct mirror_log *l, uint64_t region, uint8_t bits);
void mirror_log_clear_bits(struct mirror_log *l, uint64_t region, uint8_t bits);

#endif
