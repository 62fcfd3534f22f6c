/*
 * core/thin/thin_alloc.h: a thin pool's data blocks: reference counts and the
 * allocator.
 *
 * One count per block, the number of distinct leaves that map it, kept
 * as dm-thin's space maps keep it: two bits per block (32 per 64-bit
 * word: 0.25 bytes of RAM per block) holding 0, 1 or 2, and 3 for "three
 * or more", whose exact count lives in an overflow array of 32-bit
 * counts touched only for such blocks (reserved, MAP_NORESERVE: its
 * pages cost memory only where blocks are shared three times or more).
 * Every change moves a count by one, so a field moves by one too, with
 * one atomic add or subtract on its word.  map() reads a field with an
 * acquire load to learn whether a block is the volume's alone (field 1);
 * everything else happens under the pool lock.
 *
 * A block whose count drops to 0 is not free yet: it becomes free when
 * the transaction that dropped it commits (thin_alloc_committed).  Until
 * then the committed metadata may still map it, and reusing it would let
 * a crash leave two volumes on one block.
 *
 * For the same reason a block whose count drops but stays above 0 (a
 * copy-on-write, a discard or a removal broke its sharing) is not
 * exclusive until that transaction commits, though its count may be 1:
 * the committed metadata still maps it from another volume too, and a
 * write in place would show there after a power cut.  Such a block is
 * marked "unsharing" until then, in two bitmaps read lock-free by the
 * fast path: the open transaction's and the committing one's.  The count array is reserved
 * once for the largest pool (virtual memory, MAP_NORESERVE) so that
 * growing the pool never moves it under a reader.
 *
 * The blocks a transaction freed and those it unshared are sets of
 * thin_blocks.h: a bit a block, listed only while there are few, so that
 * a commit costs what it freed whether that is 3 blocks or all 1e8 of a
 * removed volume (12.5 MB of bits then, where a list took 400 MB).  The
 * gather hands the open transaction's freed set to the commit whole; a
 * failed commit hands it back, and pending_bits, the one bitmap
 * thin_alloc_new reads, stays set for its blocks throughout.
 *
 * Every bitmap here is a sparse_bits.h: blocks are freed and allocated
 * here and there for as long as the pool lives, and a page of bits costs
 * memory only while a bit on it is set (each commit gives back the pages
 * emptied), not for good once any block on it was touched (1e8 blocks:
 * 12.5 MB a bitmap, eight of them, grown 440 KiB per round of snapshot,
 * 16 writes and removal).
 */
#ifndef MAPPERFS_THIN_ALLOC_H
#define MAPPERFS_THIN_ALLOC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "thin_blocks.h"
#include "thin_meta.h"
#include "thin_refs.h"

#define THIN_ALLOC_MAX_BLOCKS	(1ull << 28)	/* blocks per pool: 16 TiB of 64 KiB */

struct thin_alloc {
	_Atomic uint64_t *fields;	/* 2 bits per block; reserved for MAX_BLOCKS */
	uint32_t *overflow;		/* per block, exact where its field is 3 */
	struct sparse_bits pending_bits;	/* not allocatable: freed, uncommitted or held */
	struct thin_blocks unshared;	/* count dropped in the open transaction */
	struct thin_blocks unsharing;	/* ... in the committing one */
	struct sparse_bits discarded_bits;	/* free, and discarded since it was last used */
	uint64_t nr_blocks;		/* blocks in the data area */
	uint64_t nr_free;		/* count 0 and not pending */
	uint64_t nr_shared;		/* count 2 or more: usage's shortcut */
	uint64_t cursor;		/* next block the search looks at */
	struct thin_blocks pending;	/* freed in the open transaction */
	struct thin_blocks committing;	/* freed in the one gathered, awaiting the COMMIT */
	struct thin_blocks held;	/* free but being discarded: not allocatable */
	bool held_by_trim;		/* held by thin_alloc_hold_free, not by a commit */
	/* The space map: what the next commit writes (thin_meta.h) */
	struct sparse_bits fresh_bits;	/* new, not published in a leaf yet */
	uint64_t *dirty_chunks;		/* bitmap: counts changed since gathered */
	uint32_t *dirty;		/* ... as a list */
	size_t nr_dirty, cap_dirty;
	bool space_whole;		/* the next gather takes every chunk */
	struct thin_space_rec *space;	/* gathered, awaiting the COMMIT */
	size_t nr_space;
	bool space_gathered_whole;
};

/* 0, -EFBIG past THIN_ALLOC_MAX_BLOCKS, or -ENOMEM. */
int thin_alloc_init(struct thin_alloc *a, uint64_t nr_blocks);
void thin_alloc_exit(struct thin_alloc *a);

/* Grows the area to @nr_blocks (new blocks free).  -EINVAL to shrink. */
int thin_alloc_grow(struct thin_alloc *a, uint64_t nr_blocks);

/*
 * Recounts nr_free and nr_shared once every reference was taken at load
 * time (all counts set with thin_alloc_get).  O(nr_blocks).
 */
void thin_alloc_loaded(struct thin_alloc *a);

#define THIN_ALLOC_FIELD_BITS	2
#define THIN_ALLOC_FIELDS_PER_WORD	(64 / THIN_ALLOC_FIELD_BITS)
#define THIN_ALLOC_FIELD_MANY	3u	/* the count is in overflow[] */

/* Block @b's two-bit field: its count, or THIN_ALLOC_FIELD_MANY.  Lock-free. */
static inline uint32_t thin_alloc_field(const struct thin_alloc *a, uint32_t b)
{
	uint64_t w = atomic_load_explicit(&a->fields[b / THIN_ALLOC_FIELDS_PER_WORD],
					  memory_order_acquire);

	return (uint32_t)(w >> (b % THIN_ALLOC_FIELDS_PER_WORD * THIN_ALLOC_FIELD_BITS)) & 3;
}

/* Block @b's count.  Pool lock held (the overflow is read without atomics). */
static inline uint32_t thin_alloc_refs(const struct thin_alloc *a, uint32_t b)
{
	uint32_t f = thin_alloc_field(a, b);

	return f == THIN_ALLOC_FIELD_MANY ? a->overflow[b] : f;
}

/*
 * May the one volume that maps block @b write it in place?  Its count is
 * 1 and did not drop in a transaction that has not committed.  Lock-free:
 * thin_alloc_put marks a block before its count drops.
 */
static inline bool thin_alloc_exclusive(const struct thin_alloc *a, uint32_t b)
{
	return thin_alloc_field(a, b) == 1 && !thin_blocks_has(&a->unshared, b) &&
	       !thin_blocks_has(&a->unsharing, b);
}

/*
 * Takes a free block, count 1.  0, or -ENOSPC when none is free (some may
 * be pending: see pending.nr).  Amortised O(1).
 */
int thin_alloc_new(struct thin_alloc *a, uint32_t *b);
/* A reference more on block @b. */
void thin_alloc_get(struct thin_alloc *a, uint32_t b);
/*
 * A reference less; at 0 the block waits for the next commit, above 0 it
 * is not exclusive until then.  Amortised O(1), never fails: past
 * THIN_BLOCKS_LISTED such blocks a transaction keeps them as bits only
 * (thin_blocks.h), so removing a volume of 1e8 blocks costs the bitmaps'
 * 12.5 MB, not a list of 400 MB.
 */
void thin_alloc_put(struct thin_alloc *a, uint32_t b);
/* Returns a block from thin_alloc_new that was never published. */
void thin_alloc_unnew(struct thin_alloc *a, uint32_t b);
/*
 * A block from thin_alloc_new is in a leaf now: the next commit's space
 * map counts it (until then it stores 0, as the committed leaves do).
 */
void thin_alloc_published(struct thin_alloc *a, uint32_t b);

/*
 * The space map (thin_meta.h).  A commit gathers the chunks whose counts
 * changed since the last gather (every chunk if the store's map is stale
 * or a chunk could not be listed), as the committed leaves will count:
 * blocks not yet published count 0.  Pool lock held throughout.
 */

/*
 * The store's map, chunk by chunk (each once), at load into a fresh
 * allocator; nr_free and nr_shared follow as it goes.  0 or -EUCLEAN.
 */
int thin_alloc_space_load(struct thin_alloc *a, const struct thin_space_rec *rec);
/* The store's map is stale (the counts were derived): the next commit writes all. */
void thin_alloc_space_stale(struct thin_alloc *a);
/*
 * Gathers the changed chunks into a->space for the commit (a->nr_space,
 * a->space_gathered_whole).  0, or -ENOMEM with nothing gathered.
 */
int thin_alloc_space_gather(struct thin_alloc *a);
/*
 * The commit of a->space is over: @committed, and if so whether the store
 * says its map is still @stale (then the next commit writes all); if not
 * committed, its chunks are gathered again next time.
 */
void thin_alloc_space_done(struct thin_alloc *a, bool committed, bool stale);

/*
 * Copies every block's count into @refs (thin_refs_init'ed here: its
 * pages come from the leaves' slab) and the pending blocks (freed, not
 * yet allocatable), in order, into *@pending (malloc'ed, *@nr_pending of
 * them: few, where a bit a block took 12 MB at 1e8 blocks), for check.
 * O(blocks / 32), plus the blocks counted three times or more.  Pool
 * lock held.  0 or -ENOMEM, and then nothing is allocated.
 */
int thin_alloc_copy_counts(const struct thin_alloc *a, struct thin_refs *refs,
			   uint32_t **pending, size_t *nr_pending);

/*
 * Start of a commit: what was freed so far rides on this transaction.
 * O(1) for the freed blocks, O(blocks unshared) for those (amortised as
 * thin_blocks.h says).
 */
void thin_alloc_gather(struct thin_alloc *a);
/* The transaction committed: its freed blocks become free.  O(blocks freed), amortised. */
void thin_alloc_committed(struct thin_alloc *a);
/*
 * The transaction failed: its freed blocks stay pending, and its
 * unshared blocks unshared, in the open transaction.  O(those blocks).
 */
void thin_alloc_abandoned(struct thin_alloc *a);

/*
 * Discard passdown.  A block is discarded on its device only while nobody
 * can allocate it, so that a discard never lands on a block that was
 * handed out again meanwhile: held blocks keep their pending bit until
 * thin_alloc_release().  One hold at a time (the pool's commit lock).
 */

/*
 * Instead of thin_alloc_committed(): the transaction committed, and its
 * freed blocks are held.  Returns how many; a->held is the set, to walk
 * (in block order) with thin_blocks_next until the release, without the
 * pool lock since nothing else changes it meanwhile.  O(blocks freed).
 */
uint64_t thin_alloc_hold_committed(struct thin_alloc *a);
/*
 * Holds up to @max free blocks from block *next on, moving *next past
 * the last one looked at (nr_blocks when done), leaving out those
 * discarded since they were last used (a trim after a trim discards
 * nothing).  Returns how many; a->held as above.  O(blocks looked at).
 */
uint64_t thin_alloc_hold_free(struct thin_alloc *a, uint64_t *next, uint64_t max);
/*
 * The held blocks become free; @discarded: every one of them was
 * discarded, so trim leaves them out until they are used again.  Blocks
 * a commit held (passed down) are marked so only while the marks take
 * fewer than THIN_ALLOC_PASSDOWN_MARK_PAGES pages: blocks freed here and
 * there for as long as a pool lives would otherwise mark a page for
 * each 32768 blocks, 12.5 MB at 1e8; past that a trim discards them
 * again (a hole punched twice: harmless, and counted twice in
 * discarded_bytes).  O(blocks held).
 */
#define THIN_ALLOC_PASSDOWN_MARK_PAGES	256u	/* 1 MiB of 4 KiB pages */
void thin_alloc_release(struct thin_alloc *a, bool discarded);

#endif
