#include "thin_refs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "thin_map.h"

#define MANY		3u	/* the field of a count in overflow[] */
#define PER_WORD	32u	/* fields a word */

_Static_assert(THIN_REFS_PAGE_WORDS * sizeof(uint64_t) == THIN_LEAF_ENTRIES * sizeof(uint32_t),
	       "a page of fields is a leaf's entries");

static size_t overflow_bytes(uint64_t nr_blocks)
{
	return (size_t)(nr_blocks ? nr_blocks : 1) * sizeof(uint32_t);
}

static size_t nr_pages(uint64_t nr_blocks)
{
	return (size_t)(nr_blocks / THIN_REFS_PAGE_BLOCKS + 1);
}

uint64_t thin_refs_bytes(uint64_t nr_blocks)
{
	return (uint64_t)nr_pages(nr_blocks) * THIN_REFS_PAGE_WORDS * sizeof(uint64_t);
}

int thin_refs_init(struct thin_refs *r, uint64_t nr_blocks)
{
	void *o;

	*r = (struct thin_refs){ 0 };
	if (nr_blocks > UINT32_MAX)
		return -EFBIG;
	o = mmap(NULL, overflow_bytes(nr_blocks), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (o == MAP_FAILED)
		return -ENOMEM;
	r->overflow = o;
	r->nr_blocks = nr_blocks;
	r->pages = calloc(nr_pages(nr_blocks), sizeof(*r->pages));
	if (!r->pages) {
		thin_refs_exit(r);
		return -ENOMEM;
	}
	for (; r->nr_pages < nr_pages(nr_blocks); r->nr_pages++) {
		uint64_t *page = thin_leaf_slab_get();

		if (!page) {
			thin_refs_exit(r);
			return -ENOMEM;
		}
		memset(page, 0, THIN_REFS_PAGE_WORDS * sizeof(*page));
		r->pages[r->nr_pages] = page;
	}
	return 0;
}

void thin_refs_exit(struct thin_refs *r)
{
	if (r->overflow)
		munmap(r->overflow, overflow_bytes(r->nr_blocks));
	for (size_t i = 0; i < r->nr_pages; i++)
		thin_leaf_slab_put(r->pages[i]);
	free(r->pages);
	*r = (struct thin_refs){ 0 };
}

static uint64_t *word(const struct thin_refs *r, uint64_t b)
{
	return &r->pages[b / THIN_REFS_PAGE_BLOCKS][b % THIN_REFS_PAGE_BLOCKS / PER_WORD];
}

static uint32_t field(const struct thin_refs *r, uint64_t b)
{
	return (uint32_t)(*word(r, b) >> (b % PER_WORD * 2)) & 3;
}

static void set_field(struct thin_refs *r, uint64_t b, uint32_t f)
{
	unsigned int shift = (unsigned int)(b % PER_WORD * 2);
	uint64_t *w = word(r, b);

	*w = (*w & ~(3ull << shift)) | ((uint64_t)f << shift);
}

uint32_t thin_refs_get(const struct thin_refs *r, uint64_t b)
{
	uint32_t f = field(r, b);

	return f == MANY ? r->overflow[b] : f;
}

void thin_refs_add(struct thin_refs *r, uint64_t b)
{
	uint32_t f = field(r, b);

	if (f == MANY) {
		r->overflow[b]++;
	} else if (f == MANY - 1) {
		r->overflow[b] = MANY;
		set_field(r, b, MANY);
	} else {
		set_field(r, b, f + 1);
	}
}

void thin_refs_set(struct thin_refs *r, uint64_t b, uint32_t n)
{
	if (n >= MANY)
		r->overflow[b] = n;
	set_field(r, b, n >= MANY ? MANY : n);
}

void thin_refs_set_word(struct thin_refs *r, uint64_t w, uint64_t f)
{
	*word(r, w * PER_WORD) = f;
}
