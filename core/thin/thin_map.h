/*
 * core/thin/thin_map.h: the hot cache, a thin volume's map in memory.
 *
 * Two levels, the same pages the store keeps (thin_meta.h): a directory
 * of leaf pointers, and leaves of THIN_LEAF_ENTRIES 32-bit entries.  An
 * entry is data block + 1, 0 for a hole; THIN_PROVISIONING marks an entry
 * whose new block is being written, and keeps the old value below it so
 * that readers go on reading the old block (or zeros) and never wait.
 *
 * Readers (map()) use acquire loads only, inside an RCU read-side
 * section.  All changes are made by one thread at a time under the pool
 * lock, with release stores: a new leaf is filled before its pointer is
 * published, a new block written before its entry is.  A page that dies
 * is freed by the commit that deletes its row, after an RCU grace period
 * (rcu_wait_readers), so a reader that still holds it finishes safely.
 * (Not call_rcu: a commit may block anyway, and a grace period there keeps
 * the ordering visible to ThreadSanitizer, which cannot see into
 * liburcu's callback thread.)
 *
 * Sharing is by reference count, as in dm-thin's btrees: a directory is
 * referenced by volumes (a snapshot shares its origin's), a leaf by
 * directories, a data block by leaves (the pool's counts).  A writer that
 * finds a shared page copies it first (thin_dir_copy, thin_leaf_copy,
 * which takes a reference on everything the copy points at) and drops
 * its reference on the original.
 *
 * A count of 1 makes a page its volume's alone only once the transaction
 * that dropped it (a copy, a removal, a rollback) committed: until then
 * the committed metadata still maps it from another volume too, and a
 * write in place through it would show there after a power cut.  So a
 * page notes the transaction of its last drop (dropped), and the pool
 * the last committed one (thin_int.h: thin_page_alone).
 */
#ifndef MAPPERFS_THIN_MAP_H
#define MAPPERFS_THIN_MAP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rcu.h"
#include "thin_meta.h"

#define THIN_PROVISIONING	(1u << 31)	/* entry flag: new block in flight */
#define THIN_ENTRY_BLOCK_MAX	(THIN_PROVISIONING - 2)	/* largest data block */

struct thin_leaf {
	/*
	 * Its THIN_LEAF_ENTRIES entries, or NULL while only the store has
	 * them: a pool loads a leaf's entries when a request first needs
	 * them (thin_pool_leaf_load), not at start, and its memory budget
	 * unloads them again (thin_leaf_unload) from a clean leaf.
	 */
	_Atomic(_Atomic uint32_t *) e;
	/*
	 * Set by lock-free readers: not in one word with the fields below
	 * that the pool reads under its lock, which a compiler may read
	 * together (ThreadSanitizer then sees the wider read race with it).
	 */
	_Atomic bool referenced;	/* read since the eviction hand passed (CLOCK) */
	_Atomic uint32_t refs;		/* directories pointing here */
	_Atomic uint64_t dropped;	/* transaction that last dropped refs; 0: none */
	int64_t id;			/* page id in the store */
	bool dirty;			/* changed since the last commit */
	bool committing;		/* in the commit being written */
};	/* 40 bytes: one per leaf of every map from start (195,313 at 1e8 blocks) */

struct thin_dir {
	_Atomic uint32_t refs;		/* volumes using this map */
	uint32_t nr;			/* slots */
	_Atomic uint64_t dropped;	/* transaction that last dropped refs; 0: none */
	int64_t id;
	/*
	 * The directory a first write copied it from, whose row has that one
	 * as it is, until the copy's first commit (the volume's row is
	 * written with it); 0: none
	 */
	int64_t source;
	bool dirty;
	bool committing;		/* in the commit being written */
	/*
	 * What the next commit writes: every slot, or the chunks of
	 * THIN_DIR_CHUNK slots changed since the row was last written (a bit
	 * each, in this allocation): @id's row, or @source's if it takes
	 * that one.  A new directory writes all.
	 */
	bool write_whole;
	uint64_t *changed;
	/* Blocks it maps as the store says (its volumes keep the live count) */
	uint64_t stored_mapped;
	bool mapped_in_store;		/* else the next commit writes it */
	_Atomic(struct thin_leaf *) leaf[];
};

/*
 * The entry for virtual block @vb into *e (0 when no leaf holds it):
 * true, or false when its leaf's entries are not loaded.  Fast path.
 */
static inline bool thin_dir_lookup(struct thin_dir *d, uint64_t vb, uint32_t *e)
{
	struct thin_leaf *l = atomic_load_explicit(&d->leaf[vb / THIN_LEAF_ENTRIES],
						   memory_order_acquire);
	_Atomic uint32_t *entries;

	*e = 0;
	if (!l)
		return true;
	entries = atomic_load_explicit(&l->e, memory_order_acquire);
	if (!entries)
		return false;
	if (!atomic_load_explicit(&l->referenced, memory_order_relaxed))
		atomic_store_explicit(&l->referenced, true, memory_order_relaxed);
	*e = atomic_load_explicit(&entries[vb % THIN_LEAF_ENTRIES], memory_order_acquire);
	return true;
}

/* Whether @l's entries are loaded.  Fast path. */
static inline bool thin_leaf_resident(const struct thin_leaf *l)
{
	return atomic_load_explicit(&((struct thin_leaf *)l)->e, memory_order_acquire) != NULL;
}

/* Slots needed for @nr_blocks virtual blocks. */
static inline uint32_t thin_dir_slots(uint64_t nr_blocks)
{
	return (uint32_t)((nr_blocks + THIN_LEAF_ENTRIES - 1) / THIN_LEAF_ENTRIES);
}

/* A zeroed leaf with one reference, not dirty yet.  NULL on ENOMEM. */
struct thin_leaf *thin_leaf_new(int64_t id);
/* Leaf @id with one reference, its entries not loaded.  NULL on ENOMEM. */
struct thin_leaf *thin_leaf_stub(int64_t id);
/*
 * Gives stub @l the entries of @rec (provisioning flags dropped), seen by
 * lock-free readers from then on.  0 or -ENOMEM.
 */
int thin_leaf_fill(struct thin_leaf *l, const struct thin_leaf_rec *rec);
/*
 * Takes @l's entries away (NULL from then on: readers miss) and returns
 * them, for thin_leaf_entries_free once no reader can hold them.  Under
 * the pool lock.
 */
_Atomic uint32_t *thin_leaf_unload(struct thin_leaf *l);
/* Frees entries thin_leaf_unload took (NULL: nothing).  O(1), any thread. */
void thin_leaf_entries_free(_Atomic uint32_t *e);
/*
 * A buffer of THIN_LEAF_ENTRIES * 4 bytes (2 KiB), contents undefined, or
 * NULL, from the slab the leaves' entries come from: the memory that the
 * budget's evictions give back is what the walks take (thin_refs.h), so
 * a walk over a full cache reuses the cache's memory instead of adding
 * to it.  Put gives it back (NULL: nothing).  O(1), a mutex; any thread.
 */
void *thin_leaf_slab_get(void);
void thin_leaf_slab_put(void *buf);
/*
 * Gives the OS back the pages of that slab that free entries alone cover
 * (slab_trim), after leaves were unloaded or freed for good: their memory
 * then leaves the daemon instead of waiting in the slab.  Returns bytes.
 * O(f log f) for f free entries.  Any thread, no lock held; admin path
 * or the pool's worker, never a request's.
 */
size_t thin_leaf_slab_trim(void);
void thin_leaf_free(struct thin_leaf *l);
/*
 * A copy of @l, whose entries are loaded (entries only; provisioning
 * flags dropped) with one reference.  The caller takes the references on
 * the copied blocks.
 */
struct thin_leaf *thin_leaf_copy(const struct thin_leaf *l, int64_t id);

/* An empty directory of @nr slots, one reference.  NULL on ENOMEM. */
struct thin_dir *thin_dir_new(int64_t id, uint32_t nr);

/* Words of a changed-chunk bitmap of a directory of @nr slots. */
static inline size_t thin_dir_changed_words(uint32_t nr)
{
	return (nr + THIN_DIR_CHUNK * 64 - 1) / (THIN_DIR_CHUNK * 64);
}

/* Slot @i of @d points elsewhere: its chunk is written.  Pool lock held. */
static inline void thin_dir_slot_changed(struct thin_dir *d, uint32_t i)
{
	d->changed[i / THIN_DIR_CHUNK / 64] |= 1ull << (i / THIN_DIR_CHUNK % 64);
}
/*
 * A copy of @d with @nr >= d->nr slots, one reference, taking a
 * reference on every leaf it copies.  Pool lock held.
 */
struct thin_dir *thin_dir_copy(struct thin_dir *d, int64_t id, uint32_t nr);

/* Copies @l's committed entries (provisioning flags dropped) to @out; loaded. */
void thin_leaf_record(const struct thin_leaf *l, struct thin_leaf_rec *out);

#endif
