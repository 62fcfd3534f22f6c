/*
 * core/util/sparse_bits.h: a large bitmap whose memory follows the bits set.
 *
 * The bitmap is reserved once for its largest size (MAP_NORESERVE): a page
 * costs memory only once a bit on it is set.  But a bit set and cleared
 * again leaves its page resident, and bits set here and there over time
 * (a thin pool's blocks, freed and allocated at random) would, page by
 * page, make the whole bitmap resident: 12.5 MB at 1e8 blocks, for each of
 * a pool's eight.  So the bitmap counts the bits set on each page, and a
 * page whose count drops to 0 is marked; sparse_bits_trim() gives back the
 * marked pages still empty (MADV_DONTNEED: they read as zeros again).
 * The trim is the owner's to call at its own rhythm (a commit), so that a
 * page whose one bit is set and cleared again and again (blocks provisioned
 * one after another) is not given back and faulted in for every bit.
 *
 * Reads look at the page's count first and do not touch a page that holds
 * no bit: a read fault maps the kernel's shared page of zeros, but not
 * everywhere (this project's VMs boot with pvm_no_zero_page=1, and a read
 * there costs a page as a write does), and the allocator reads the bits
 * of every free block it passes.
 *
 * Resident memory is then at most the pages holding a bit set, plus those
 * emptied since the last trim.  The counts and marks take 4 bytes and a
 * bit a page (33 KiB for 2^28 bits).  Transparent huge pages are refused
 * for the bitmap: a 2 MiB page would make 512 pages resident for one bit.
 *
 * Bits change, and the trim runs, under the owner's lock; reads may come
 * from any thread without it.  Every access to the counts and the words
 * is a sequentially consistent atomic, as a plain bitmap's were, so that
 * a lock-free reader of two bitmaps sees their changes in the order the
 * owner made them (thin_alloc_gather: a block set in one set before it
 * is cleared in the other).  A set counts the page's bits before it sets
 * them and a clear clears before it counts, so a reader that finds a
 * count of 0 would have found the bits clear; a page is given back only
 * while its count is 0.
 */
#ifndef MAPPERFS_SPARSE_BITS_H
#define MAPPERFS_SPARSE_BITS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sparse_bits {
	_Atomic uint64_t *words;	/* the bitmap; reserved */
	_Atomic uint32_t *page_bits;	/* bits set on each page */
	uint64_t *emptied;		/* a bit a page: its count dropped to 0 since the trim */
	uint64_t nr_words;		/* words reserved */
	uint64_t nr_pages_set;		/* pages holding a bit */
	unsigned int page_shift;	/* log2 of the words a page */
};

/*
 * An empty bitmap of @nr_bits (rounded up to whole pages).  One mmap and
 * two small callocs; 0 or -ENOMEM.
 */
int sparse_bits_init(struct sparse_bits *s, uint64_t nr_bits);
/* Unmaps and frees; a zeroed or failed-init @s is fine. */
void sparse_bits_exit(struct sparse_bits *s);

/* Word @word of the bitmap (bits word * 64 + i).  Lock-free. */
static inline uint64_t sparse_bits_word(const struct sparse_bits *s, uint64_t word)
{
	if (!atomic_load(&s->page_bits[word >> s->page_shift]))
		return 0;	/* its page is not read */
	return atomic_load(&s->words[word]);
}

/* Is bit @bit set?  Lock-free. */
static inline bool sparse_bits_test(const struct sparse_bits *s, uint64_t bit)
{
	return (sparse_bits_word(s, bit / 64) >> (bit % 64)) & 1;
}

/*
 * Sets the bits of @mask in word @word; returns those that were clear.
 * A page is written only if a bit of it changes.  O(1).  Owner's lock.
 */
uint64_t sparse_bits_set(struct sparse_bits *s, uint64_t word, uint64_t mask);
/* Clears the bits of @mask in word @word; returns those that were set.  As above. */
uint64_t sparse_bits_clear(struct sparse_bits *s, uint64_t word, uint64_t mask);

/*
 * Gives back the pages emptied since the last trim that are still empty,
 * neighbours in one madvise.  O(pages / 64) plus a call a run of emptied
 * pages.  Owner's lock.
 */
void sparse_bits_trim(struct sparse_bits *s);

#endif
