/*
 * core/thin_pool.h: a thin pool: a data area split into blocks, the
 * volumes that map into it, their metadata and its commits.
 *
 * Lifecycle: thin_pool_open() (no volumes yet), thin_create(..., load)
 * for every thin volume of the pool (thin.h), thin_pool_start() (derives
 * the reference counts, starts the commit worker), ... I/O ...,
 * thin_pool_stop() (final commit; the volumes can then be destroyed),
 * thin_pool_close() after the last volume was destroyed.
 */
#ifndef MAPPERFS_THIN_POOL_H
#define MAPPERFS_THIN_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "thin_meta.h"

struct device;
struct thin_pool;

#define THIN_BLOCK_MIN		(64u << 10)	/* bytes */
#define THIN_BLOCK_MAX		(1u << 30)	/* bytes */
#define THIN_COMMIT_PERIOD_MS	1000

/* One piece of the data area, in order.  Its blocks start at dev_off. */
struct thin_area {
	struct device *dev;
	uint64_t dev_off;		/* bytes */
	uint64_t len;			/* bytes; a tail short of a block is unused */
};

enum thin_full_policy {
	THIN_FULL_ERROR,		/* ENOSPC at once */
	THIN_FULL_WAIT,			/* wait up to wait_s for the pool to grow */
};

struct thin_pool_params {
	int64_t id;			/* the pool's volume id */
	const char *name;		/* for messages */
	uint32_t block_size;		/* bytes, power of two in [MIN, MAX] */
	bool zero;			/* zero new blocks' uncovered parts */
	enum thin_full_policy when_full;
	uint32_t wait_s;		/* seconds, THIN_FULL_WAIT */
	uint32_t low_water_pct;		/* warn when free falls below; 0: never */
};

struct thin_pool_usage {
	uint32_t block_size;		/* bytes */
	uint64_t nr_blocks;		/* in the data area */
	uint64_t nr_free;		/* free now (pending frees excluded) */
	uint64_t nr_pending;		/* freed, reusable after the next commit */
	uint64_t nr_leaves, nr_dirs;	/* pages in memory */
	bool low_water;			/* free is below the low-water mark */
	bool failed;			/* a commit failed: writes fail */
};

/*
 * Opens a pool over @areas (copied).  @meta/@meta_arg outlive the pool.
 * Loads nothing yet.  0, -EINVAL for bad params, -EFBIG, or -ENOMEM.
 */
int thin_pool_open(const struct thin_pool_params *params,
		   const struct thin_area *areas, unsigned int nr,
		   const struct thin_meta_ops *meta, void *meta_arg,
		   struct thin_pool **out);
/*
 * After every volume was loaded: derives the block counts from the
 * distinct leaves, O(mapped blocks), and starts the commit worker.
 */
int thin_pool_start(struct thin_pool *p);
/* Stops the worker and commits.  0 or -EIO. */
int thin_pool_stop(struct thin_pool *p);
/* Frees the pool.  Its volumes must be destroyed. */
void thin_pool_close(struct thin_pool *p);

/*
 * Grows the data area to @areas, which start with the current ones.
 * Wakes writers waiting for space.  Blocks briefly (a grace period).
 */
int thin_pool_grow(struct thin_pool *p, const struct thin_area *areas,
		   unsigned int nr);

/*
 * fdatasync the data devices, then commit the metadata changed so far in
 * one transaction.  Blocks.  Commits are serialised.  0 or -EIO (the pool
 * then fails every write that needs metadata: a commit it cannot make
 * would be lost on a crash).
 */
int thin_pool_commit(struct thin_pool *p);

/* The pool's own block counts, for check to compare with the store's. */
struct thin_pool_counts {
	uint64_t nr_blocks;
	uint64_t nr_free;		/* allocatable now */
	uint32_t *refs;			/* per block: references */
	uint8_t *pending;		/* per block: freed, not yet allocatable */
};

/*
 * Commits like thin_pool_commit, and copies the block counts as that
 * commit leaves them (taken when no block is being provisioned, so they
 * match the committed pages exactly).  O(blocks).  0, -EBUSY if writes
 * kept provisioning for a second, -ENOMEM, -EIO.
 */
int thin_pool_commit_counts(struct thin_pool *p, struct thin_pool_counts *out);
void thin_pool_counts_release(struct thin_pool_counts *c);

void thin_pool_usage(struct thin_pool *p, struct thin_pool_usage *out);
uint32_t thin_pool_block_size(const struct thin_pool *p);	/* bytes */

#endif
