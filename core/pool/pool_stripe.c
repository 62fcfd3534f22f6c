/*
 * core/pool/pool_stripe.c: striped linear volumes in the pool service
 * (lvcreate -i N -I SIZE; the target is dm-stripe's, core/target/stripe.h).
 *
 * A striped volume is a linear volume with a stripe row: the store keeps
 * its kind "linear", and striped_type claims the volumes that have one
 * when they load (target_type_load), so pool_linear.c knows nothing of
 * it.
 * Its data is interleaved over N stripes in chunks of a power-of-two
 * size; each stripe is a run of extents on one device of its own, the
 * stripe's number in the high bits of each extent's seq (records.h).
 *
 * The size is a whole number of stripe rows (N x chunk), as LVM rounds
 * it up to a whole stripe, so every stripe holds size / N bytes, and
 * growing or shrinking moves each stripe's end alike: the chunks below
 * the old end keep their place (chunk c stays chunk c / N of stripe
 * c % N whatever the size), so extend and reduce move no data.
 *
 * Creating carves each stripe from one device, the first of the devices
 * (--on, in order, or all) that has room for it and carries no other
 * stripe; extending grows each stripe on its own device, right after its
 * last extent where there is room; reducing shortens each stripe.  Every
 * change has the service's shape: plan, build the new table, record in
 * one transaction, publish (the table before a larger size, after a
 * smaller one).
 */
#include "pool_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "label.h"
#include "log.h"
#include "size.h"
#include "stripe.h"
#include "volume.h"

#define VOLUME_ALIGN	4096u

static uint32_t stripe_of(const struct extent_rec *e)
{
	return e->seq >> STRIPE_SEQ_SHIFT;
}

/* The stripe row of volume @id in @img, or NULL. */
static const struct stripe_rec *row_in(const struct pool_meta_image *img, int64_t id)
{
	for (size_t i = 0; i < img->nr_stripes; i++)
		if (img->stripes[i].volume == id)
			return &img->stripes[i];
	return NULL;
}

static bool striped_claims(const struct volume_rec *rec, const struct pool_meta_image *img)
{
	return row_in(img, rec->id) != NULL;
}

static int striped_attach(struct pool_volume *v, const struct pool_meta_image *img)
{
	v->stripe = *row_in(img, v->rec.id);
	return 0;
}

/* Bytes of one row of @s: one chunk of every stripe. */
static uint64_t row_of(const struct stripe_rec *s)
{
	return (uint64_t)s->stripes * s->stripe_size;
}

/* @size rounded up to whole rows of @row bytes in *out; -ERANGE past 2^63. */
static int round_to_rows(uint64_t size, uint64_t row, uint64_t *out, struct pool_error *err)
{
	if (size > (uint64_t)INT64_MAX - row)
		return pool_fail(err, -ERANGE, "the size is too large");
	*out = (size + row - 1) / row * row;
	return 0;
}

/* The live table of @v over extents @e[0..n) (any stripe order). */
static int table_of(struct pool *p, const struct pool_volume *v, const struct extent_rec *e,
		    size_t n, struct stripe_table **out, struct pool_error *err)
{
	struct stripe_piece *pieces = calloc(n + 1, sizeof(*pieces));
	int r = 0;

	if (!pieces)
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n && !r; i++) {
		struct pool_device *d = pool_device_by_id(p, e[i].device);

		if (!d)
			r = pool_fail(err, -EUCLEAN, "it uses device %lld, which the pool does not have",
				      (long long)e[i].device);
		else if (!d->dev)
			r = pool_fail(err, -ENODEV, "its device '%s' is failed: %s", d->rec.name,
				      d->failure);
		else
			pieces[i] = (struct stripe_piece){ stripe_of(&e[i]), d->dev, e[i].dev_offset,
							   e[i].length };
	}
	if (!r) {
		r = stripe_table_new(v->stripe.stripes, v->stripe.stripe_size, pieces,
				     (unsigned int)n, out);
		if (r == -EINVAL)
			r = pool_fail(err, -EUCLEAN, "its extents do not make its %u stripes of %u bytes",
				      v->stripe.stripes, v->stripe.stripe_size);
		else if (r)
			r = pool_fail(err, r, "out of memory");
	}
	free(pieces);
	return r;
}

static int striped_build_over(struct pool *p, struct pool_volume *v, const struct extent_rec *e,
			      size_t n, struct target **out, struct pool_error *err)
{
	struct stripe_table *tb;
	int r;

	r = table_of(p, v, e, n, &tb, err);
	if (r)
		return r;
	r = stripe_create(tb, out);
	return r ? pool_fail(err, r, "out of memory") : 0;
}

static int serve_striped(struct pool *p, struct pool_volume *v, const struct extent_rec *e,
			 size_t n, struct pool_error *err)
{
	struct target *t;
	int r;

	r = striped_build_over(p, v, e, n, &t, err);
	if (!r && (r = pool_volume_serve(v, t)))
		r = pool_fail(err, r, "out of memory");
	return r;
}

/* Being moved (pool_move.c), it is served as the mirror that carries the move. */
static int striped_build(struct pool *p, struct pool_volume *v, struct pool_error *err)
{
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);

	if (pool_move_source_of(p, v) >= 0)
		return pool_move_serve(p, v, err);
	return serve_striped(p, v, e, n, err);
}

/* -EBUSY while @v is being moved: its table is the move's until it is done. */
static int refuse_moving(struct pool *p, struct pool_volume *v, const char *op,
			 struct pool_error *err)
{
	if (pool_move_source_of(p, v) < 0)
		return 0;
	return pool_fail(err, -EBUSY, "volume '%s' is being moved: %s it once the move is done "
			 "(or 'mapperctl move DEVICE --abort')", v->rec.name, op);
}

/* ---- create --------------------------------------------------------------- */

struct new_striped {
	struct volume_rec rec;
	struct stripe_rec st;
	struct extent_rec *ext;
	size_t nr_ext;
};

static int check_shape(const struct pool_linear_spec *s, uint64_t *size,
		       struct pool_error *err)
{
	char chunk[SIZE_STR_LEN];

	if (s->stripes < STRIPES_MIN || s->stripes > STRIPES_MAX)
		return pool_fail(err, -EINVAL, "a striped volume has %d to %d stripes, not %u",
				 STRIPES_MIN, STRIPES_MAX, s->stripes);
	if (s->stripe_size < STRIPE_CHUNK_MIN || s->stripe_size > STRIPE_CHUNK_MAX ||
	    (s->stripe_size & (s->stripe_size - 1)))
		return pool_fail(err, -EINVAL, "the stripe size must be a power of two from 4 KiB to 1 GiB, not %s",
				 format_size(s->stripe_size, chunk));
	if (!s->size || s->size % VOLUME_ALIGN)
		return pool_fail(err, -EINVAL, "the size must be a positive multiple of 4 KiB");
	return round_to_rows(s->size, (uint64_t)s->stripes * s->stripe_size, size, err);
}

/* Appends @nr extents of @x to n->ext (taken).  0 or -ENOMEM. */
static int add_extents(struct new_striped *n, struct extent_rec *x, size_t nr)
{
	struct extent_rec *v = realloc(n->ext, (n->nr_ext + nr + 1) * sizeof(*v));

	if (!v) {
		free(x);
		return -ENOMEM;
	}
	memcpy(v + n->nr_ext, x, nr * sizeof(*v));
	n->ext = v;
	n->nr_ext += nr;
	free(x);
	return 0;
}

/* The candidate devices: the --on ones in order, or every open one. */
static int candidates(struct pool *p, const struct pool_linear_spec *s,
		      struct pool_device ***out, size_t *nr, struct pool_error *err)
{
	int r = pool_devices_named(p, s->on, s->nr_on, out, nr, err);

	if (r || s->nr_on)
		return r;
	*out = calloc(p->nr_devs + 1, sizeof(**out));
	if (!*out)
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < p->nr_devs; i++)
		if (p->devs[i]->dev)
			(*out)[(*nr)++] = p->devs[i];
	return 0;
}

/*
 * Carves each stripe of n->rec.size / n->st.stripes bytes from the first
 * candidate device that has room for it, one device per stripe.
 */
static int plan_stripes(struct pool *p, const struct pool_linear_spec *s,
			struct new_striped *n, struct pool_error *err)
{
	uint64_t per = n->rec.size / n->st.stripes;
	char want[SIZE_STR_LEN];
	struct pool_device **devs;
	uint32_t taken = 0;
	size_t nr_devs;
	int r;

	r = candidates(p, s, &devs, &nr_devs, err);
	for (size_t i = 0; !r && i < nr_devs && taken < n->st.stripes; i++) {
		struct pool_error ignored;
		struct extent_rec *x;
		size_t nx;

		r = pool_allocate(p, 0, taken << STRIPE_SEQ_SHIFT, per, &devs[i], 1, &x, &nx,
				  &ignored);
		if (r == -ENOSPC) {
			r = 0;		/* not room on this one: the next */
			continue;
		}
		if (!r && add_extents(n, x, nx))
			r = -ENOMEM;
		if (r)
			r = pool_fail(err, r, "out of memory");
		taken++;
	}
	free(devs);
	if (!r && taken < n->st.stripes)
		r = pool_fail(err, -ENOSPC, "%u stripes of %s each need %u devices with that much free; %u of the %zu %s have it",
			      n->st.stripes, format_size(per, want), n->st.stripes, taken, nr_devs,
			      s->nr_on ? "devices given" : "open devices");
	return r;
}

static int record_new_striped(struct pool *p, void *arg)
{
	struct new_striped *n = arg;
	const struct pool_meta_ops *m = p->meta->ops;
	int r;

	r = m->volume_insert(p->meta, &n->rec);
	for (size_t i = 0; !r && i < n->nr_ext; i++) {
		n->ext[i].volume = n->rec.id;
		r = m->extent_insert(p->meta, &n->ext[i]);
	}
	n->st.volume = n->rec.id;
	return r ? r : m->stripe_insert(p->meta, &n->st);
}

int pool_create_striped(struct pool *p, const struct pool_linear_spec *s,
			struct volume_rec *out, struct pool_error *err)
{
	struct new_striped n = { 0 };
	struct pool_volume *v = NULL;
	char chunk[SIZE_STR_LEN];
	int r;

	pool_admin_lock(p);
	r = pool_check_new_name(p, s->name, err);
	if (!r)
		r = check_shape(s, &n.rec.size, err);
	n.st = (struct stripe_rec){ 0, s->stripes, s->stripe_size };
	if (!r)
		r = plan_stripes(p, s, &n, err);
	if (r)
		goto out;
	snprintf(n.rec.name, sizeof(n.rec.name), "%s", s->name);
	snprintf(n.rec.kind, sizeof(n.rec.kind), "%s", striped_type.name);
	n.rec.read_only = s->read_only;
	v = pool_volume_new(&n.rec, &striped_type);
	if (!v || pool_reserve(p, 1, n.nr_ext)) {
		r = pool_fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	v->stripe = n.st;
	r = serve_striped(p, v, n.ext, n.nr_ext, err);
	if (!r)
		r = pool_record(p, "record the volume", record_new_striped, &n, err);
	if (r)
		goto out;
	pool_volume_recorded(v, &n.rec);
	v->stripe.volume = n.rec.id;
	pool_extents_publish(p, n.ext, n.nr_ext);
	pool_volume_publish(p, v);
	if (out)
		*out = v->rec;
	log_info("created striped volume '%s' (%u stripes of %s)", v->rec.name, n.st.stripes,
		 format_size(n.st.stripe_size, chunk));
	v = NULL;
out:
	pool_volume_free(p, v);
	free(n.ext);
	pool_admin_unlock(p);
	return r;
}

/* ---- extend --------------------------------------------------------------- */

/* The last extent of stripe @k among @e[0..n) (in seq order), or NULL. */
static const struct extent_rec *stripe_end(const struct extent_rec *e, size_t n, uint32_t k)
{
	const struct extent_rec *last = NULL;

	for (size_t i = 0; i < n; i++)
		if (stripe_of(&e[i]) == k)
			last = &e[i];
	return last;
}

/* Plans @more bytes for each stripe of @v on its own device, after its end. */
static int plan_growth(struct pool *p, struct pool_volume *v, uint64_t more,
		       struct extent_plan *plan, struct pool_error *err)
{
	struct new_striped acc = { 0 };
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);
	char want[SIZE_STR_LEN];
	int r = 0;

	for (uint32_t k = 0; !r && k < v->stripe.stripes; k++) {
		const struct extent_rec *last = stripe_end(e, n, k);
		struct pool_device *d = last ? pool_device_by_id(p, last->device) : NULL;
		struct pool_error why;
		struct extent_rec *x;
		size_t nx;

		if (!d || !d->dev) {
			r = pool_fail(err, -ENODEV, "stripe %u has no open device", k);
			break;
		}
		r = pool_allocate_after(p, v->rec.id, last->seq + 1, more, &d, 1,
					last->dev_offset + last->length, 1, &x, &nx, &why);
		if (r == -ENOSPC)
			r = pool_fail(err, r, "device '%s' of stripe %u has no %s free: each stripe grows on its own device",
				      d->rec.name, k, format_size(more, want));
		else if (r || add_extents(&acc, x, nx))
			r = pool_fail(err, r ? r : -ENOMEM, "%s", r ? why.msg : "out of memory");
	}
	if (!r && pool_reserve(p, 0, acc.nr_ext))
		r = pool_fail(err, -ENOMEM, "out of memory");
	if (r) {
		free(acc.ext);
		return r;
	}
	plan->ext = acc.ext;
	plan->nr_ext = acc.nr_ext;
	return 0;
}

/* @v's extents and @extra in one malloc'ed array. */
static int extents_and(struct pool *p, const struct pool_volume *v, const struct extent_rec *extra,
		       size_t nr_extra, struct extent_rec **out, size_t *nr)
{
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);

	*out = calloc(n + nr_extra + 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	if (n)
		memcpy(*out, e, n * sizeof(*e));
	if (nr_extra)
		memcpy(*out + n, extra, nr_extra * sizeof(*extra));
	*nr = n + nr_extra;
	return 0;
}

static int striped_extend(struct pool *p, struct pool_volume *v, uint64_t size,
			  char *const *on, size_t nr_on, struct pool_error *err)
{
	struct stripe_table *tb = NULL;
	struct extent_plan plan = { 0 };
	struct extent_rec *all = NULL;
	size_t nr_all;
	int r;

	(void)on;
	r = refuse_moving(p, v, "extend", err);
	if (r)
		return r;
	if (nr_on)
		return pool_fail(err, -EINVAL, "--on does not apply to striped volume '%s': each stripe grows on its own device",
				 v->rec.name);
	r = round_to_rows(size, row_of(&v->stripe), &size, err);
	if (!r)
		r = plan_growth(p, v, (size - v->rec.size) / v->stripe.stripes, &plan, err);
	if (r)
		return r;
	r = extents_and(p, v, plan.ext, plan.nr_ext, &all, &nr_all);
	r = r ? pool_fail(err, r, "out of memory") : table_of(p, v, all, nr_all, &tb, err);
	free(all);
	if (!r)
		r = pool_record_extents(p, v, size, &plan, err);
	if (r) {
		stripe_table_free(tb);
		free(plan.ext);
		return r;
	}
	/* The table covers the new size before the size shows. */
	stripe_publish(v->served->target, tb);
	atomic_store(&v->served->size, size);
	pool_stale_file(p, v->rec.id);
	pool_extents_publish(p, plan.ext, plan.nr_ext);
	v->rec.size = size;
	free(plan.ext);
	return 0;
}

/* ---- reduce --------------------------------------------------------------- */

static int striped_reduce(struct pool *p, struct pool_volume *v, uint64_t size,
			  struct pool_error *err)
{
	char want[SIZE_STR_LEN], row[SIZE_STR_LEN];
	struct extent_cut cut = { 0 };
	struct stripe_table *tb = NULL;
	struct extent_rec *left = NULL;
	size_t n, nr_left;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);
	int r;

	r = refuse_moving(p, v, "reduce", err);
	if (!r)
		r = round_to_rows(size, row_of(&v->stripe), &size, err);
	if (r)
		return r;
	if (size >= v->rec.size)
		return pool_fail(err, -EINVAL, "a striped volume's size is a whole number of rows of %s (%u stripes x %s): the new size rounds up to %s, its size",
				 format_size(row_of(&v->stripe), row), v->stripe.stripes,
				 format_size(v->stripe.stripe_size, want), format_size(v->rec.size, want));
	for (size_t a = 0, b; !r && a < n; a = b) {
		for (b = a; b < n && stripe_of(&e[b]) == stripe_of(&e[a]); b++)
			;
		r = pool_cut_plan(e + a, b - a, size / v->stripe.stripes, &cut);
	}
	if (!r)
		r = pool_cut_apply(e, n, &cut, &left, &nr_left);
	r = r ? pool_fail(err, r, "out of memory") : table_of(p, v, left, nr_left, &tb, err);
	free(left);
	if (!r)
		r = pool_cut_record(p, v, size, &cut, err);
	if (r) {
		stripe_table_free(tb);
		free(cut.v);
		return r;
	}
	/* The size drops before the table stops covering it. */
	atomic_store(&v->served->size, size);
	stripe_publish(v->served->target, tb);
	pool_stale_file(p, v->rec.id);
	pool_cut_publish(p, &cut);
	v->rec.size = size;
	free(cut.v);
	return 0;
}

/* ---- check and reports ---------------------------------------------------- */

/* The stripes' bytes and devices against the stripe row. */
static void check_stripes(struct pool *p, struct pool_volume *v, struct pool_check *c)
{
	uint64_t sum[STRIPES_MAX] = { 0 };
	int64_t dev[STRIPES_MAX] = { 0 };
	uint32_t nr = v->stripe.stripes;
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);

	for (size_t i = 0; i < n; i++) {
		uint32_t k = stripe_of(&e[i]);

		if (e[i].seq >= POOL_MOVE_SEQ)
			continue;	/* a move's piece (pool_check_extent_sum) */
		if (k >= nr) {
			pool_breach(c, v, "extent %u belongs to stripe %u of %u", e[i].seq, k, nr);
			continue;
		}
		sum[k] += e[i].length;
		if (dev[k] && dev[k] != e[i].device)
			pool_breach(c, v, "stripe %u lies on two devices", k);
		dev[k] = e[i].device;
	}
	for (uint32_t k = 0; k < nr; k++) {
		struct pool_device *d = pool_device_by_id(p, dev[k]);

		if (sum[k] != v->rec.size / nr)
			pool_breach(c, v, "stripe %u holds %llu bytes, not %llu (its size over %u stripes)",
				    k, (unsigned long long)sum[k],
				    (unsigned long long)(v->rec.size / nr), nr);
		for (uint32_t j = 0; j < k; j++)
			if (dev[j] && dev[j] == dev[k])
				pool_breach(c, v, "stripes %u and %u share device '%s'", j, k,
					    d ? d->rec.name : "?");
	}
}

static int striped_check(struct pool *p, struct pool_volume *v, struct pool_check *c,
			 struct pool_error *err)
{
	const struct stripe_rec *s = &v->stripe;

	(void)err;
	pool_check_extent_sum(p, v, c);
	if (s->stripes < STRIPES_MIN || s->stripes > STRIPES_MAX ||
	    s->stripe_size < STRIPE_CHUNK_MIN || s->stripe_size > STRIPE_CHUNK_MAX ||
	    (s->stripe_size & (s->stripe_size - 1)))
		pool_breach(c, v, "its stripe row is bad: %u stripes of %u bytes", s->stripes,
			    s->stripe_size);
	else if (v->rec.size % row_of(s))
		pool_breach(c, v, "its size %llu is not a whole number of rows of %u stripes x %u bytes",
			    (unsigned long long)v->rec.size, s->stripes, s->stripe_size);
	else
		check_stripes(p, v, c);
	pool_move_check(p, v, c);
	return 0;
}

static void striped_status(struct pool *p, struct pool_volume *v, struct json *j)
{
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);

	json_u64(j, "stripes", v->stripe.stripes);
	json_size(j, "stripe_size", v->stripe.stripe_size);
	json_array_begin(j, "segments");
	for (size_t i = 0; i < n; i++) {
		struct pool_device *d = pool_device_by_id(p, e[i].device);

		if (e[i].seq >= POOL_MOVE_SEQ)
			continue;	/* a move's piece: "move" says where it goes */
		json_object_begin(j, NULL);
		json_u64(j, "stripe", stripe_of(&e[i]));
		json_string(j, "device", d ? d->rec.name : "?");
		json_size(j, "offset", e[i].dev_offset - DEVICE_DATA_OFFSET);
		json_size(j, "length", e[i].length);
		json_object_end(j);
	}
	json_array_end(j);
	if (pool_move_source_of(p, v) >= 0)
		pool_move_status(p, v, j);
}

static void striped_info(struct pool *p, struct pool_volume *v, struct pool_volume_info *out)
{
	out->stripes = v->stripe.stripes;
	out->stripe_size = v->stripe.stripe_size;
	if (pool_move_source_of(p, v) >= 0)
		pool_move_info(v, out);
}

/* The daemon's monitor copies a move and finishes it (pool_move.c). */
static void striped_watch(struct pool *p, struct pool_volume *v)
{
	if (pool_move_source_of(p, v) >= 0)
		pool_move_watch(p, v);
}

struct target_type striped_type = {
	.name = "linear",		/* as stored: the stripe row makes it striped */
	.words = "striped",
	.served = true,
	.build_order = 1,
	.claims = striped_claims,
	.attach = striped_attach,
	.build = striped_build,
	.build_over = striped_build_over,
	.extend = striped_extend,
	.reduce = striped_reduce,
	.remove = pool_remove_with_logs,
	.check = striped_check,
	.status = striped_status,
	.info = striped_info,
	.watch = striped_watch,
};
