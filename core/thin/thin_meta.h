/*
 * core/thin/thin_meta.h: the metadata port of a thin pool, in core's terms.
 *
 * A thin pool keeps each volume's map as pages: a directory (one per
 * volume, shared by snapshots) listing leaves, each leaf holding
 * THIN_LEAF_ENTRIES entries "virtual block -> data block + 1" (0 is a
 * hole).  Pages have ids that the pool hands out; the store keeps one row
 * per page.  Reference counts are not stored: they are the number of
 * distinct pages that point at a thing.  Leaves' and directories' counts
 * are derived at load time from the directories and volumes.  Data
 * blocks' counts are stored too, as the space map (struct
 * thin_space_rec), written by the pool in the transaction that changes
 * the leaves they count; the store marks the space map stale whenever a
 * leaf row changes (a trigger), so whoever writes leaves without it (a
 * restore, a repair) leaves a map that the next load does not trust: it
 * derives the counts from every leaf instead, as it always did, and the
 * next commit writes the whole map again.
 *
 * meta/thin_store.c implements this on SQLite.  Every op blocks on the
 * store: call them from the pool worker, a commit, or at load, never from
 * map().  Each returns 0 or -errno (-ENOENT for a missing row, -EUCLEAN
 * for a page whose blob has not the length of its kind, -EIO).
 */
#ifndef MAPPERFS_THIN_META_H
#define MAPPERFS_THIN_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define THIN_LEAF_ENTRIES	512	/* entries per leaf: 2 KiB, one SQLite page */
#define THIN_DIR_CHUNK		512u	/* slots a commit writes together: 4 KiB of row */
#define THIN_DIR_SLOTS_MAX	(1u << 20)	/* a map's directory: 8 MiB, 2^29 blocks */

/* Whether bitmap @changed marks chunk @c (slots c * THIN_DIR_CHUNK on). */
static inline bool thin_dir_chunk_changed(const uint64_t *changed, uint32_t c)
{
	return changed[c / 64] >> (c % 64) & 1;
}

/* A leaf as committed: entries are data block + 1, 0 for a hole. */
struct thin_leaf_rec {
	int64_t id;
	uint32_t map[THIN_LEAF_ENTRIES];
};

/*
 * A directory: leaf ids by slot, 0 where no leaf exists yet.  It has
 * exactly the slots its volume's size needs (thin_dir_slots), at least
 * one: a store hands out no other shape (-EUCLEAN).
 */
struct thin_dir_rec {
	int64_t id;
	uint32_t nr;			/* slots */
	int64_t *leaves;
	bool mapped_known;		/* else the load counts them */
	uint64_t mapped;		/* blocks the map maps */
};

/* A directory's count of mapped blocks, changed without its slots. */
struct thin_dir_mapped {
	int64_t id;
	uint64_t mapped;
};

/* A thin volume's row: which directory is its map. */
struct thin_vol_rec {
	int64_t volume;
	int64_t dir;
};

/*
 * A piece of the space map: the counts of THIN_SPACE_CHUNK_BLOCKS data
 * blocks from chunk * THIN_SPACE_CHUNK_BLOCKS on, two bits each (0, 1, 2,
 * 3 = three or more), packed into little-endian 64-bit words, block b in
 * bits 2 * (b % 32) of word b / 32; and the exact count of each block
 * whose field is 3, as pairs (block - first block, count).
 */
#define THIN_SPACE_CHUNK_BLOCKS	4096u
#define THIN_SPACE_CHUNK_WORDS	(THIN_SPACE_CHUNK_BLOCKS / 32)

struct thin_space_rec {
	uint64_t chunk;
	/*
	 * THIN_SPACE_CHUNK_WORDS words.  A commit's all-zero chunks share
	 * one array, so that one after freeing 1e8 blocks copies 24414
	 * pointers, not 25 MB of zeros.
	 */
	const uint64_t *fields;
	uint32_t *overflow;		/* nr_overflow pairs; malloc'ed */
	size_t nr_overflow;
};

/*
 * One transaction's worth of changes.  Applied in one go: either all of
 * it is durable after commit() returned 0, or none of it.
 */
struct thin_commit {
	const struct thin_leaf_rec *leaves;	/* insert or replace */
	size_t nr_leaves;
	const int64_t *dead_leaves;		/* delete */
	size_t nr_dead_leaves;
	const struct thin_dir_rec *dirs;	/* insert or replace */
	/*
	 * Per directory above, NULL or the chunks of THIN_DIR_CHUNK slots that
	 * changed (a bit each): only those slots are written, into the row
	 * the store has, of the same length (else -EUCLEAN); the others of
	 * dirs[i].leaves are not set.
	 */
	const uint64_t *const *dirs_changed;
	size_t nr_dirs;
	const int64_t *dead_dirs;		/* delete */
	size_t nr_dead_dirs;
	const struct thin_vol_rec *vols;	/* replace (the volume has a row) */
	size_t nr_vols;
	const struct thin_dir_mapped *dir_mapped;	/* after the dirs above */
	size_t nr_dir_mapped;
	/*
	 * The space map, from a writer that keeps it (@space_stale set):
	 * chunks to insert or replace, every chunk whose counts the leaves
	 * above change.  Unless @space_whole (every chunk of the map is here:
	 * the others are dropped), a map that was stale stays so; commit
	 * says in *space_stale.  A writer that does not keep it (NULL) leaves
	 * it stale once it changes a leaf.
	 */
	const struct thin_space_rec *space;
	size_t nr_space;
	bool space_whole;
	bool *space_stale;
};

struct thin_meta_ops {
	/* Loads directory @id; out->leaves is malloc'ed. */
	int (*load_dir)(void *arg, int64_t id, struct thin_dir_rec *out);
	int (*load_leaf)(void *arg, int64_t id, struct thin_leaf_rec *out);
	/*
	 * load_leaf for a pool that runs: safe beside every other op (a
	 * commit in flight included) and from any thread, through a
	 * connection of its own, so it sees what is committed.  Optional:
	 * NULL is load_leaf, for a caller that never runs it beside another.
	 */
	int (*fault_leaf)(void *arg, int64_t id, struct thin_leaf_rec *out);
	/* The largest page id in use (leaves and dirs share one id space). */
	int (*max_page_id)(void *arg, int64_t *out);
	/* Every page id, directories and leaves, by id; both malloc'ed. */
	int (*page_ids)(void *arg, int64_t **dirs, size_t *nr_dirs,
			int64_t **leaves, size_t *nr_leaves);
	/*
	 * How many directories and leaves there are, without listing them.
	 * Optional: NULL for a store that cannot tell more cheaply than
	 * page_ids.
	 */
	int (*count_pages)(void *arg, uint64_t *dirs, uint64_t *leaves);
	/*
	 * The thin volumes of the pool as committed: each volume id with its
	 * directory; *out malloc'ed, by volume.
	 */
	int (*load_vols)(void *arg, struct thin_vol_rec **out, size_t *nr);
	/*
	 * The stored space map, chunk by chunk, to @each (which may stop the
	 * walk with a non-zero return, handed back), if it is not stale:
	 * then 1; 0 if it is stale (nothing called).  Optional: NULL is
	 * "always stale".
	 */
	int (*load_space)(void *arg, int (*each)(void *ctx, const struct thin_space_rec *rec),
			  void *ctx);
	/* Applies @c in one transaction.  Blocks for the COMMIT. */
	int (*commit)(void *arg, const struct thin_commit *c);
	/*
	 * Bracket many loads: between read_begin and read_end they read one
	 * committed state and take no lock of the store each (a pool of
	 * 100,000 volumes loads 200,000 pages at start).  Loads only in
	 * between, no commit.  read_begin: 0 or -errno; read_end after each
	 * read_begin that returned 0.
	 */
	int (*read_begin)(void *arg);
	void (*read_end)(void *arg);
};

#endif
