#include "thin_refs.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#define MANY		3u	/* the field of a count in overflow[] */
#define PER_WORD	32u	/* fields a word */

static size_t overflow_bytes(uint64_t nr_blocks)
{
	return (size_t)(nr_blocks ? nr_blocks : 1) * sizeof(uint32_t);
}

int thin_refs_init(struct thin_refs *r, uint64_t nr_blocks)
{
	void *o;

	*r = (struct thin_refs){ 0 };
	if (nr_blocks > UINT32_MAX)
		return -EFBIG;
	o = mmap(NULL, overflow_bytes(nr_blocks), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	r->fields = calloc(nr_blocks / PER_WORD + 1, sizeof(*r->fields));
	if (o == MAP_FAILED || !r->fields) {
		if (o != MAP_FAILED)
			munmap(o, overflow_bytes(nr_blocks));
		free(r->fields);
		r->fields = NULL;
		return -ENOMEM;
	}
	r->overflow = o;
	r->nr_blocks = nr_blocks;
	return 0;
}

void thin_refs_exit(struct thin_refs *r)
{
	if (r->overflow)
		munmap(r->overflow, overflow_bytes(r->nr_blocks));
	free(r->fields);
	*r = (struct thin_refs){ 0 };
}

static uint32_t field(const struct thin_refs *r, uint64_t b)
{
	return (uint32_t)(r->fields[b / PER_WORD] >> (b % PER_WORD * 2)) & 3;
}

static void set_field(struct thin_refs *r, uint64_t b, uint32_t f)
{
	unsigned int shift = (unsigned int)(b % PER_WORD * 2);

	r->fields[b / PER_WORD] = (r->fields[b / PER_WORD] & ~(3ull << shift)) |
				  ((uint64_t)f << shift);
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
