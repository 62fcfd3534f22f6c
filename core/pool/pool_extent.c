/*
 * core/pool/pool_extent.c: extents, the pieces of raw devices a volume owns:
 * carved by the allocator (space.h) for a new volume, a growing one, or a
 * mirror's leg, and turned into the segments a linear target serves.
 * Every kind that owns extents (linear volumes and their mirror legs,
 * thin pools' data areas) plans and records them here.
 */
#include "pool_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linear.h"
#include "size.h"
#include "space.h"

unsigned int pool_volume_legs_with(struct pool *p, const struct pool_volume *v,
				   const struct extent_rec *extra, size_t nr_extra)
{
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);
	unsigned int legs = 1;

	for (size_t i = 0; i < n + nr_extra; i++) {
		const struct extent_rec *x = i < n ? &e[i] : &extra[i - n];

		if (pool_extent_leg(x) != POOL_LEG_MOVE && pool_extent_leg(x) + 1 > legs)
			legs = pool_extent_leg(x) + 1;
	}
	return legs;
}

unsigned int pool_volume_legs(struct pool *p, const struct pool_volume *v)
{
	return pool_volume_legs_with(p, v, NULL, 0);
}

/* The segment of extent @x, on its device if that is open. */
static int extent_seg(struct pool *p, const struct extent_rec *x, struct linear_seg *out,
		      struct pool_error *err)
{
	struct pool_device *d = pool_device_by_id(p, x->device);

	if (!d)
		return pool_fail(err, -EUCLEAN, "it uses device %lld, which the pool does not have",
				 (long long)x->device);
	if (!d->dev)
		return pool_fail(err, -ENODEV, "its device '%s' is failed: %s", d->rec.name,
				 d->failure);
	*out = (struct linear_seg){ d->dev, x->dev_offset, x->length };
	return 0;
}

int pool_leg_segs(struct pool *p, struct pool_volume *v, unsigned int leg,
		  const struct extent_rec *extra, size_t nr_extra,
		  struct linear_seg **out, unsigned int *nr, struct pool_error *err)
{
	size_t n, k = 0;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);
	struct linear_seg *segs = calloc(n + nr_extra + 1, sizeof(*segs));

	if (!segs)
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n + nr_extra; i++) {
		const struct extent_rec *x = i < n ? &e[i] : &extra[i - n];
		int r;

		if (pool_extent_leg(x) != leg)
			continue;
		r = extent_seg(p, x, &segs[k++], err);
		if (r) {
			free(segs);
			return r;
		}
	}
	*out = segs;
	*nr = (unsigned int)k;
	return 0;
}

int pool_extents_segs(struct pool *p, const struct extent_rec *e, size_t n,
		      struct linear_seg **out, unsigned int *nr, struct pool_error *err)
{
	struct linear_seg *segs = calloc(n + 1, sizeof(*segs));
	int r = segs ? 0 : pool_fail(err, -ENOMEM, "out of memory");

	for (size_t i = 0; !r && i < n; i++)
		r = extent_seg(p, &e[i], &segs[i], err);
	if (r) {
		free(segs);
		return r;
	}
	*out = segs;
	*nr = (unsigned int)n;
	return 0;
}

int pool_volume_segs(struct pool *p, struct pool_volume *v,
		     const struct extent_rec *extra, size_t nr_extra,
		     struct linear_seg **out, unsigned int *nr,
		     struct pool_error *err)
{
	return pool_leg_segs(p, v, 0, extra, nr_extra, out, nr, err);
}

int pool_find_whole(struct pool *p, const struct pool_device *d, uint64_t length,
		    const struct extent_rec *extra, size_t nr_extra, uint64_t *offset)
{
	struct space_range *free_ranges = NULL;
	struct extent_rec *used;
	size_t nr = 0, nr_used;
	int r;

	if (pool_used(p, extra, nr_extra, &used, &nr_used))
		return -ENOMEM;
	r = space_free_ranges(used, nr_used, &d->rec, &free_ranges, &nr);
	free(used);
	if (r)
		return r;
	r = -ENOSPC;
	for (size_t i = 0; i < nr && r; i++) {
		uint64_t start = (free_ranges[i].offset + SPACE_ALIGN - 1) / SPACE_ALIGN * SPACE_ALIGN;
		uint64_t end = free_ranges[i].offset + free_ranges[i].length;

		if (start < end && end - start >= length) {
			*offset = start;
			r = 0;
		}
	}
	free(free_ranges);
	return r;
}

int pool_allocate(struct pool *p, int64_t volume, uint32_t seq,
		  uint64_t length, struct pool_device **devs, size_t nr_devs,
		  struct extent_rec **out, size_t *nr, struct pool_error *err)
{
	return pool_allocate_after(p, volume, seq, length, devs, nr_devs, UINT64_MAX, 1, out,
				   nr, err);
}

int pool_allocate_after(struct pool *p, int64_t volume, uint32_t seq,
			uint64_t length, struct pool_device **devs, size_t nr_devs,
			uint64_t prefer, uint64_t grain, struct extent_rec **out, size_t *nr,
			struct pool_error *err)
{
	const struct device_rec **recs = calloc(p->nr_devs + 1, sizeof(*recs));
	char want[SIZE_STR_LEN], have[SIZE_STR_LEN];
	struct space_range *pieces = NULL;
	struct extent_rec *used = NULL;
	uint64_t free_bytes = 0;
	size_t n = 0, nr_pieces = 0, nr_used;
	int r;

	if (!recs || pool_used(p, NULL, 0, &used, &nr_used)) {
		free(recs);
		return pool_fail(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < (nr_devs ? nr_devs : p->nr_devs); i++) {
		struct pool_device *d = nr_devs ? devs[i] : p->devs[i];

		if (d->dev)		/* nothing is carved from a failed device */
			recs[n++] = &d->rec;
	}
	r = space_allocate_after(used, nr_used, recs, n, prefer, length, grain, &pieces,
				 &nr_pieces);
	if (r == -ENOSPC) {
		char names[POOL_ERROR_LEN / 2] = "";
		size_t len = 0;

		for (size_t i = 0; i < n; i++) {
			free_bytes += space_free_bytes(used, nr_used, recs[i],
						       i ? UINT64_MAX : prefer);
			if (len < sizeof(names))
				len += (size_t)snprintf(names + len, sizeof(names) - len,
							"%s%s", i ? ", " : "", recs[i]->name);
		}
		format_size(length, want);
		format_size(free_bytes, have);
		if (!strcmp(want, have))	/* rounded alike: the bytes tell */
			r = pool_fail(err, r, "not enough free space for %llu bytes on device(s) %s (%llu bytes free)",
				      (unsigned long long)length, n ? names : "(none)",
				      (unsigned long long)free_bytes);
		else
			r = pool_fail(err, r, "not enough free space for %s on device(s) %s (%s free)",
				      want, n ? names : "(none)", have);
	} else if (r) {
		r = pool_fail(err, r, "out of memory");
	}
	free(recs);
	free(used);
	if (r)
		return r;
	*out = calloc(nr_pieces + 1, sizeof(**out));
	if (!*out) {
		free(pieces);
		return pool_fail(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < nr_pieces; i++)
		(*out)[i] = (struct extent_rec){ volume, seq + (uint32_t)i, pieces[i].device,
						 pieces[i].offset, pieces[i].length };
	*nr = nr_pieces;
	free(pieces);
	return 0;
}

/*
 * A volume that grows with no --on continues where it ends: on the
 * device of its last extent, then on the other devices it uses, then on
 * the rest (LVM's contiguous-then-normal).  *devs malloc'ed.
 */
static int prefer_own_devices(struct pool *p, const struct extent_rec *e, size_t n,
			      struct pool_device ***devs, size_t *nr_devs,
			      struct pool_error *err)
{
	struct pool_device **v = calloc(p->nr_devs + 1, sizeof(*v));
	size_t k = 0;

	if (!v)
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t pass = 0; pass < 3; pass++) {
		for (size_t i = 0; i < p->nr_devs; i++) {
			struct pool_device *d = p->devs[i];
			bool last = d->rec.id == e[n - 1].device, used = false, seen = false;

			for (size_t j = 0; j < n; j++)
				used |= e[j].device == d->rec.id;
			for (size_t j = 0; j < k; j++)
				seen |= v[j] == d;
			if (!seen && (pass == 2 || (pass == 0 && last) || (pass == 1 && used)))
				v[k++] = d;
		}
	}
	free(*devs);
	*devs = v;
	*nr_devs = k;
	return 0;
}

int pool_plan_extents(struct pool *p, struct pool_volume *v, uint64_t more,
		      uint64_t grain, char *const *on, size_t nr_on, struct extent_plan *out,
		      struct pool_error *err)
{
	struct pool_device **devs;
	size_t nr_devs, n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);
	uint32_t seq = n ? e[n - 1].seq + 1 : 0;
	int r;

	uint64_t prefer = UINT64_MAX;

	r = pool_devices_named(p, on, nr_on, &devs, &nr_devs, err);
	if (!r && !nr_on && n)
		r = prefer_own_devices(p, e, n, &devs, &nr_devs, err);
	if (r)
		return r;
	if (nr_devs && n && devs[0]->rec.id == e[n - 1].device)
		prefer = e[n - 1].dev_offset + e[n - 1].length;
	r = pool_allocate_after(p, v->rec.id, seq, more, devs, nr_devs, prefer, grain, &out->ext,
				&out->nr_ext, err);
	free(devs);
	if (!r && pool_reserve(p, 0, out->nr_ext)) {
		free(out->ext);
		r = pool_fail(err, -ENOMEM, "out of memory");
	}
	return r;
}

struct growth {
	const struct pool_volume *v;
	uint64_t size;
	const struct extent_plan *plan;
};

static int record_growth(struct pool *p, void *arg)
{
	const struct growth *g = arg;
	int r = 0;

	for (size_t i = 0; !r && i < g->plan->nr_ext; i++)
		r = p->meta->ops->extent_insert(p->meta, &g->plan->ext[i]);
	return r ? r : p->meta->ops->volume_set_size(p->meta, g->v->rec.id, g->size);
}

int pool_record_extents(struct pool *p, struct pool_volume *v, uint64_t size,
			const struct extent_plan *plan, struct pool_error *err)
{
	struct growth g = { v, size, plan };

	return pool_record(p, "record the new size", record_growth, &g, err);
}
