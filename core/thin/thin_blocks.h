/*
 * core/thin/thin_blocks.h: a set of a thin pool's data blocks whose walk
 * and emptying cost O(members), whether it holds three blocks or every
 * block of the pool.
 *
 * The allocator keeps four such sets: the blocks freed in the open
 * transaction and in the committing one, the blocks held for a discard,
 * and (readers look at these bits lock-free) the blocks whose sharing was
 * broken in the open and in the committing transaction.  Removing the
 * last volume of 1e8 blocks frees them all in one transaction: a list of
 * them took 4 bytes a block (400 MB, doubling as it grew, then copied
 * when a commit failed), so the set keeps a list only while it is small.
 *
 * A member is a bit in @bits, a bit a block, reserved once for the
 * largest pool (sparse_bits.h: pages cost memory only where members are,
 * and are given back when the set is emptied; 12.5 MB at 1e8 blocks).  While the set has at most THIN_BLOCKS_LISTED
 * members they are also listed, so that a walk or an emptying touches
 * them alone: a commit that freed 3 blocks in a pool of 1e8 costs 3 steps.
 * Past that the list goes, and a summary, a bit for each 64-bit word of
 * @bits, marks the words that hold members: a walk reads the summary up to
 * the last word marked (a word a 4096 blocks: 24414 words at 1e8 blocks)
 * and the words it marks.  Only a set that had THIN_BLOCKS_LISTED members
 * walks so, so the cost is still O(members), amortised.
 *
 * Members are added and removed under the owner's lock; @bits may be read
 * without it (atomic loads), and an add sets the bit before it returns.
 */
#ifndef MAPPERFS_THIN_BLOCKS_H
#define MAPPERFS_THIN_BLOCKS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sparse_bits.h"

#define THIN_BLOCKS_LISTED	65536u	/* members listed at most: 256 KiB */

struct thin_blocks {
	struct sparse_bits bits;	/* a bit a block: the members */
	uint64_t *summary;		/* a bit a word of bits, unless listed */
	uint64_t summary_end;		/* summary words past this are 0 */
	uint32_t *list;			/* every member, while listed */
	size_t nr_listed, cap_listed;
	bool listed;			/* the list holds every member */
	uint64_t nr;			/* members */
	uint64_t max_blocks;		/* blocks the bitmaps reserve */
};

/* An empty set for blocks below @max_blocks (a multiple of 4096).  0 or -ENOMEM. */
int thin_blocks_init(struct thin_blocks *s, uint64_t max_blocks);
void thin_blocks_exit(struct thin_blocks *s);

/* Is block @b a member?  Lock-free. */
static inline bool thin_blocks_has(const struct thin_blocks *s, uint32_t b)
{
	return sparse_bits_test(&s->bits, b);
}

/*
 * Adds the blocks of @mask in word @word of the bitmap (blocks word * 64
 * + i for each bit i), those already in left alone.  Never fails: when
 * the list cannot grow, the set goes to its summary.  O(bits of @mask),
 * O(members listed) once when the set passes THIN_BLOCKS_LISTED.
 */
void thin_blocks_add_word(struct thin_blocks *s, uint64_t word, uint64_t mask);

/* Adds block @b (see thin_blocks_add_word).  O(1) amortised. */
static inline void thin_blocks_add(struct thin_blocks *s, uint32_t b)
{
	thin_blocks_add_word(s, b / 64, 1ull << (b % 64));
}

/*
 * A walk of a set, word by word: *@word and *@mask say which blocks
 * (as thin_blocks_add_word takes them).  Listed members come one a step,
 * in the order of the list (see thin_blocks_sort); otherwise the words
 * come in block order.  false once the walk is over.  The set must not
 * change during a walk.
 */
struct thin_blocks_walk {
	uint64_t next;			/* list index, or summary bit */
};
#define THIN_BLOCKS_WALK_INIT	{ 0 }
bool thin_blocks_next(const struct thin_blocks *s, struct thin_blocks_walk *w,
		      uint64_t *word, uint64_t *mask);

/* Lists the members in block order, so a walk comes in block order.  O(n log n), n <= LISTED. */
void thin_blocks_sort(struct thin_blocks *s);

/*
 * Drops every member (clears its bit atomically, so lock-free readers
 * see each bit either set or clear) and gives back the pages its bits
 * took.  O(members), amortised, and a madvise a run of pages emptied.
 */
void thin_blocks_clear(struct thin_blocks *s);

/* Exchanges the contents of two sets (bitmaps included).  O(1). */
void thin_blocks_swap(struct thin_blocks *x, struct thin_blocks *y);

#endif
