/*
 * core/thin/thin_pool.h: a thin pool: a data area split into blocks, the
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
#include <stddef.h>
#include <stdint.h>

#include "thin_meta.h"
#include "thin_refs.h"

struct target;
struct thin_pool;

#define THIN_BLOCK_MIN		(64u << 10)	/* bytes */
#define THIN_BLOCK_MAX		(1u << 30)	/* bytes */

/* A thin pool's block size: a power of two from THIN_BLOCK_MIN to _MAX. */
static inline bool thin_block_size_ok(uint64_t bytes)
{
	return bytes >= THIN_BLOCK_MIN && bytes <= THIN_BLOCK_MAX && !(bytes & (bytes - 1));
}
#define THIN_COMMIT_PERIOD_MS	1000
#define THIN_COMMIT_PATIENCE_MS	10000	/* failing commits: how long fsync waits */

enum thin_full_policy {
	THIN_FULL_ERROR,		/* ENOSPC at once */
	THIN_FULL_WAIT,			/* wait up to wait_s for the pool to grow */
};

struct thin_pool_params {
	int64_t id;			/* the pool's volume id */
	const char *name;		/* for messages */
	uint32_t block_size;		/* bytes, power of two in [MIN, MAX] */
	bool zero;			/* zero new blocks' uncovered parts (at open) */
	enum thin_full_policy when_full;
	uint32_t wait_s;		/* seconds, THIN_FULL_WAIT */
	uint32_t low_water_pct;		/* warn when free falls below; 0: never */
	bool discard_passdown;		/* discard blocks freed, after their commit */
	uint64_t metadata_limit;	/* bytes of map pages; 0: no limit */
	/*
	 * Called when the pool crosses its low-water mark, becomes full (of
	 * data or of metadata), fails or works again: a kick for whoever
	 * watches its usage (the
	 * pool service's monitor).  Called with the pool lock held: it must
	 * not block nor call into the pool.  May be NULL.
	 */
	void (*notify)(void *arg);
	void *notify_arg;
};

/*
 * How many times each flag of the usage went up since the pool opened: a
 * watcher that looks now and then tells a condition that cleared and came
 * back between two looks from one that lasted.
 */
struct thin_pool_raised {
	uint64_t low_water, full, metadata_full, failed;
};

struct thin_pool_usage {
	uint32_t block_size;		/* bytes */
	uint64_t nr_blocks;		/* in the data area */
	uint64_t nr_free;		/* free now (pending frees excluded) */
	uint64_t nr_pending;		/* freed, reusable after the next commit (or discard) */
	uint64_t nr_leaves, nr_dirs;	/* pages in memory */
	uint64_t cache_bytes;		/* leaves' entries loaded: what the budget counts */
	uint64_t cache_budget;		/* bytes; 0: no budget */
	uint64_t cache_reserved;	/* bytes of it walks and removals hold: thin_pool_cache_reserve */
	uint64_t evictions;		/* leaves unloaded since it opened */
	uint64_t loads;			/* leaves loaded on demand since it opened */
	uint64_t miss_waits;		/* reads that waited for the loader instead */
	bool low_water;			/* free and pending are below the low-water mark */
	bool failed;			/* commits failed for THIN_COMMIT_PATIENCE_MS */
	int commit_error;		/* -errno of the last commit, 0 if it worked */
	uint64_t failing_ms;		/* how long commits have been failing */
	uint64_t metadata_bytes;	/* what its map pages take in the store */
	uint64_t metadata_limit;	/* bytes; 0: no limit */
	uint64_t discarded_bytes;	/* passed down or trimmed since it opened */
	bool full;			/* a write found no block; none freed since */
	bool metadata_full;		/* a write needed a map page past the limit; none freed since */
	struct thin_pool_raised raised;
};

/*
 * The memory budget of every pool opened after: the bytes of leaf entries
 * each keeps loaded (THIN_LEAF_BYTES a leaf) before its worker unloads the
 * coldest clean ones.  0: no budget.  Call before opening pools.
 */
#define THIN_LEAF_BYTES		(THIN_LEAF_ENTRIES * 4u)
#define THIN_CACHE_DEFAULT	(256ull << 20)	/* docs/thin.md: "The memory budget" */
#define THIN_CACHE_MIN		THIN_LEAF_BYTES	/* one leaf: below 1 MiB, for tests that must evict */
void thin_pool_set_cache_budget(uint64_t bytes);

/*
 * Reserves @bytes of the pool's memory budget for a walk of its map
 * (check, dump, repair: thin_walk.h), which takes them from the leaves'
 * slab (thin_refs.h), or for a removal (thin_remove_bytes), whose sets
 * and store work take them from elsewhere.  From then on the pool keeps
 * its loaded leaves under the budget less every reservation held (they
 * add up), and this call first unloads the clean ones past that on the
 * caller's thread, whole slab pages at a time (leaves whose entries share
 * a page go together, whatever CLOCK says), and gives those pages back to
 * the OS (thin_leaf_slab_trim): a walk faults them in again as it takes
 * its pages, a removal's memory takes their place, so neither costs new
 * memory on a full cache.  Dirty and provisioning leaves stay; reads go
 * on, loading what they miss, which the worker unloads again past the
 * reduced budget.  A reservation past the budget leaves the cache no
 * room: every clean leaf is unloaded, the work goes on (its memory is
 * then new), and the log says so.  No budget (0): only counted.  Shown
 * in status (cache_reserved).  Blocks: the pool lock, a grace period;
 * O(directory slots + loaded leaves log loaded leaves) when it unloads.
 * Admin path; not inside a read section.
 */
void thin_pool_cache_reserve(struct thin_pool *p, uint64_t bytes);
/*
 * Gives back @bytes thin_pool_cache_reserve took, once the walk or
 * removal let go of its memory, and gives the OS the slab pages that only
 * free objects cover (thin_leaf_slab_trim): O(f log f) for f free
 * objects, under the slab's mutex.  Admin path.
 */
void thin_pool_cache_unreserve(struct thin_pool *p, uint64_t bytes);

/*
 * Opens a pool whose data area is the first @data_bytes of @data (whole
 * blocks of it; thin_data.c): a linear target over its extents, or a
 * mirror of such legs.  @data, @meta and @meta_arg outlive the pool.
 * Loads nothing yet.  0, -EINVAL for bad params, -EFBIG, or -ENOMEM.
 */
int thin_pool_open(const struct thin_pool_params *params, struct target *data,
		   uint64_t data_bytes, const struct thin_meta_ops *meta, void *meta_arg,
		   struct thin_pool **out);
/*
 * Whether the volumes loaded so far reach page @id: a leaf (@leaf) or a
 * directory they named.  After the loads, before thin_pool_start (the
 * load index is gone then: false).  O(1), never blocks.
 */
bool thin_pool_reaches(struct thin_pool *p, int64_t id, bool leaf);
/* The map pages in memory: directories and leaves.  Takes the pool lock. */
void thin_pool_pages(struct thin_pool *p, uint64_t *dirs, uint64_t *leaves);
/*
 * After every volume was loaded: derives the block counts from the
 * distinct leaves, O(mapped blocks), and starts the commit worker.
 * 0, -EUCLEAN (an entry maps past the pool's end: @why, of @len bytes,
 * says which), -errno.
 */
int thin_pool_start(struct thin_pool *p, char *why, size_t len);
/* Stops the worker and commits.  0 or -EIO. */
int thin_pool_stop(struct thin_pool *p);
/* Frees the pool.  Its volumes must be destroyed. */
void thin_pool_close(struct thin_pool *p);

/*
 * Runs the pool on @data from now on (a move of its data: a mirror of
 * where it is and where it goes, then the new place alone), which maps
 * the same bytes.  Requests that began on the old target finish on it;
 * waits for them, and for the commit in flight.  Returns the old target,
 * for the caller to destroy.  Admin path.
 */
struct target *thin_pool_set_data(struct thin_pool *p, struct target *data);
/*
 * Whether the data area may grow to @data_bytes: 0, -EINVAL (smaller),
 * -EFBIG (more blocks than a pool may have).
 */
int thin_pool_grow_check(struct thin_pool *p, uint64_t data_bytes);
/*
 * Grows the data area to @data_bytes, which thin_pool_grow_check passed
 * and the data target covers already.  Wakes writers waiting for space.
 * Cannot fail.
 */
void thin_pool_grow(struct thin_pool *p, uint64_t data_bytes);

/*
 * Flushes the data target (fdatasync of its devices), then commits the
 * metadata changed so far in one transaction.  Blocks; commits are
 * serialised.  A failed attempt
 * changes nothing and is retried with back-off for up to
 * THIN_COMMIT_PATIENCE_MS (once only if the pool has failed already).
 * 0 or -EIO.
 */
int thin_pool_commit(struct thin_pool *p);

/*
 * The pool's own block counts, for check to compare with the store's:
 * 0.25 bytes a block (25 MB at 1e8 blocks), from the leaves' slab
 * (thin_refs.h), and the few blocks freed but not yet allocatable.
 */
struct thin_pool_counts {
	uint64_t nr_blocks;
	uint64_t nr_free;		/* allocatable now */
	struct thin_refs refs;		/* per block: references */
	uint32_t *pending;		/* blocks freed, not yet allocatable, in order */
	size_t nr_pending;
};

void thin_pool_counts_release(struct thin_pool_counts *c);

/*
 * Brackets an admin change of the pool's volumes.  Begin waits for the
 * commit in flight, holds off the next ones and commits what is pending
 * (one attempt), so that the store shows exactly what memory holds.  The
 * caller then records its change in its own transaction, makes memory
 * match it, and calls end (which asks the worker to commit what the
 * change left: pages that died).  With @counts (check), it also copies
 * the block counts as that commit leaves them (taken when no block is
 * being provisioned, so they match the committed pages exactly; O(blocks);
 * -EBUSY if writes kept provisioning for a second), and the store stays
 * as committed until end.  0, or the commit's -errno, and then nothing is
 * held.
 */
int thin_pool_admin_begin(struct thin_pool *p, struct thin_pool_counts *counts);
/*
 * As begin, but commits nothing first: for a change that only deletes
 * the rows of volumes whose maps it then drops (remove).  What other
 * volumes have pending stays pending, and the commit after end writes it
 * with the drop, so that a copy of a map the removed volume shared takes
 * the removed one's row instead of a new one.  Waits for the commit in
 * flight; never fails.
 */
void thin_pool_admin_hold(struct thin_pool *p);
void thin_pool_admin_end(struct thin_pool *p);
/*
 * Ends a bracket that dropped maps (remove, rollback) with a commit of
 * what it freed, as thin_pool_commit, but leaves the rows of the pages
 * that died to the worker's next commit, kicked to run at once: deleting
 * a row reads its pages of the store, cold ones from the disk (the 16
 * leaves of a snapshot removed after as many copy-on-writes: 5-16 ms at
 * 1e8 blocks).  No volume reaches them once the drop is committed; a
 * crash leaves them to the garbage walk of the next start.  Blocks; 0 or
 * -EIO as thin_pool_commit.
 */
int thin_pool_admin_end_commit(struct thin_pool *p);

/* A page id for a page an admin change records itself. */
int64_t thin_pool_reserve_page_id(struct thin_pool *p);

/*
 * Discards every free block on the raw devices (thin_trim), in chunks,
 * each held unallocatable while it is discarded.  Commits first, so that
 * freed blocks count.  A block discarded since it was last used (by a
 * trim, or passed down when it was freed) is left out: *bytes gets what
 * this call discarded, 0 for a trim after a trim.  Blocks.
 * 0, -EOPNOTSUPP (no device can discard), -EIO.
 */
int thin_pool_trim(struct thin_pool *p, uint64_t *bytes);

/*
 * Of data blocks [@first, @first + @n), those that read zeros because
 * their raw device has a hole over the whole block: a file whose range
 * was punched (discard passdown, trim) or never written.  Adds how many
 * to *nr_holes, and sets *first_hole to the first one if *nr_holes was 0.
 * One lseek (SEEK_DATA, SEEK_HOLE) per hole or data extent of the range,
 * not one per block.  A block device, and a file system that cannot
 * tell, have none; a mirror answers for its first leg in sync.  Blocks
 * briefly on the devices' inodes.  0, -EINVAL past the pool's end, or
 * the -errno of lseek.
 */
int thin_pool_holes(struct thin_pool *p, uint64_t first, uint64_t n, uint64_t *nr_holes,
		    uint64_t *first_hole);

/* Sets the limit of the map pages, in bytes (0: none). */
void thin_pool_set_metadata_limit(struct thin_pool *p, uint64_t bytes);
/* Turns discard passdown on or off, from the next commit on. */
void thin_pool_set_discard_passdown(struct thin_pool *p, bool on);
/*
 * The full policy, at once: a write that waits for space stops waiting
 * when it becomes THIN_FULL_ERROR (and fails with ENOSPC); the next write
 * that finds the pool full waits @wait_s seconds when it is THIN_FULL_WAIT.
 */
void thin_pool_set_when_full(struct thin_pool *p, enum thin_full_policy when_full,
			     uint32_t wait_s);
/*
 * The low-water mark, percent free (0: none): the low-water flag follows
 * the new mark at once, a crossing downwards logged and counted in
 * raised.low_water, and the watcher kicked if the flag changed.
 */
void thin_pool_set_low_water(struct thin_pool *p, uint32_t pct);
/*
 * Zero new blocks' uncovered parts, or not, from the next chunk filled
 * on (a block of 1 MiB or less is one chunk).
 */
void thin_pool_set_zero(struct thin_pool *p, bool on);

/*
 * What a map page takes in the store: a leaf row fills a 4 KiB SQLite
 * page (two 2 KiB blobs do not fit one with their headers).
 */
#define THIN_PAGE_STORE_BYTES	4096u
#define THIN_METADATA_OVERHEAD	(4u << 20)	/* bytes: a checkpoint's worth of WAL */
#define THIN_DEFAULT_MAX_THINS	1000		/* for the default metadata limit */

/*
 * The store space a pool of @nr_blocks blocks with up to @max_thins thin
 * volumes and snapshots needs for its maps (thin_metadata_size's role):
 * every block mapped, leaves half full on average (as thin_metadata_size
 * assumes of dm-thin's btree leaves), a directory and a partly filled
 * leaf per volume, and a checkpoint's worth of write-ahead log.  Bytes.
 */
uint64_t thin_metadata_estimate(uint64_t nr_blocks, uint64_t max_thins);

/*
 * The pool's figures now; its low-water and full flags follow the space
 * freed since the last allocation too (and kick the watcher if they
 * change).  Takes the pool lock.
 */
void thin_pool_usage(struct thin_pool *p, struct thin_pool_usage *out);

#endif
