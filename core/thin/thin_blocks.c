#include "thin_blocks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SUMMARY_BLOCKS	(64 * 64)	/* blocks a summary word stands for */

static size_t summary_bytes(uint64_t max_blocks)
{
	return max_blocks / SUMMARY_BLOCKS * sizeof(uint64_t);
}

static void *reserve(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

int thin_blocks_init(struct thin_blocks *s, uint64_t max_blocks)
{
	memset(s, 0, sizeof(*s));
	s->max_blocks = max_blocks;
	s->listed = true;
	s->summary = reserve(summary_bytes(max_blocks));
	if (sparse_bits_init(&s->bits, max_blocks) || !s->summary) {
		thin_blocks_exit(s);
		return -ENOMEM;
	}
	return 0;
}

void thin_blocks_exit(struct thin_blocks *s)
{
	sparse_bits_exit(&s->bits);
	if (s->summary)
		munmap(s->summary, summary_bytes(s->max_blocks));
	free(s->list);
	memset(s, 0, sizeof(*s));
}

static void summarise(struct thin_blocks *s, uint64_t word)
{
	uint64_t sw = word / 64;

	s->summary[sw] |= 1ull << (word % 64);
	if (sw >= s->summary_end)
		s->summary_end = sw + 1;
}

/* The list goes; the summary marks the words of its members.  O(listed). */
static void stop_listing(struct thin_blocks *s)
{
	for (size_t i = 0; i < s->nr_listed; i++)
		summarise(s, s->list[i] / 64);
	free(s->list);
	s->list = NULL;
	s->nr_listed = s->cap_listed = 0;
	s->listed = false;
}

/* Lists block @b, or stops listing.  Listed mode. */
static void list_one(struct thin_blocks *s, uint32_t b)
{
	if (s->nr_listed == s->cap_listed) {
		size_t cap = s->cap_listed ? 2 * s->cap_listed : 1024;
		uint32_t *p = cap > THIN_BLOCKS_LISTED ? NULL : realloc(s->list, cap * sizeof(*p));

		if (!p) {
			stop_listing(s);
			summarise(s, b / 64);
			return;
		}
		s->list = p;
		s->cap_listed = cap;
	}
	s->list[s->nr_listed++] = b;
}

void thin_blocks_add_word(struct thin_blocks *s, uint64_t word, uint64_t mask)
{
	uint64_t added = sparse_bits_set(&s->bits, word, mask);

	if (!added)
		return;
	s->nr += (uint64_t)__builtin_popcountll(added);
	if (!s->listed) {
		summarise(s, word);
		return;
	}
	for (; added; added &= added - 1) {
		list_one(s, (uint32_t)(word * 64 + (uint64_t)__builtin_ctzll(added)));
		if (!s->listed) {
			summarise(s, word);	/* the rest of @added too */
			return;
		}
	}
}

bool thin_blocks_next(const struct thin_blocks *s, struct thin_blocks_walk *w,
		      uint64_t *word, uint64_t *mask)
{
	if (s->listed) {
		if (w->next >= s->nr_listed)
			return false;
		*word = s->list[w->next] / 64;
		*mask = 1ull << (s->list[w->next] % 64);
		w->next++;
		return true;
	}
	/* w->next: the summary bit (the bitmap word) to look at next. */
	for (uint64_t sw = w->next / 64; sw < s->summary_end; sw++) {
		uint64_t marks = s->summary[sw];

		if (sw == w->next / 64)
			marks &= ~0ull << (w->next % 64);
		while (marks) {
			uint64_t bw = sw * 64 + (uint64_t)__builtin_ctzll(marks);
			uint64_t m = sparse_bits_word(&s->bits, bw);

			marks &= marks - 1;
			if (!m)
				continue;
			*word = bw;
			*mask = m;
			w->next = bw + 1;
			return true;
		}
	}
	w->next = s->summary_end * 64;
	return false;
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return (a > b) - (a < b);
}

void thin_blocks_sort(struct thin_blocks *s)
{
	if (s->listed && s->nr_listed > 1)
		qsort(s->list, s->nr_listed, sizeof(*s->list), cmp_u32);
}

void thin_blocks_clear(struct thin_blocks *s)
{
	if (s->listed) {
		for (size_t i = 0; i < s->nr_listed; i++)
			sparse_bits_clear(&s->bits, s->list[i] / 64, 1ull << (s->list[i] % 64));
	} else {
		for (uint64_t sw = 0; sw < s->summary_end; sw++) {
			for (uint64_t marks = s->summary[sw]; marks; marks &= marks - 1)
				sparse_bits_clear(&s->bits, sw * 64 + (uint64_t)__builtin_ctzll(marks), ~0ull);
			s->summary[sw] = 0;
		}
		(void)madvise(s->summary, s->summary_end * sizeof(uint64_t), MADV_DONTNEED);
		s->summary_end = 0;
		s->listed = true;
	}
	/* Every bit is 0: the pages the members took go back, and read as zeros. */
	sparse_bits_trim(&s->bits);
	s->nr_listed = 0;
	s->nr = 0;
}

void thin_blocks_swap(struct thin_blocks *x, struct thin_blocks *y)
{
	struct thin_blocks t = *x;

	*x = *y;
	*y = t;
}
