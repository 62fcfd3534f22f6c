/*
 * core/pool/pool_linear.c: linear volumes in the pool service: a volume made
 * of extents, carved by the allocator (a size, optionally from some
 * devices) or placed by hand (segments, in order, as dmsetup's linear
 * table lets one).
 *
 * Hand-placed segments are checked against the pool (inside the device's
 * data area, free) and against each other before anything is written;
 * the volume row and its extents are one transaction.  Extending
 * allocates after the last extent, builds the new table, records the
 * extents and the size in one transaction, then publishes the table and
 * only after it the size, so a reader that sees the new size finds a
 * table that covers it.
 */
#include "pool_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "label.h"
#include "json.h"
#include "linear.h"
#include "log.h"
#include "size.h"
#include "space.h"
#include "volume.h"

#define VOLUME_ALIGN	4096u	/* bytes: sizes, offsets and lengths align to it */

int pool_volume_segs(struct pool *p, struct pool_volume *v,
		     const struct extent_rec *extra, size_t nr_extra,
		     struct linear_seg **out, unsigned int *nr,
		     struct pool_error *err)
{
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);
	struct linear_seg *segs = calloc(n + nr_extra + 1, sizeof(*segs));

	if (!segs)
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n + nr_extra; i++) {
		const struct extent_rec *x = i < n ? &e[i] : &extra[i - n];
		struct pool_device *d = pool_device_by_id(p, x->device);

		if (!d || !d->dev) {
			free(segs);
			if (!d)
				return pool_fail(err, -EUCLEAN, "it uses device %lld, which the pool does not have",
						 (long long)x->device);
			return pool_fail(err, -ENODEV, "its device '%s' is failed: %s",
					 d->rec.name, d->failure);
		}
		segs[i] = (struct linear_seg){ d->dev, x->dev_offset, x->length };
	}
	*out = segs;
	*nr = (unsigned int)(n + nr_extra);
	return 0;
}

int pool_allocate(struct pool *p, int64_t volume, uint32_t seq,
		  uint64_t length, struct pool_device **devs, size_t nr_devs,
		  struct extent_rec **out, size_t *nr, struct pool_error *err)
{
	return pool_allocate_after(p, volume, seq, length, devs, nr_devs, UINT64_MAX, out,
				   nr, err);
}

int pool_allocate_after(struct pool *p, int64_t volume, uint32_t seq,
			uint64_t length, struct pool_device **devs, size_t nr_devs,
			uint64_t prefer, struct extent_rec **out, size_t *nr,
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
	r = space_allocate_after(used, nr_used, recs, n, prefer, length, &pieces,
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

/* ---- build ---------------------------------------------------------------- */

/* Serves @v as a linear target over its extents and @extra. */
static int serve_linear(struct pool *p, struct pool_volume *v,
			const struct extent_rec *extra, size_t nr_extra,
			struct pool_error *err)
{
	struct linear_seg *segs;
	struct target *t;
	unsigned int nr;
	int r;

	r = pool_volume_segs(p, v, extra, nr_extra, &segs, &nr, err);
	if (r)
		return r;
	r = linear_create(segs, nr, &t);
	free(segs);
	if (r)
		return pool_fail(err, r, "cannot build its table: %s", strerror(-r));
	r = pool_volume_serve(v, t);
	return r ? pool_fail(err, r, "out of memory") : 0;
}

static int linear_build(struct pool *p, struct pool_volume *v, struct pool_error *err)
{
	return serve_linear(p, v, NULL, 0, err);
}

/* ---- create --------------------------------------------------------------- */

static int check_size(uint64_t size, const char *what, struct pool_error *err)
{
	if (!size)
		return pool_fail(err, -EINVAL, "%s must be larger than zero", what);
	if (size % VOLUME_ALIGN)
		return pool_fail(err, -EINVAL, "%s is not a multiple of 4 KiB", what);
	return 0;
}

/*
 * The volume that uses part of [off, off + len) of @dev (an extent, a
 * placed switch path: pool_used()) in *out, or NULL.  0 or -ENOMEM.
 */
static int overlapping(struct pool *p, int64_t dev, uint64_t off, uint64_t len,
		       struct pool_volume **out)
{
	struct extent_rec *used;
	size_t nr;

	*out = NULL;
	if (pool_used(p, NULL, 0, &used, &nr))
		return -ENOMEM;
	for (size_t i = 0; i < nr && !*out; i++)
		if (used[i].device == dev && used[i].dev_offset < off + len &&
		    off < used[i].dev_offset + used[i].length)
			*out = pool_volume_by_id(p, used[i].volume);
	free(used);
	return 0;
}

/* Checks the hand-placed segments; fills @ext (volume id still 0). */
static int place_segments(struct pool *p, const struct pool_linear_spec *s,
			  struct extent_rec *ext, uint64_t *size, struct pool_error *err)
{
	*size = 0;
	for (size_t i = 0; i < s->nr_segs; i++) {
		const struct pool_segment *g = &s->segs[i];
		struct pool_device *d = pool_device_by_name(p, g->device);
		struct pool_volume *other;
		uint64_t off;
		int r;

		if (!d)
			return pool_fail(err, -ENOENT, "segment '%s': no device '%s'", g->arg,
					 g->device);
		if (!d->dev)
			return pool_fail(err, -ENODEV, "segment '%s': device '%s' is failed: %s",
					 g->arg, g->device, d->failure);
		if (g->offset % VOLUME_ALIGN)
			return pool_fail(err, -EINVAL, "segment '%s': offset is not a multiple of 4 KiB",
					 g->arg);
		r = check_size(g->length, "a segment's length", err);
		if (r)
			return r;
		off = g->offset + DEVICE_DATA_OFFSET;
		if (g->offset > d->rec.size || off > d->rec.size ||
		    g->length > d->rec.size - off)
			return pool_fail(err, -ERANGE, "segment '%s' runs past the end of device '%s'",
					 g->arg, d->rec.name);
		if (overlapping(p, d->rec.id, off, g->length, &other))
			return pool_fail(err, -ENOMEM, "out of memory");
		if (other)
			return pool_fail(err, -EEXIST, "segment '%s' overlaps volume '%s'", g->arg,
					 other->rec.name);
		for (size_t k = 0; k < i; k++)
			if (ext[k].device == d->rec.id && ext[k].dev_offset < off + g->length &&
			    off < ext[k].dev_offset + ext[k].length)
				return pool_fail(err, -EEXIST, "segment '%s' overlaps segment '%s'",
						 g->arg, s->segs[k].arg);
		if (g->length > (uint64_t)INT64_MAX - *size)
			return pool_fail(err, -ERANGE, "the segments add up to more than 2^63 bytes");
		ext[i] = (struct extent_rec){ 0, (uint32_t)i, d->rec.id, off, g->length };
		*size += g->length;
	}
	return 0;
}

/* A new volume and its extents: what the store transaction writes. */
struct new_volume {
	struct volume_rec rec;
	struct extent_rec *ext;
	size_t nr_ext;
};

static int record_new_volume(struct pool *p, void *arg)
{
	struct new_volume *n = arg;
	int r;

	r = p->meta->ops->volume_insert(p->meta, &n->rec);
	for (size_t i = 0; !r && i < n->nr_ext; i++) {
		n->ext[i].volume = n->rec.id;
		r = p->meta->ops->extent_insert(p->meta, &n->ext[i]);
	}
	return r;
}

/* Plans @s's extents into @n. */
static int plan_linear(struct pool *p, const struct pool_linear_spec *s,
		       struct new_volume *n, struct pool_error *err)
{
	struct pool_device **devs;
	size_t nr_devs;
	int r;

	if (s->nr_segs) {
		n->ext = calloc(s->nr_segs, sizeof(*n->ext));
		if (!n->ext)
			return pool_fail(err, -ENOMEM, "out of memory");
		n->nr_ext = s->nr_segs;
		return place_segments(p, s, n->ext, &n->rec.size, err);
	}
	r = check_size(s->size, "the size", err);
	if (!r)
		r = pool_devices_named(p, s->on, s->nr_on, &devs, &nr_devs, err);
	if (r)
		return r;
	n->rec.size = s->size;
	r = pool_allocate(p, 0, 0, s->size, devs, nr_devs, &n->ext, &n->nr_ext, err);
	free(devs);
	return r;
}

int pool_create_linear(struct pool *p, const struct pool_linear_spec *s,
		       struct volume_rec *out, struct pool_error *err)
{
	struct new_volume n = { 0 };
	struct pool_volume *v = NULL;
	int r;

	pool_admin_lock(p);
	r = pool_check_new_name(p, s->name, err);
	if (!r)
		r = plan_linear(p, s, &n, err);
	if (r)
		goto out;
	snprintf(n.rec.name, sizeof(n.rec.name), "%s", s->name);
	snprintf(n.rec.kind, sizeof(n.rec.kind), "%s", linear_type.name);
	n.rec.read_only = s->read_only;
	/* Everything publishing needs, before the commit. */
	v = pool_volume_new(&n.rec, &linear_type);
	if (!v || pool_reserve(p, 1, n.nr_ext)) {
		r = pool_fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	r = serve_linear(p, v, n.ext, n.nr_ext, err);
	if (r)
		goto out;
	r = pool_record(p, "record the volume", record_new_volume, &n, err);
	if (r)
		goto out;
	pool_volume_recorded(v, &n.rec);
	pool_extents_publish(p, n.ext, n.nr_ext);
	pool_volume_publish(p, v);
	if (out)
		*out = v->rec;
	log_info("created linear volume '%s'", v->rec.name);
	v = NULL;
out:
	pool_volume_free(p, v);
	free(n.ext);
	pool_admin_unlock(p);
	return r;
}

/* ---- extend --------------------------------------------------------------- */

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
		      char *const *on, size_t nr_on, struct extent_plan *out,
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
	r = pool_allocate_after(p, v->rec.id, seq, more, devs, nr_devs, prefer, &out->ext,
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

static int linear_extend(struct pool *p, struct pool_volume *v, uint64_t size,
			 char *const *on, size_t nr_on, struct pool_error *err)
{
	struct linear_table *tb = NULL;
	struct extent_plan plan = { 0 };
	struct linear_seg *segs;
	unsigned int nr;
	int r;

	r = check_size(size, "the new size", err);
	if (!r)
		r = pool_plan_extents(p, v, size - v->rec.size, on, nr_on, &plan, err);
	if (r)
		return r;
	r = pool_volume_segs(p, v, plan.ext, plan.nr_ext, &segs, &nr, err);
	if (!r) {
		r = linear_table_new(segs, nr, &tb);
		free(segs);
		if (r)
			r = pool_fail(err, r, "out of memory");
	}
	if (!r)
		r = pool_record_extents(p, v, size, &plan, err);
	if (r) {
		linear_table_free(tb);
		free(plan.ext);
		return r;
	}
	/* The table covers the new size before the size shows. */
	linear_publish(v->served->target, tb);
	atomic_store(&v->served->size, size);
	pool_stale_file(p, v->rec.id);
	pool_extents_publish(p, plan.ext, plan.nr_ext);
	v->rec.size = size;
	free(plan.ext);
	return 0;
}

/* ---- status --------------------------------------------------------------- */

void pool_report_segments(struct pool *p, struct pool_volume *v, struct json *j)
{
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);

	json_array_begin(j, "segments");
	for (size_t i = 0; i < n; i++) {
		struct pool_device *d = pool_device_by_id(p, e[i].device);

		json_object_begin(j, NULL);
		json_string(j, "device", d ? d->rec.name : "?");
		json_size(j, "offset", e[i].dev_offset - DEVICE_DATA_OFFSET);
		json_size(j, "length", e[i].length);
		json_object_end(j);
	}
	json_array_end(j);
}

static int linear_check(struct pool *p, struct pool_volume *v, struct pool_check *c,
			struct pool_error *err)
{
	(void)err;
	pool_check_extent_sum(p, v, c);
	return 0;
}

struct target_type linear_type = {
	.name = "linear",
	.served = true,
	.build_order = 1,
	.build = linear_build,
	.extend = linear_extend,
	.reduce = pool_linear_reduce,
	.check = linear_check,
	.status = pool_report_segments,
};
