#include "switch_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

unsigned int switch_table_bits(unsigned int nr_paths)
{
	unsigned int bits = 1;

	while ((1u << bits) < nr_paths)
		bits++;
	return bits;
}

static int log2_exact(unsigned int n)
{
	int s = 0;

	if (n & (n - 1))
		return -1;
	while ((1u << s) < n)
		s++;
	return s;
}

static size_t table_bytes(size_t nr_words)
{
	return sizeof(struct switch_table) + nr_words * sizeof(uint64_t);
}

int switch_table_create(uint64_t nr_regions, unsigned int nr_paths,
			struct switch_table **out)
{
	unsigned int bits, per_word;
	struct switch_table *t;
	size_t nr_words;

	if (nr_paths < 2 || nr_paths > SWITCH_PATHS_MAX || !nr_regions ||
	    nr_regions > SWITCH_REGIONS_MAX)
		return -EINVAL;
	bits = switch_table_bits(nr_paths);
	per_word = 64 / bits;
	nr_words = (size_t)((nr_regions + per_word - 1) / per_word);
	t = calloc(1, table_bytes(nr_words));
	if (!t)
		return -ENOMEM;
	t->nr_regions = nr_regions;
	t->nr_paths = nr_paths;
	t->bits = bits;
	t->per_word = per_word;
	t->per_word_shift = log2_exact(per_word);
	t->mask = (1ull << bits) - 1;
	t->nr_words = nr_words;
	*out = t;
	return 0;
}

void switch_table_destroy(struct switch_table *t)
{
	free(t);
}

int switch_table_clone(const struct switch_table *t, struct switch_table **out)
{
	struct switch_table *c = malloc(table_bytes(t->nr_words));

	if (!c)
		return -ENOMEM;
	*c = *t;
	for (size_t i = 0; i < t->nr_words; i++)
		atomic_init(&c->words[i], atomic_load_explicit(&t->words[i],
							       memory_order_relaxed));
	*out = c;
	return 0;
}

void switch_table_set(struct switch_table *t, uint64_t region, unsigned int path)
{
	unsigned int shift;
	size_t w = switch_table_word(t, region, &shift);
	uint64_t word = atomic_load_explicit(&t->words[w], memory_order_relaxed);

	word &= ~(t->mask << shift);
	word |= (uint64_t)path << shift;
	atomic_store_explicit(&t->words[w], word, memory_order_release);
}

/*
 * Whole words at a time: the round-robin pattern is built in a local word
 * and stored once, which matters for a million regions.
 */
void switch_table_round_robin(struct switch_table *t)
{
	uint64_t region = 0;
	unsigned int path = 0;

	for (size_t w = 0; w < t->nr_words; w++) {
		uint64_t word = 0;

		for (unsigned int i = 0; i < t->per_word && region < t->nr_regions;
		     i++, region++) {
			word |= (uint64_t)path << (i * t->bits);
			if (++path == t->nr_paths)
				path = 0;
		}
		atomic_store_explicit(&t->words[w], word, memory_order_release);
	}
}

int switch_table_same_shape(const struct switch_table *a,
			    const struct switch_table *b)
{
	return a->nr_regions == b->nr_regions && a->nr_paths == b->nr_paths;
}

size_t switch_table_copy_words(struct switch_table *live,
			       const struct switch_table *src)
{
	size_t stored = 0;

	for (size_t i = 0; i < live->nr_words; i++) {
		uint64_t w = atomic_load_explicit(&src->words[i], memory_order_relaxed);

		if (atomic_load_explicit(&live->words[i], memory_order_relaxed) == w)
			continue;
		atomic_store_explicit(&live->words[i], w, memory_order_release);
		stored++;
	}
	return stored;
}

void switch_table_export(const struct switch_table *t, uint8_t *buf)
{
	for (size_t i = 0; i < t->nr_words; i++) {
		uint64_t w = atomic_load_explicit(&t->words[i], memory_order_relaxed);

		for (unsigned int b = 0; b < 8; b++)
			buf[i * 8 + b] = (uint8_t)(w >> (8 * b));
	}
}

/* 1 if every entry of @w that holds a region names a path < nr_paths. */
static int word_valid(const struct switch_table *t, uint64_t w, size_t index)
{
	uint64_t first = (uint64_t)index * t->per_word;

	for (unsigned int i = 0; i < t->per_word && first + i < t->nr_regions; i++)
		if (((w >> (i * t->bits)) & t->mask) >= t->nr_paths)
			return 0;
	return 1;
}

int switch_table_import(struct switch_table *t, const uint8_t *buf, size_t len)
{
	if (len != t->nr_words * 8)
		return -EUCLEAN;
	for (size_t i = 0; i < t->nr_words; i++) {
		uint64_t w = 0;

		for (unsigned int b = 0; b < 8; b++)
			w |= (uint64_t)buf[i * 8 + b] << (8 * b);
		if (!word_valid(t, w, i))
			return -EUCLEAN;
		atomic_store_explicit(&t->words[i], w, memory_order_release);
	}
	return 0;
}

void switch_table_count(const struct switch_table *t, uint64_t *counts)
{
	uint64_t region = 0;

	memset(counts, 0, t->nr_paths * sizeof(*counts));
	for (size_t w = 0; w < t->nr_words; w++) {
		uint64_t word = atomic_load_explicit(&t->words[w], memory_order_relaxed);

		for (unsigned int i = 0; i < t->per_word && region < t->nr_regions;
		     i++, region++)
			counts[(word >> (i * t->bits)) & t->mask]++;
	}
}
