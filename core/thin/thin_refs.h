/*
 * core/thin/thin_refs.h: reference counts of a pool's data blocks, kept by
 * one thread: those check derives from the committed pages, and the copy
 * of the pool's own it compares them with.
 *
 * Two bits per block, as the pool keeps its counts (thin_alloc.h): 0, 1,
 * 2, and 3 for "three or more", whose exact count lives in an overflow
 * array reserved MAP_NORESERVE, so that its pages cost memory only where
 * blocks are shared three times or more.  0.25 bytes a block: 25 MB at
 * 1e8 blocks, where a 32-bit count per block took 400 MB (issue 22: check
 * within the memory budget).
 *
 * The fields live in pages of 2 KiB (8192 blocks) taken from the slab of
 * the leaves' entries (thin_leaf_slab_get), not from malloc: a walk first
 * reserves thin_refs_bytes from its pool's memory budget, the pool unloads
 * that many leaves' worth of entries, and the pages here are those very
 * entries' memory.  On a full cache the walk then costs no memory the
 * daemon did not hold already (issue 22: check and dump within the budget
 * on a full cache).
 */
#ifndef MAPPERFS_THIN_REFS_H
#define MAPPERFS_THIN_REFS_H

#include <stddef.h>
#include <stdint.h>

struct thin_refs {
	uint64_t nr_blocks;
	uint64_t **pages;		/* 2 bits per block, THIN_REFS_PAGE_BLOCKS a page */
	size_t nr_pages;
	uint32_t *overflow;		/* per block, exact where its field is 3 */
};

#define THIN_REFS_PAGE_WORDS	256u	/* 2 KiB: a leaf's entries */
#define THIN_REFS_PAGE_BLOCKS	(THIN_REFS_PAGE_WORDS * 32u)

/*
 * The bytes thin_refs_init takes from the leaves' slab for @nr_blocks
 * blocks (the page table and the overflow array aside): what a walk
 * reserves from its pool's budget for each of its counts.
 */
uint64_t thin_refs_bytes(uint64_t nr_blocks);

/* Counts of @nr_blocks blocks, all 0.  0, -EFBIG (past 2^32 blocks) or -ENOMEM. */
int thin_refs_init(struct thin_refs *r, uint64_t nr_blocks);
void thin_refs_exit(struct thin_refs *r);

/* Block @b's count.  O(1). */
uint32_t thin_refs_get(const struct thin_refs *r, uint64_t b);
/* One reference more on block @b.  O(1). */
void thin_refs_add(struct thin_refs *r, uint64_t b);
/* Block @b's count is @n (it was 0).  O(1). */
void thin_refs_set(struct thin_refs *r, uint64_t b, uint32_t n);
/*
 * The fields of blocks [@w * 32, @w * 32 + 32) are word @f, laid out as
 * the allocator keeps its own (thin_alloc.h); the overflow of those at 3
 * the caller sets in r->overflow.  O(1).
 */
void thin_refs_set_word(struct thin_refs *r, uint64_t w, uint64_t f);

#endif
