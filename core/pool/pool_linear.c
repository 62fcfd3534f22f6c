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
#include "mirror.h"
#include "volume.h"

#define VOLUME_ALIGN	4096u	/* bytes: sizes, offsets and lengths align to it */

/* ---- build ---------------------------------------------------------------- */

/* Serves @v as a linear target (a mirror of them) over its extents and @extra. */
static int serve_linear(struct pool *p, struct pool_volume *v,
			const struct extent_rec *extra, size_t nr_extra,
			struct pool_error *err)
{
	unsigned int nr, legs = pool_volume_legs_with(p, v, extra, nr_extra);
	struct linear_seg *segs;
	struct target *t;
	int r;

	if (legs > 1)
		return pool_mirror_serve(p, v, legs, extra, nr_extra, err);
	if (pool_move_source_of(p, v) >= 0)
		return pool_move_serve(p, v, err);
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

static int linear_build_over(struct pool *p, struct pool_volume *v, const struct extent_rec *e,
			     size_t n, struct target **out, struct pool_error *err)
{
	struct linear_seg *segs;
	unsigned int nr;
	int r;

	(void)v;
	r = pool_extents_segs(p, e, n, &segs, &nr, err);
	if (r)
		return r;
	r = linear_create(segs, nr, out);
	free(segs);
	return r ? pool_fail(err, r, "cannot build its table: %s", strerror(-r)) : 0;
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

	if (s->mirrors && s->nr_segs)
		return pool_fail(err, -EINVAL, "a mirror's legs are carved by the allocator, "
				 "not placed by hand: give --size");
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
	if (s->mirrors)
		r = pool_mirror_plan(p, s->size, s->mirrors + 1, s->on, s->nr_on, &n->ext,
				     &n->nr_ext, err);
	else
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
	pool_mirror_recorded(p, v);
	pool_extents_publish(p, n.ext, n.nr_ext);
	pool_volume_publish(p, v);
	if (out)
		*out = v->rec;
	if (s->mirrors)
		log_info("created linear volume '%s' of %u legs", v->rec.name, s->mirrors + 1);
	else
		log_info("created linear volume '%s'", v->rec.name);
	v = NULL;
out:
	pool_volume_free(p, v);
	free(n.ext);
	pool_admin_unlock(p);
	return r;
}

/* ---- extend --------------------------------------------------------------- */

static int linear_extend(struct pool *p, struct pool_volume *v, uint64_t size,
			 char *const *on, size_t nr_on, struct pool_error *err)
{
	struct linear_table *tb = NULL;
	struct extent_plan plan = { 0 };
	unsigned int nr, legs = pool_volume_legs(p, v);
	struct linear_seg *segs;
	int r;

	r = check_size(size, "the new size", err);
	if (!r && pool_move_source_of(p, v) >= 0)
		r = pool_fail(err, -EBUSY, "volume '%s' is being moved: extend it once the move is "
			      "done (or 'mapperctl move DEVICE --abort')", v->rec.name);
	if (!r && legs > 1 && nr_on)
		r = pool_fail(err, -EINVAL, "the legs of mirror '%s' grow on their own devices: "
			      "no --on", v->rec.name);
	else if (!r && legs > 1)
		return pool_mirror_extend(p, v, legs, size, err);
	if (!r)
		r = pool_plan_extents(p, v, size - v->rec.size, 1, on, nr_on, &plan, err);
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
	unsigned int legs = pool_volume_legs(p, v);

	(void)err;
	pool_check_extent_sum(p, v, c);
	if (legs > 1)
		pool_mirror_check(p, v, legs, c);
	pool_move_check(p, v, c);
	return 0;
}

static void linear_status(struct pool *p, struct pool_volume *v, struct json *j)
{
	unsigned int legs = pool_volume_legs(p, v);

	if (legs > 1) {
		pool_mirror_status(p, v, legs, j);
		return;
	}
	pool_report_segments(p, v, j);
	if (pool_move_source_of(p, v) >= 0)
		pool_move_status(p, v, j);
}

static void linear_info(struct pool *p, struct pool_volume *v, struct pool_volume_info *out)
{
	unsigned int legs = pool_volume_legs(p, v);

	if (legs > 1)
		pool_mirror_info(v, legs, out);
	else if (pool_move_source_of(p, v) >= 0)
		pool_move_info(v, out);
}

static struct log_limit mirror_start_failed;

/* The daemon's monitor starts a mirror's background work (mirror.h), or a move's. */
static void linear_watch(struct pool *p, struct pool_volume *v)
{
	int r;

	if (pool_move_source_of(p, v) >= 0) {
		pool_move_watch(p, v);
		return;
	}
	if (!v->served || !mirror_is(v->served->target))
		return;
	r = mirror_start(v->served->target);
	if (r)
		log_error_limited(&mirror_start_failed, "volume '%s': cannot start its resync: %s",
				  v->rec.name, strerror(-r));
	pool_mirror_note_stale(p, v);
}

static void linear_release(struct pool *p, struct pool_volume *v)
{
	(void)p;
	pool_mirror_release(v);
}

struct target_type linear_type = {
	.name = "linear",
	.served = true,
	.build_order = 1,
	.build = linear_build,
	.build_over = linear_build_over,
	.extend = linear_extend,
	.reduce = pool_linear_reduce,
	.check = linear_check,
	.remove = pool_remove_with_logs,
	.status = linear_status,
	.info = linear_info,
	.watch = linear_watch,
	.release = linear_release,
};
