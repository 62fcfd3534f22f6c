#include "sparse_bits.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int sparse_bits_init(struct sparse_bits *s, uint64_t nr_bits)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t nr_pages, page_words;
	void *p;

	memset(s, 0, sizeof(*s));
	s->page_shift = (unsigned int)__builtin_ctzl((unsigned long)(page > 0 ? page : 4096) /
						     sizeof(uint64_t));
	page_words = 1ull << s->page_shift;
	nr_pages = (nr_bits + page_words * 64 - 1) / (page_words * 64);
	s->nr_words = nr_pages * page_words;
	p = mmap(NULL, s->nr_words * sizeof(uint64_t), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		memset(s, 0, sizeof(*s));
		return -ENOMEM;
	}
	s->words = p;
	(void)madvise(p, s->nr_words * sizeof(uint64_t), MADV_NOHUGEPAGE);
	s->page_bits = calloc(nr_pages ? nr_pages : 1, sizeof(*s->page_bits));
	s->emptied = calloc(nr_pages / 64 + 1, sizeof(*s->emptied));
	if (!s->page_bits || !s->emptied) {
		sparse_bits_exit(s);
		return -ENOMEM;
	}
	return 0;
}

void sparse_bits_exit(struct sparse_bits *s)
{
	if (s->words)
		munmap((void *)s->words, s->nr_words * sizeof(uint64_t));
	free(s->page_bits);
	free(s->emptied);
	memset(s, 0, sizeof(*s));
}

uint64_t sparse_bits_set(struct sparse_bits *s, uint64_t word, uint64_t mask)
{
	uint64_t added = mask & ~sparse_bits_word(s, word);

	if (added) {
		/* Counted first: a reader that finds the count 0 finds no bit. */
		if (!atomic_fetch_add(&s->page_bits[word >> s->page_shift],
				      (uint32_t)__builtin_popcountll(added)))
			s->nr_pages_set++;
		atomic_fetch_or(&s->words[word], added);
	}
	return added;
}

uint64_t sparse_bits_clear(struct sparse_bits *s, uint64_t word, uint64_t mask)
{
	uint64_t dropped = mask & sparse_bits_word(s, word);
	uint64_t page = word >> s->page_shift;
	uint32_t n;

	if (!dropped)
		return 0;	/* nothing written: an empty page is not touched */
	n = (uint32_t)__builtin_popcountll(dropped);
	atomic_fetch_and(&s->words[word], ~dropped);
	if (atomic_fetch_sub(&s->page_bits[page], n) == n) {	/* the page's last bits */
		s->emptied[page / 64] |= 1ull << (page % 64);
		s->nr_pages_set--;
	}
	return dropped;
}

/* Gives back pages [@first, @end). */
static void give_back(struct sparse_bits *s, uint64_t first, uint64_t end)
{
	(void)madvise((void *)(s->words + (first << s->page_shift)),
		      ((end - first) << s->page_shift) * sizeof(uint64_t), MADV_DONTNEED);
}

void sparse_bits_trim(struct sparse_bits *s)
{
	uint64_t nr_pages = s->nr_words >> s->page_shift;
	uint64_t run = 0, end = 0;	/* the run of pages to give back: [run, end) */

	for (uint64_t ew = 0; ew < nr_pages / 64 + 1; ew++) {
		for (uint64_t marks = s->emptied[ew]; marks; marks &= marks - 1) {
			uint64_t page = ew * 64 + (uint64_t)__builtin_ctzll(marks);

			if (atomic_load(&s->page_bits[page]))
				continue;	/* set again since */
			if (end != page) {
				if (end)
					give_back(s, run, end);
				run = page;
			}
			end = page + 1;
		}
		s->emptied[ew] = 0;
	}
	if (end)
		give_back(s, run, end);
}
