/*
 * core/thin/thin_reach.h: which map pages of a thin pool no volume
 * reaches.
 *
 * A crash between a removal and the pool's next commit leaves pages no
 * volume reaches, and so does removing a volume while its pool is not
 * running.  A pool deletes them once its volumes' maps are loaded and
 * before it starts (pool_thin.c): the load has read every directory a
 * volume reaches and knows every page those name (thin_pool_reaches), so
 * this reads only the ids of the pages the store has, O(pages), and the
 * pages no volume reaches (to tell the damaged ones: garbage is few
 * pages).  A removal from a pool that is not loaded reads the directories
 * its volumes reach instead (thin_reach_find_walk), O(directory slots),
 * never a leaf a volume reaches.
 * Blocks on the store: admin path only.
 */
#ifndef MAPPERFS_THIN_REACH_H
#define MAPPERFS_THIN_REACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "thin_meta.h"
#include "thin_walk.h"

struct thin_reach {
	int64_t *dead_dirs;		/* unreached directories, damaged ones too */
	size_t nr_dead_dirs;
	int64_t *dead_leaves;		/* unreached leaves */
	size_t nr_dead_leaves;
	size_t damaged;			/* dead pages that cannot be read */
	/*
	 * Directories a volume reaches that cannot be read (thin_reach_find_walk):
	 * what they name is unknown, so nothing may be deleted then.
	 */
	size_t dangling;
};

/* Whether a volume reaches page @id, a leaf (@leaf) or a directory. */
typedef bool thin_reached_fn(void *ctx, int64_t id, bool leaf);

/*
 * Finds the pages of @m that @reached says no volume reaches (between
 * read_begin and read_end, or not).  0 or -errno (the store, -ENOMEM).
 */
int thin_reach_find(const struct thin_meta_ops *m, void *arg, thin_reached_fn *reached,
		    void *ctx, struct thin_reach *out);
/*
 * The same for a pool whose maps are not loaded: what @vols reach is read
 * from their directories.  out->dangling says whether it may be deleted.
 */
int thin_reach_find_walk(const struct thin_meta_ops *m, void *arg,
			 const struct thin_walk_vol *vols, size_t nr_vols, struct thin_reach *out);
/* Deletes them in one commit of @m.  out->dangling must be 0.  0 or -errno. */
int thin_reach_gc(const struct thin_meta_ops *m, void *arg, const struct thin_reach *r);
void thin_reach_release(struct thin_reach *r);

#endif
