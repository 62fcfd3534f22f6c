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
 */
#ifndef MAPPERFS_THIN_REFS_H
#define MAPPERFS_THIN_REFS_H

#include <stdint.h>

struct thin_refs {
	uint64_t nr_blocks;
	uint64_t *fields;		/* 2 bits per block */
	uint32_t *overflow;		/* per block, exact where its field is 3 */
};

/* Counts of @nr_blocks blocks, all 0.  0, -EFBIG (past 2^32 blocks) or -ENOMEM. */
int thin_refs_init(struct thin_refs *r, uint64_t nr_blocks);
void thin_refs_exit(struct thin_refs *r);

/* Block @b's count.  O(1). */
uint32_t thin_refs_get(const struct thin_refs *r, uint64_t b);
/* One reference more on block @b.  O(1). */
void thin_refs_add(struct thin_refs *r, uint64_t b);
/* Block @b's count is @n (it was 0).  O(1). */
void thin_refs_set(struct thin_refs *r, uint64_t b, uint32_t n);

#endif
