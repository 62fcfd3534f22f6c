/*
 * core/target/switch_table.h: a switch volume's region table, region -> path,
 * packed as dm-switch packs it.
 *
 * Each entry takes the fewest bits that hold the path count (1 bit for 2
 * paths, 2 for 3 or 4, ... 8 for 256), and as many entries as fit share
 * one 64-bit word: region r lives in word r / per_word, at bit
 * (r % per_word) * bits.  When per_word is a power of two that is a shift
 * and a mask, else a division (3 bits: 21 entries a word, one bit spare).
 * A million regions over 3 paths take 256 KiB.
 *
 * Readers (map(), on the I/O path) do one acquire load of the word that
 * holds their region: no lock, and never a torn entry, because an entry
 * never straddles two words.  There is one writer at a time (the daemon's
 * control thread, or a private copy nobody else sees): it changes a
 * table with whole-word release stores, so a reader sees each word
 * either before or after a change.  A table of another shape (more
 * regions, another path count) is a new table, swapped in with RCU by its
 * owner (switch.c).
 *
 * The struct is public only so that switch_table_get() can inline.
 */
#ifndef MAPPERFS_SWITCH_TABLE_H
#define MAPPERFS_SWITCH_TABLE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define SWITCH_PATHS_MAX	256
#define SWITCH_REGIONS_MAX	(1ull << 28)	/* 256 MiB of table at 8 bits */

struct switch_table {
	uint64_t nr_regions;
	unsigned int nr_paths;		/* 2 .. SWITCH_PATHS_MAX */
	unsigned int bits;		/* per entry */
	unsigned int per_word;		/* entries in one word: 64 / bits */
	int per_word_shift;		/* log2(per_word), or -1: divide */
	uint64_t mask;			/* (1 << bits) - 1 */
	size_t nr_words;
	_Atomic uint64_t words[];
};

/* The bits an entry needs for @nr_paths paths (dm-switch's rule). */
unsigned int switch_table_bits(unsigned int nr_paths);

/*
 * Allocates a table of @nr_regions entries, all path 0.  Admin path: it
 * allocates nr_regions * bits / 8 bytes.  0, -EINVAL (fewer than 2 or
 * more than SWITCH_PATHS_MAX paths, no region, or more than
 * SWITCH_REGIONS_MAX), or -ENOMEM.
 */
int switch_table_create(uint64_t nr_regions, unsigned int nr_paths,
			struct switch_table **out);
void switch_table_destroy(struct switch_table *t);

/* A private copy of @t (for staging a change).  0 or -ENOMEM. */
int switch_table_clone(const struct switch_table *t, struct switch_table **out);

static inline size_t switch_table_word(const struct switch_table *t,
				       uint64_t region, unsigned int *shift)
{
	uint64_t w, i;

	if (t->per_word_shift >= 0) {
		w = region >> t->per_word_shift;
		i = region & (t->per_word - 1);
	} else {
		w = region / t->per_word;
		i = region - w * t->per_word;
	}
	*shift = (unsigned int)i * t->bits;
	return (size_t)w;
}

/*
 * The path of @region (< nr_regions).  One atomic load; never blocks.
 * Safe against a concurrent writer.
 */
static inline unsigned int switch_table_get(const struct switch_table *t,
					    uint64_t region)
{
	unsigned int shift;
	size_t w = switch_table_word(t, region, &shift);
	uint64_t word = atomic_load_explicit(&t->words[w], memory_order_acquire);

	return (unsigned int)((word >> shift) & t->mask);
}

/*
 * Sets @region to @path (< nr_paths) with one whole-word store.  The
 * single writer only.
 */
void switch_table_set(struct switch_table *t, uint64_t region, unsigned int path);

/* Maps region r to path r % nr_paths, as a new dm-switch table does. */
void switch_table_round_robin(struct switch_table *t);

/* 1 if @a and @b have the same regions and path count, else 0. */
int switch_table_same_shape(const struct switch_table *a,
			    const struct switch_table *b);

/*
 * Makes @live hold what @src holds (same shape), storing only the words
 * that differ.  The single writer only; readers see each word old or new.
 * Cost: one pass over the words.  Returns the number of words stored.
 */
size_t switch_table_copy_words(struct switch_table *live,
			       const struct switch_table *src);

/*
 * The table as bytes, for the store: the words in little-endian order,
 * nr_words * 8 bytes into @buf.
 */
void switch_table_export(const struct switch_table *t, uint8_t *buf);
/*
 * Fills @t from what switch_table_export() wrote for a table of this
 * shape (@len must be nr_words * 8).  0, or -EUCLEAN if the length
 * differs or an entry names a path past nr_paths.
 */
int switch_table_import(struct switch_table *t, const uint8_t *buf, size_t len);

/* How many regions each path has: @counts holds nr_paths counters. */
void switch_table_count(const struct switch_table *t, uint64_t *counts);

#endif
