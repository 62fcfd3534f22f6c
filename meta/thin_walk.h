/*
 * meta/thin_walk.h: one walk over a thin pool's committed metadata, shared
 * by check, the usage figures of list/status, diff, and the clean-up of
 * pages that a crash between two transactions left unreachable.
 *
 * The walk loads every page of the pool (2 KiB per 512 mapped blocks) and
 * derives what the pool derives at start-up: which directories the thin
 * volumes reach, which leaves those reach, and per data block the number
 * of distinct reachable leaves mapping it.  O(pages + blocks).  Blocks on
 * SQLite: admin path only.
 */
#ifndef MAPPERFS_THIN_WALK_H
#define MAPPERFS_THIN_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "thin_store.h"

struct thin_walk {
	int64_t pool;
	struct thin_pool_rec params;
	uint64_t nr_blocks;		/* data blocks in the pool's extents */
	struct thin_rec *vols;		/* thin volumes of the pool */
	size_t nr_vols;
	uint64_t *vol_blocks;		/* per volume: its size in blocks */
	struct thin_dir_rec *dirs;	/* every directory row, by id */
	size_t nr_dirs;
	struct thin_leaf_rec *leaves;	/* every leaf row, by id */
	size_t nr_leaves;
	bool *dir_reached, *leaf_reached;
	uint32_t *dir_refs;		/* per directory: volumes using it */
	uint32_t *leaf_refs;		/* per leaf: reached directories */
	uint32_t *block_refs;		/* per block, from reachable leaves */
	uint64_t used;			/* blocks with a reference */
	uint64_t dangling;		/* references to missing pages */
};

/* Loads and derives.  0, -ENOENT if @pool is no thin pool, -errno. */
int thin_walk_load(struct store *s, int64_t pool, struct thin_walk *w);
void thin_walk_release(struct thin_walk *w);

/* The directory / leaf with @id, or NULL. */
const struct thin_dir_rec *thin_walk_dir(const struct thin_walk *w, int64_t id);
const struct thin_leaf_rec *thin_walk_leaf(const struct thin_walk *w, int64_t id);

struct thin_walk_usage {
	uint64_t mapped, exclusive, shared;	/* blocks */
};

/* Usage of thin volume @volume.  -ENOENT if it is not in the pool. */
int thin_walk_usage(const struct thin_walk *w, int64_t volume,
		    struct thin_walk_usage *out);

/*
 * Checks every invariant; calls @breach with a one-line message for each
 * one broken.  Returns the number of breaches.
 */
size_t thin_walk_check(const struct thin_walk *w,
		       void (*breach)(void *arg, const char *msg), void *arg);

/* Pages no volume reaches (garbage a crash may leave). */
size_t thin_walk_unreached(const struct thin_walk *w);
/* Deletes pages no volume reaches (one transaction).  0 or -errno. */
int thin_walk_gc(struct store *s, const struct thin_walk *w);

/*
 * Calls @fn for each run of virtual blocks where @a and @b map
 * differently.  -ENOENT if either is not in the pool.
 */
int thin_walk_diff(const struct thin_walk *w, int64_t a, int64_t b,
		   int (*fn)(void *arg, uint64_t first, uint64_t count), void *arg);

#endif
