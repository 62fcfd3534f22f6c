#include "stripe.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "engine.h"
#include "rcu.h"

/* One stripe: its pieces and where each starts in the stripe. */
struct column {
	unsigned int nr;
	uint64_t *start;		/* stripe offset of each piece */
	struct stripe_piece *piece;
	uint64_t len;			/* bytes, all pieces */
};

struct stripe_table {
	unsigned int nr_stripes;
	unsigned int shift;		/* chunk = 1 << shift */
	struct column *col;
	unsigned int nr_devs;
	struct device **devs;		/* distinct devices, for flush */
};

struct stripe {
	struct target target;
	struct stripe_table *_Atomic table;
};

static struct stripe *to_stripe(struct target *t)
{
	return (struct stripe *)t;
}

void stripe_table_free(struct stripe_table *tb)
{
	if (!tb)
		return;
	for (unsigned int s = 0; tb->col && s < tb->nr_stripes; s++) {
		free(tb->col[s].start);
		free(tb->col[s].piece);
	}
	free(tb->col);
	free(tb->devs);
	free(tb);
}

static void add_device(struct stripe_table *tb, struct device *dev)
{
	unsigned int d = 0;

	while (d < tb->nr_devs && tb->devs[d] != dev)
		d++;
	if (d == tb->nr_devs)
		tb->devs[tb->nr_devs++] = dev;
}

/* Fills the columns from @v, counted per stripe in col[].nr already. */
static int fill_columns(struct stripe_table *tb, const struct stripe_piece *v,
			unsigned int nr)
{
	for (unsigned int s = 0; s < tb->nr_stripes; s++) {
		struct column *c = &tb->col[s];

		if (!c->nr)
			return -EINVAL;
		c->start = calloc(c->nr, sizeof(*c->start));
		c->piece = calloc(c->nr, sizeof(*c->piece));
		if (!c->start || !c->piece)
			return -ENOMEM;
		c->nr = 0;
	}
	for (unsigned int i = 0; i < nr; i++) {
		struct column *c = &tb->col[v[i].stripe];

		c->start[c->nr] = c->len;
		c->piece[c->nr++] = v[i];
		c->len += v[i].len;
		add_device(tb, v[i].dev);
	}
	return 0;
}

int stripe_table_new(unsigned int nr_stripes, uint32_t chunk,
		     const struct stripe_piece *v, unsigned int nr,
		     struct stripe_table **out)
{
	struct stripe_table *tb;
	int r;

	if (nr_stripes < STRIPES_MIN || nr_stripes > STRIPES_MAX ||
	    chunk < STRIPE_CHUNK_MIN || chunk > STRIPE_CHUNK_MAX || (chunk & (chunk - 1)))
		return -EINVAL;
	for (unsigned int i = 0; i < nr; i++)
		if (v[i].stripe >= nr_stripes || !v[i].len)
			return -EINVAL;
	tb = calloc(1, sizeof(*tb));
	if (!tb)
		return -ENOMEM;
	tb->nr_stripes = nr_stripes;
	tb->shift = (unsigned int)__builtin_ctz(chunk);
	tb->col = calloc(nr_stripes, sizeof(*tb->col));
	tb->devs = calloc(nr + 1, sizeof(*tb->devs));
	if (!tb->col || !tb->devs) {
		stripe_table_free(tb);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < nr; i++)
		tb->col[v[i].stripe].nr++;
	r = fill_columns(tb, v, nr);
	if (r) {
		stripe_table_free(tb);
		return r;
	}
	*out = tb;
	return 0;
}

/* The piece of @c holding stripe offset @off: the last whose start is <= off. */
static unsigned int column_find(const struct column *c, uint64_t off)
{
	unsigned int lo = 0, hi = c->nr;

	while (hi - lo > 1) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (c->start[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Where volume offset @off lands: *dev, *dev_off, and in *n how many
 * bytes from there (at most @max) stay on that device contiguously, up
 * to the chunk's end or the piece's.  False if @off lies past its
 * stripe's pieces (the size and the table disagree).
 */
static bool locate(const struct stripe_table *tb, uint64_t off, uint64_t max,
		   struct device **dev, uint64_t *dev_off, uint64_t *n)
{
	uint64_t chunk = off >> tb->shift;
	uint64_t in_chunk = off & ((UINT64_C(1) << tb->shift) - 1);
	const struct column *c = &tb->col[chunk % tb->nr_stripes];
	uint64_t at = ((chunk / tb->nr_stripes) << tb->shift) + in_chunk;
	uint64_t left = (UINT64_C(1) << tb->shift) - in_chunk;
	unsigned int i;

	if (at >= c->len)
		return false;
	i = column_find(c, at);
	*dev = c->piece[i].dev;
	*dev_off = c->piece[i].dev_off + (at - c->start[i]);
	if (left > c->piece[i].len - (at - c->start[i]))
		left = c->piece[i].len - (at - c->start[i]);
	*n = left < max ? left : max;
	return true;
}

static int stripe_map(struct target *t, enum io_dir dir, uint64_t off,
		      uint32_t len, struct segs *out)
{
	struct stripe_table *tb = rcu_load(to_stripe(t)->table);
	uint32_t buf_off = 0;

	(void)dir;
	while (len) {
		struct device *dev;
		uint64_t dev_off, n;

		if (!locate(tb, off, len, &dev, &dev_off, &n))
			return -EIO;	/* size and table disagree */
		if (segs_push(out, dev, dev_off, (uint32_t)n, buf_off))
			return -ENOMEM;
		off += n;
		buf_off += (uint32_t)n;
		len -= (uint32_t)n;
	}
	return MAP_REMAPPED;
}

/* Devices synced per engine call. */
/* The devices of @t's table, for target_sync_devices.  Under RCU. */
static struct device *const *stripe_devs(struct target *t, unsigned int *nr)
{
	struct stripe_table *tb = rcu_load(to_stripe(t)->table);

	*nr = tb->nr_devs;
	return tb->devs;
}

static int stripe_flush(struct target *t, struct engine *e)
{
	return target_sync_devices(t, e, stripe_devs);
}

/*
 * Piece by piece, each located inside a read section and zeroed outside
 * it: devices outlive every table and pieces never move while the volume
 * may be written (reduce waits for it to be closed).
 */
static int stripe_discard(struct target *t, struct engine *e, uint64_t off,
			  uint64_t len, enum discard_mode mode)
{
	int r = 0;

	(void)e;
	while (len && !r) {
		struct device *dev;
		uint64_t dev_off, n;
		bool found;

		rcu_read_begin();
		found = locate(rcu_load(to_stripe(t)->table), off, len, &dev, &dev_off, &n);
		rcu_read_end();
		if (!found)
			return -EINVAL;
		r = target_device_discard(dev, dev_off, n, mode);
		off += n;
		len -= n;
	}
	return r;
}

static void stripe_destroy(struct target *t)
{
	stripe_table_free(atomic_load(&to_stripe(t)->table));
	free(t);
}

/*
 * SEEK_DATA and SEEK_HOLE say "all data": a hole of a file device would
 * show through only chunk by chunk, and an answer that is data where
 * there may be a hole is always true enough for cp and qemu-img.
 */
static const struct target_ops stripe_ops = {
	.name = "striped",
	.parks = true,
	.map = stripe_map,
	.fault = target_loads_nothing,
	.fault_release = target_holds_nothing,
	.fault_start = target_faults_inline,
	.write_deferred = target_never_defers,
	.read_failed = target_no_read_retry,
	.write_failed = target_no_write_retry,
	.end_write = target_no_end_write,
	.flush = stripe_flush,
	.discard = stripe_discard,
	.seek = target_seek_all_data,
	.mapped_bytes = target_all_mapped,
	.destroy = stripe_destroy,
};

int stripe_create(struct stripe_table *tb, struct target **out)
{
	struct stripe *s = calloc(1, sizeof(*s));

	if (!s) {
		stripe_table_free(tb);
		return -ENOMEM;
	}
	s->target.ops = &stripe_ops;
	atomic_init(&s->table, tb);
	*out = &s->target;
	return 0;
}

void stripe_publish(struct target *t, struct stripe_table *tb)
{
	struct stripe_table *old = rcu_publish(to_stripe(t)->table, tb);

	rcu_wait_readers();
	stripe_table_free(old);
}
