/*
 * core/thin/thin_walk.h: one walk over a thin pool's committed map pages,
 * shared by check, dump, repair and the clean-up of pages no volume
 * reaches (a crash between two transactions leaves them, and so does
 * removing a volume while its pool is not running).  (Usage and diff read
 * the live maps, thin.h.)
 *
 * The walk loads every page of the pool through its metadata port (2 KiB
 * per 512 mapped blocks) and derives what the pool derives at start-up:
 * which directories the thin volumes reach, which leaves those reach, and
 * per data block the number of distinct reachable leaves mapping it.
 * O(pages + blocks).  Blocks on the store: admin path only.
 */
#ifndef MAPPERFS_THIN_WALK_H
#define MAPPERFS_THIN_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "thin_meta.h"

/* A thin volume of the pool, as its records say. */
struct thin_walk_vol {
	const char *name;		/* for messages */
	int64_t dir;			/* its directory's page id */
	uint64_t nr_blocks;		/* its virtual size in blocks */
};

struct thin_walk {
	uint64_t nr_blocks;		/* data blocks in the pool */
	const struct thin_walk_vol *vols;	/* the caller's */
	size_t nr_vols;
	struct thin_dir_rec *dirs;	/* every directory row, by id */
	size_t nr_dirs;
	struct thin_leaf_rec *leaves;	/* every leaf row, by id */
	size_t nr_leaves;
	/*
	 * Rows that are damaged (or vanished): the directories' ids by id,
	 * then the leaves' by id; the first unreadable_dirs are directories.
	 */
	int64_t *unreadable_ids;
	size_t unreadable, unreadable_dirs;
	bool *dir_reached, *leaf_reached;
	uint32_t *dir_refs;		/* per directory: volumes using it */
	uint32_t *leaf_refs;		/* per leaf: reached directories */
	uint32_t *block_refs;		/* per block, from reachable leaves */
	uint64_t used;			/* blocks with a reference */
	uint64_t dangling;		/* references to pages missing, unreadable, misfit */
};

/*
 * Loads every page through @m and derives.  A page that cannot be read
 * (-EUCLEAN: damaged; -ENOENT: gone since it was listed) is left out, as
 * if it were missing, and its id kept in w->unreadable_ids: check names
 * it as damage, repair drops it, dump refuses.  0 or -errno (the store,
 * -ENOMEM).
 */
int thin_walk_load(const struct thin_meta_ops *m, void *arg, uint64_t nr_blocks,
		   const struct thin_walk_vol *vols, size_t nr_vols,
		   struct thin_walk *w);
/* A page of the walk by id, or NULL. */
const struct thin_dir_rec *thin_walk_dir(const struct thin_walk *w, int64_t id);
const struct thin_leaf_rec *thin_walk_leaf(const struct thin_walk *w, int64_t id);
/* Page @id has a row that could not be read. */
bool thin_walk_unreadable(const struct thin_walk *w, int64_t id);
/*
 * The map of volume w->vols[@i]: its directory, if it was read and has
 * exactly the slots the volume's size needs; else NULL (lost).
 */
const struct thin_dir_rec *thin_walk_vol_dir(const struct thin_walk *w, size_t i);
void thin_walk_release(struct thin_walk *w);

/*
 * Checks every invariant; calls @breach with a one-line message for each
 * one broken (naming the volume).  Returns the number of breaches.
 */
size_t thin_walk_check(const struct thin_walk *w,
		       void (*breach)(void *arg, const char *msg), void *arg);

/*
 * Pages no volume reaches, damaged ones included: garbage that a crash
 * leaves, or the removal of a volume whose pool was not running; in
 * *damaged (unless NULL), how many of them are damaged.  Only when
 * w->dangling is 0: a page that a damaged one names would look
 * unreached too.
 */
size_t thin_walk_unreached(const struct thin_walk *w, size_t *damaged);
/*
 * Deletes the pages no volume reaches, damaged ones included, in one
 * commit of @m.  w->dangling must be 0 (above).  0 or -errno.
 */
int thin_walk_gc(const struct thin_meta_ops *m, void *arg, const struct thin_walk *w);

#endif
