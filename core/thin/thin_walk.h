/*
 * core/thin/thin_walk.h: one walk over a thin pool's committed map pages,
 * shared by check, dump and repair.  (Usage and diff read the live maps,
 * thin.h; the clean-up of pages no volume reaches, thin_reach.h.)
 *
 * The walk keeps the directories (8 bytes a slot) and, per leaf, what
 * check and dump need to know without its entries: the references to it,
 * the slot it sits at, how many blocks it maps and where the last one is;
 * and per data block the number of distinct reachable leaves that map
 * it, in two bits (thin_refs.h).  Entries are read from the store one
 * leaf at a time, as they are needed (thin_walk_read_leaf), never all at
 * once: at 1e8 mapped blocks the walk holds ~35 MB, where one that loaded
 * every leaf held 2.4 GB (issue 22: check and dump within the memory
 * budget).  The counts (25 MB of it) and the leaves' 32 bytes (6 MB) are
 * pages of the leaves' slab: a caller that walks a running pool reserves
 * thin_walk_slab_bytes from its budget first (thin_pool_cache_reserve),
 * so that they are the memory of leaves the pool unloaded for them.  Loading reads every leaf once; check reads again the
 * reachable ones whose blocks may be shared (to see that sharing sits at
 * one virtual block: those that map a block in a 4096-block chunk with a
 * shared block), and a leaf only to name the entries of a breach; dump
 * reads each once more, to write them.  Each read goes through the
 * caller's store connection, inside its read transaction (thin_meta_ops
 * read_begin), so that every read sees one committed state.
 * O(pages + blocks).  Blocks on the store: admin path only.
 */
#ifndef MAPPERFS_THIN_WALK_H
#define MAPPERFS_THIN_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "thin_meta.h"
#include "thin_refs.h"

/* A thin volume of the pool, as its records say. */
struct thin_walk_vol {
	const char *name;		/* for messages */
	int64_t dir;			/* its directory's page id */
	uint64_t nr_blocks;		/* its virtual size in blocks */
};

/* A leaf of the walk: what is known of it without its entries. */
struct thin_walk_leaf {
	int64_t id;
	uint32_t refs;			/* slots of reached directories pointing here */
	uint32_t slot;			/* the slot of the first of them */
	uint16_t mapped;		/* entries that map a block */
	uint16_t end;			/* 1 + the index of its last such entry; 0: none */
	uint32_t lo, hi;		/* blocks [lo, hi) hold those it maps, if reached; hi 0: none */
	bool reached;
	bool moved;			/* reached at another slot too */
	bool past_pool;			/* maps a block past the end of the pool */
	bool shares_block;		/* maps a block another leaf maps (thin_walk_check) */
};

struct thin_walk {
	const struct thin_meta_ops *m;	/* where its leaves are read */
	void *arg;
	uint64_t nr_blocks;		/* data blocks in the pool */
	const struct thin_walk_vol *vols;	/* the caller's */
	size_t nr_vols;
	struct thin_dir_rec *dirs;	/* every readable directory, by id */
	size_t nr_dirs;
	/* Every readable leaf, by id: thin_walk_leaf_at; pages of the leaves' slab. */
	struct thin_walk_leaf **leaf_pages;
	size_t nr_leaves, nr_leaf_pages;
	/*
	 * Rows that are damaged (or vanished): the directories' ids by id,
	 * then the leaves' by id; the first unreadable_dirs are directories.
	 */
	int64_t *unreadable_ids;
	size_t unreadable, unreadable_dirs;
	bool *dir_reached;
	uint32_t *dir_refs;		/* per directory: volumes using it */
	struct thin_refs block_refs;	/* per block, from reachable leaves */
	uint64_t used;			/* blocks with a reference */
	uint64_t shared_refs;		/* references to blocks counted twice or more */
	uint64_t dangling;		/* references to pages missing, unreadable, misfit */
};

/*
 * Reads every page through @m (with @arg, kept for thin_walk_read_leaf)
 * and derives.  A page that cannot be read (-EUCLEAN: damaged; -ENOENT:
 * gone since it was listed) is left out, as if it were missing, and its
 * id kept in w->unreadable_ids: check names it as damage, repair drops
 * it, dump refuses.  0 or -errno (the store, -ENOMEM).
 */
int thin_walk_load(const struct thin_meta_ops *m, void *arg, uint64_t nr_blocks,
		   const struct thin_walk_vol *vols, size_t nr_vols,
		   struct thin_walk *w);
/*
 * The bytes thin_walk_load takes from the leaves' slab for a pool of
 * @nr_blocks data blocks and about @nr_leaves leaves: its counts and its
 * leaves' 32 bytes, what a caller reserves first from a running pool's
 * budget (thin_pool_cache_reserve).  The rest (directories, ids) is
 * malloc'ed.
 */
uint64_t thin_walk_slab_bytes(uint64_t nr_blocks, uint64_t nr_leaves);
/*
 * All a walk of such a pool holds, what a caller reserves from a running
 * pool's budget: thin_walk_slab_bytes, and what is malloc'ed besides,
 * the ids and directory slots (THIN_WALK_LEAF_BYTES a leaf) and the
 * store's page caches the walk fills (THIN_WALK_STORE_BYTES: its
 * connection's and the one that checks the file, 2 MiB each, with their
 * statements).  At 1e8 blocks a check on a full cache peaked 12-20 MiB
 * over its RSS before when it reserved the slab bytes alone.
 */
#define THIN_WALK_LEAF_BYTES	24u
#define THIN_WALK_STORE_BYTES	(8u << 20)
uint64_t thin_walk_bytes(uint64_t nr_blocks, uint64_t nr_leaves);

/* A page of the walk by id, or NULL.  O(log pages). */
const struct thin_dir_rec *thin_walk_dir(const struct thin_walk *w, int64_t id);
struct thin_walk_leaf *thin_walk_leaf(const struct thin_walk *w, int64_t id);
/* Leaf @i (< w->nr_leaves) of the walk, in id order.  O(1). */
struct thin_walk_leaf *thin_walk_leaf_at(const struct thin_walk *w, size_t i);
/*
 * The entries of leaf @l (of the walk) into @out, read from the store.
 * 0 or -errno (the store: a leaf that was read by the load is read
 * again).  Blocks.
 */
int thin_walk_read_leaf(const struct thin_walk *w, const struct thin_walk_leaf *l,
			struct thin_leaf_rec *out);
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
 * one broken (naming the volume).  Notes which leaves share a block
 * (shares_block).  Returns the number of breaches.  Reads leaves: blocks.
 */
size_t thin_walk_check(struct thin_walk *w, void (*breach)(void *arg, const char *msg),
		       void *arg);

/*
 * Pages no volume reaches, damaged ones included: garbage that a crash
 * leaves, or the removal of a volume whose pool was not running; in
 * *damaged (unless NULL), how many of them are damaged.  Only when
 * w->dangling is 0: a page that a damaged one names would look
 * unreached too.
 */
size_t thin_walk_unreached(const struct thin_walk *w, size_t *damaged);

#endif
