/*
 * core/io/space.c: free space is what the extents do not cover.
 *
 * There is no free list to keep in step: a device's free ranges are
 * computed from its extents, sorted by offset, each time they are asked
 * for.  That is nothing on the admin path, and it cannot disagree with
 * the extents.  Thin pools own their data area as extents too; switch
 * paths name offsets without owning them, so they do not count.
 *
 * space_allocate() only plans: the caller records the extents it returns
 * while it holds the pool's admin lock, so that nobody allocates the same
 * range in between.  Pieces start on SPACE_ALIGN boundaries and end on
 * SPACE_PIECE_ALIGN ones (a device's size need not be a multiple of
 * 4 KiB, but a volume's pieces must be, or direct I/O would straddle
 * them).  One function, usable(), says which part of a free range a piece
 * may take; the free space reported is the sum of those parts, so the two
 * cannot disagree.
 */
#include "space.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "label.h"

#define SPACE_PIECE_ALIGN	4096u	/* bytes: pieces end aligned */

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

static uint64_t align_down(uint64_t x, uint64_t a)
{
	return x / a * a;
}

/* Appends a range to a growing array.  0 or -ENOMEM. */
static int range_push(struct space_range **v, size_t *nr, size_t *cap,
		      int64_t device, uint64_t offset, uint64_t length)
{
	if (*nr == *cap) {
		size_t new_cap = *cap ? 2 * *cap : 8;
		struct space_range *p = realloc(*v, new_cap * sizeof(**v));

		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = new_cap;
	}
	(*v)[(*nr)++] = (struct space_range){ device, offset, length };
	return 0;
}

static int cmp_offset(const void *a, const void *b)
{
	const struct extent_rec *x = *(const struct extent_rec *const *)a;
	const struct extent_rec *y = *(const struct extent_rec *const *)b;

	return (x->dev_offset > y->dev_offset) - (x->dev_offset < y->dev_offset);
}

int space_free_ranges(const struct extent_rec *all, size_t nr_all,
		      const struct device_rec *d, struct space_range **out,
		      size_t *nr)
{
	const struct extent_rec **ext = calloc(nr_all + 1, sizeof(*ext));
	struct space_range *ranges = NULL;
	size_t nr_ext = 0, n = 0, cap = 0;
	uint64_t cursor = DEVICE_DATA_OFFSET;
	int r = 0;

	if (!ext)
		return -ENOMEM;
	for (size_t i = 0; i < nr_all; i++)
		if (all[i].device == d->id)
			ext[nr_ext++] = &all[i];
	qsort(ext, nr_ext, sizeof(*ext), cmp_offset);
	for (size_t i = 0; i <= nr_ext && cursor < d->size; i++) {
		uint64_t end = i < nr_ext ? ext[i]->dev_offset : d->size;

		if (end > d->size)
			end = d->size;
		if (end > cursor) {
			r = range_push(&ranges, &n, &cap, d->id, cursor,
				       end - cursor);
			if (r)
				break;
		}
		if (i < nr_ext && ext[i]->dev_offset + ext[i]->length > cursor)
			cursor = ext[i]->dev_offset + ext[i]->length;
	}
	free(ext);
	if (r) {
		free(ranges);
		return r;
	}
	*out = ranges;
	*nr = n;
	return 0;
}

/*
 * The part [*start, *end) of free range @r that pieces may take: from its
 * first SPACE_ALIGN boundary, or from @prefer if it starts there, to its
 * last SPACE_PIECE_ALIGN boundary.  false if there is none.
 */
static bool usable(const struct space_range *r, uint64_t prefer, uint64_t *start,
		   uint64_t *end)
{
	*start = r->offset == prefer ? prefer : align_up(r->offset, SPACE_ALIGN);
	*end = align_down(r->offset + r->length, SPACE_PIECE_ALIGN);
	return *start < *end;
}

uint64_t space_free_bytes(const struct extent_rec *ext, size_t nr_ext,
			  const struct device_rec *d, uint64_t prefer)
{
	struct space_range *ranges;
	uint64_t sum = 0, start, end;
	size_t nr;

	if (space_free_ranges(ext, nr_ext, d, &ranges, &nr))
		return 0;
	for (size_t i = 0; i < nr; i++)
		if (usable(&ranges[i], prefer, &start, &end))
			sum += end - start;
	free(ranges);
	return sum;
}

/*
 * Takes up to *left bytes from the free ranges of @d, first fit, in
 * pieces of whole @grain bytes, appending them to @v and lowering *left.
 */
static int space_take(const struct extent_rec *ext, size_t nr_ext,
		      const struct device_rec *d, uint64_t prefer, uint64_t grain,
		      uint64_t *left, struct space_range **v, size_t *nr, size_t *cap)
{
	struct space_range *ranges;
	size_t nr_ranges;
	int r;

	r = space_free_ranges(ext, nr_ext, d, &ranges, &nr_ranges);
	if (r)
		return r;
	/* The range that starts at @prefer goes first: the volume continues there. */
	for (size_t i = 1; i < nr_ranges; i++) {
		if (ranges[i].offset == prefer) {
			struct space_range t = ranges[i];

			memmove(&ranges[1], &ranges[0], i * sizeof(*ranges));
			ranges[0] = t;
			break;
		}
	}
	for (size_t i = 0; i < nr_ranges && *left; i++) {
		uint64_t start, end, take;

		if (!usable(&ranges[i], prefer, &start, &end))
			continue;
		take = end - start < *left ? end - start : *left;
		take -= take % grain;
		if (!take)
			continue;
		r = range_push(v, nr, cap, d->id, start, take);
		if (r)
			break;
		*left -= take;
	}
	free(ranges);
	return r;
}

int space_allocate(const struct extent_rec *ext, size_t nr_ext,
		   const struct device_rec *const *devs, size_t nr_devs,
		   uint64_t length, struct space_range **out, size_t *nr)
{
	return space_allocate_after(ext, nr_ext, devs, nr_devs, UINT64_MAX, length, 1, out, nr);
}

int space_allocate_after(const struct extent_rec *ext, size_t nr_ext,
			 const struct device_rec *const *devs, size_t nr_devs,
			 uint64_t prefer, uint64_t length, uint64_t grain,
			 struct space_range **out, size_t *nr)
{
	struct space_range *pieces = NULL;
	size_t n = 0, cap = 0;
	uint64_t left = length;
	int r = 0;

	for (size_t i = 0; i < nr_devs && left && !r; i++) {
		bool seen = false;

		for (size_t j = 0; j < i; j++)
			seen |= devs[j]->id == devs[i]->id;
		if (!seen)
			r = space_take(ext, nr_ext, devs[i], i ? UINT64_MAX : prefer, grain,
				       &left, &pieces, &n, &cap);
	}
	if (!r && left)
		r = -ENOSPC;
	if (r) {
		free(pieces);
		return r;
	}
	*out = pieces;
	*nr = n;
	return 0;
}
