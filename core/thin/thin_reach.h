/*
 * core/thin/thin_reach.h: which map pages of a thin pool no volume
 * reaches, found without reading a leaf.
 *
 * A crash between a removal and the pool's next commit leaves pages no
 * volume reaches, and so does removing a volume while its pool is not
 * running; the pool deletes them before it loads (pool_thin.c).  Only
 * directories name pages, so this reads the page ids and the directories,
 * O(pages + directory slots), and the leaves no volume reaches (to tell
 * the damaged ones: garbage is few pages), not the others (2 KiB per 512
 * blocks: the whole map, which thin_walk.h reads for check).  A damaged
 * leaf that a volume reaches is the load's to report.
 * Blocks on the store: admin path only.
 */
#ifndef MAPPERFS_THIN_REACH_H
#define MAPPERFS_THIN_REACH_H

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
	 * References to pages missing or unreadable: what a damaged
	 * directory names is unknown, so nothing may be deleted then.
	 */
	uint64_t dangling;
};

/*
 * Finds the pages none of @vols reaches, through @m (between read_begin
 * and read_end, or not).  0 or -errno (the store, -ENOMEM).
 */
int thin_reach_find(const struct thin_meta_ops *m, void *arg,
		    const struct thin_walk_vol *vols, size_t nr_vols, struct thin_reach *out);
/* Deletes them in one commit of @m.  out->dangling must be 0.  0 or -errno. */
int thin_reach_gc(const struct thin_meta_ops *m, void *arg, const struct thin_reach *r);
void thin_reach_release(struct thin_reach *r);

#endif
