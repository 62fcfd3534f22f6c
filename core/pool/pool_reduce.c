/*
 * core/pool/pool_reduce.c: shrinking volumes made of extents (lvreduce):
 * the plan of what goes, its record and its publication, shared by
 * linear and striped volumes, and linear's reduce hook.
 *
 * A linear volume keeps the first SIZE bytes of its extents in order:
 * the extent that straddles SIZE is shortened, those after it are
 * deleted, and the space they held is free as soon as the transaction
 * committed (pool_cut_publish recounts it).  A striped volume does the
 * same to each of its stripes (pool_stripe.c).  The service's reduce
 * (pool_volume.c) holds the volume alone meanwhile, so no request is in
 * flight: the new size is stored before the smaller table is published,
 * and nothing reads between the two.
 */
#include "pool_int.h"

#include <errno.h>
#include <stdlib.h>

#include "linear.h"
#include "volume.h"

static int cut_push(struct extent_cut *c, const struct extent_rec *e, uint64_t length)
{
	struct extent_rec *v = realloc(c->v, (c->nr + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	v[c->nr] = *e;
	v[c->nr++].length = length;
	c->v = v;
	return 0;
}

int pool_cut_plan(const struct extent_rec *e, size_t n, uint64_t keep, struct extent_cut *c)
{
	uint64_t at = 0;
	int r = 0;

	for (size_t i = 0; i < n && !r; i++) {
		if (at >= keep)
			r = cut_push(c, &e[i], 0);
		else if (e[i].length > keep - at)
			r = cut_push(c, &e[i], keep - at);
		at += e[i].length;
	}
	return r;
}

/* The entry of @c for extent (@volume, @seq), or NULL. */
static const struct extent_rec *cut_of(const struct extent_cut *c, int64_t volume, uint32_t seq)
{
	for (size_t i = 0; i < c->nr; i++)
		if (c->v[i].volume == volume && c->v[i].seq == seq)
			return &c->v[i];
	return NULL;
}

int pool_cut_apply(const struct extent_rec *e, size_t n, const struct extent_cut *c,
		   struct extent_rec **out, size_t *nr)
{
	*nr = 0;
	*out = calloc(n + 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct extent_rec *x = cut_of(c, e[i].volume, e[i].seq);

		if (!x || x->length) {
			(*out)[*nr] = e[i];
			if (x)
				(*out)[*nr].length = x->length;
			(*nr)++;
		}
	}
	return 0;
}

struct shrink {
	const struct pool_volume *v;
	uint64_t size;
	const struct extent_cut *cut;
};

static int record_shrink(struct pool *p, void *arg)
{
	const struct shrink *s = arg;
	const struct pool_meta_ops *m = p->meta->ops;
	int r = 0;

	for (size_t i = 0; !r && i < s->cut->nr; i++) {
		const struct extent_rec *x = &s->cut->v[i];

		r = x->length ? m->extent_set_length(p->meta, x->volume, x->seq, x->length)
			      : m->extent_delete(p->meta, x->volume, x->seq, x->seq);
	}
	return r ? r : m->volume_set_size(p->meta, s->v->rec.id, s->size);
}

int pool_cut_record(struct pool *p, struct pool_volume *v, uint64_t size,
		    const struct extent_cut *c, struct pool_error *err)
{
	struct shrink s = { v, size, c };

	return pool_record(p, "record the new size", record_shrink, &s, err);
}

void pool_cut_publish(struct pool *p, const struct extent_cut *c)
{
	size_t j = 0;

	for (size_t i = 0; i < p->nr_ext; i++) {
		const struct extent_rec *x = cut_of(c, p->ext[i].volume, p->ext[i].seq);

		if (x && !x->length)
			continue;
		p->ext[j] = p->ext[i];
		if (x)
			p->ext[j].length = x->length;
		j++;
	}
	p->nr_ext = j;
	pool_space_update(p);
}

/* A linear table over @e[0..n), on the open devices. */
static int linear_table_of(struct pool *p, const struct extent_rec *e, size_t n,
			   struct linear_table **out, struct pool_error *err)
{
	struct linear_seg *segs = calloc(n + 1, sizeof(*segs));
	int r = segs ? 0 : pool_fail(err, -ENOMEM, "out of memory");

	for (size_t i = 0; !r && i < n; i++) {
		struct pool_device *d = pool_device_by_id(p, e[i].device);

		if (!d || !d->dev)
			r = pool_fail(err, -ENODEV, "its device %lld is not open",
				      (long long)e[i].device);
		else
			segs[i] = (struct linear_seg){ d->dev, e[i].dev_offset, e[i].length };
	}
	if (!r && linear_table_new(segs, (unsigned int)n, out))
		r = pool_fail(err, -ENOMEM, "out of memory");
	free(segs);
	return r;
}

int pool_linear_reduce(struct pool *p, struct pool_volume *v, uint64_t size,
		       struct pool_error *err)
{
	struct extent_cut cut = { 0 };
	struct linear_table *tb = NULL;
	struct extent_rec *left = NULL;
	size_t n, nr_left;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);
	int r;

	if (pool_volume_legs(p, v) > 1)
		return pool_fail(err, -EOPNOTSUPP, "volume '%s' is a mirror: reduce cannot shrink "
				 "one yet; " POOL_MIRROR_SHRINK_INSTEAD, v->rec.name,
				 pool_volume_legs(p, v) - 1);
	if (pool_move_source_of(p, v) >= 0)
		return pool_fail(err, -EBUSY, "volume '%s' is being moved: reduce it once the move "
				 "is done (or 'mapperctl move DEVICE --abort')", v->rec.name);
	r = pool_cut_plan(e, n, size, &cut);
	if (!r)
		r = pool_cut_apply(e, n, &cut, &left, &nr_left);
	if (r) {
		free(cut.v);
		return pool_fail(err, r, "out of memory");
	}
	r = linear_table_of(p, left, nr_left, &tb, err);
	free(left);
	if (!r)
		r = pool_cut_record(p, v, size, &cut, err);
	if (r) {
		linear_table_free(tb);
		free(cut.v);
		return r;
	}
	/* The size drops before the table stops covering it. */
	atomic_store(&v->served->size, size);
	linear_publish(v->served->target, tb);
	pool_stale_file(p, v->rec.id);
	pool_cut_publish(p, &cut);
	v->rec.size = size;
	free(cut.v);
	return 0;
}
