/*
 * meta/space.c: free space is what the extent table does not cover.
 *
 * There is no free list to keep in step: a device's free ranges are
 * computed from its extents, sorted by offset, each time they are asked
 * for.  That costs one indexed SELECT per device, which is nothing on the
 * admin path, and it cannot disagree with the extents.  Thin pools own
 * their data area as extents too; switch paths name offsets without owning
 * them, so they do not count.
 *
 * space_allocate() only plans: the caller inserts the extents it returns,
 * inside the same store transaction, so that nobody allocates the same
 * range in between.  Pieces start on SPACE_ALIGN boundaries and end on
 * SPACE_PIECE_ALIGN ones (a device's size need not be a multiple of
 * 4 KiB, but a volume's pieces must be, or direct I/O would straddle
 * them).
 */
#include "space.h"

#include <errno.h>
#include <stdlib.h>

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

int space_free_ranges(struct store *s, const struct device_rec *d,
		      struct space_range **out, size_t *nr)
{
	struct space_range *ranges = NULL;
	struct extent_rec *ext;
	size_t nr_ext, n = 0, cap = 0;
	uint64_t cursor = DEVICE_DATA_OFFSET;
	int r;

	r = store_extents_on_device(s, d->id, &ext, &nr_ext);
	if (r)
		return r;
	for (size_t i = 0; i <= nr_ext && cursor < d->size; i++) {
		uint64_t end = i < nr_ext ? ext[i].dev_offset : d->size;

		if (end > d->size)
			end = d->size;
		if (end > cursor) {
			r = range_push(&ranges, &n, &cap, d->id, cursor,
				       end - cursor);
			if (r)
				break;
		}
		if (i < nr_ext && ext[i].dev_offset + ext[i].length > cursor)
			cursor = ext[i].dev_offset + ext[i].length;
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

int space_free_bytes(struct store *s, const struct device_rec *d, uint64_t *out)
{
	struct space_range *ranges;
	uint64_t sum = 0;
	size_t nr;
	int r;

	r = space_free_ranges(s, d, &ranges, &nr);
	if (r)
		return r;
	for (size_t i = 0; i < nr; i++)
		sum += ranges[i].length;
	free(ranges);
	*out = sum;
	return 0;
}

/*
 * Takes up to *left bytes from the free ranges of @d, first fit, appending
 * the pieces to @v and lowering *left.
 */
static int space_take(struct store *s, const struct device_rec *d,
		      uint64_t *left, struct space_range **v, size_t *nr,
		      size_t *cap)
{
	struct space_range *ranges;
	size_t nr_ranges;
	int r;

	r = space_free_ranges(s, d, &ranges, &nr_ranges);
	if (r)
		return r;
	for (size_t i = 0; i < nr_ranges && *left; i++) {
		uint64_t start = align_up(ranges[i].offset, SPACE_ALIGN);
		uint64_t end = align_down(ranges[i].offset + ranges[i].length,
					  SPACE_PIECE_ALIGN);
		uint64_t take;

		if (start >= end)
			continue;
		take = end - start < *left ? end - start : *left;
		r = range_push(v, nr, cap, d->id, start, take);
		if (r)
			break;
		*left -= take;
	}
	free(ranges);
	return r;
}

/* Whether devices[i] appeared earlier in the list: it has been used up. */
static int space_seen(const int64_t *devices, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (devices[j] == devices[i])
			return 1;
	return 0;
}

/* First fit over @devs (in order) until *left is 0. */
static int space_take_all(struct store *s, const struct device_rec *devs,
			  size_t nr_devs, uint64_t *left,
			  struct space_range **v, size_t *nr, size_t *cap)
{
	for (size_t i = 0; i < nr_devs && *left; i++) {
		int r = space_take(s, &devs[i], left, v, nr, cap);

		if (r)
			return r;
	}
	return 0;
}

/* The device records to allocate from: @ids in order, or all of them. */
static int space_devices(struct store *s, const int64_t *ids, size_t nr_ids,
			 struct device_rec **out, size_t *nr)
{
	struct device_rec *devs;
	size_t n = 0;

	if (!nr_ids)
		return store_device_list(s, out, nr);
	devs = calloc(nr_ids, sizeof(*devs));
	if (!devs)
		return -ENOMEM;
	for (size_t i = 0; i < nr_ids; i++) {
		int r;

		if (space_seen(ids, i))
			continue;
		r = store_device_get_by_id(s, ids[i], &devs[n]);
		if (r) {
			free(devs);
			return r;
		}
		n++;
	}
	*out = devs;
	*nr = n;
	return 0;
}

int space_allocate(struct store *s, const int64_t *devices, size_t nr_devices,
		   uint64_t length, struct space_range **out, size_t *nr)
{
	struct space_range *pieces = NULL;
	struct device_rec *devs;
	size_t nr_devs, n = 0, cap = 0;
	uint64_t left = length;
	int r;

	r = space_devices(s, devices, nr_devices, &devs, &nr_devs);
	if (r)
		return r;
	r = space_take_all(s, devs, nr_devs, &left, &pieces, &n, &cap);
	free(devs);
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

int space_check_free(struct store *s, const struct device_rec *d,
		     uint64_t offset, uint64_t length)
{
	struct extent_rec *ext;
	size_t nr_ext;
	int r = 0;

	if (offset < DEVICE_DATA_OFFSET || offset > d->size ||
	    length > d->size - offset)
		return -ERANGE;
	r = store_extents_on_device(s, d->id, &ext, &nr_ext);
	if (r)
		return r;
	for (size_t i = 0; i < nr_ext && !r; i++)
		if (ext[i].dev_offset < offset + length &&
		    offset < ext[i].dev_offset + ext[i].length)
			r = -EEXIST;
	free(ext);
	return r;
}
