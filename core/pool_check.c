/*
 * core/pool_check.c: every invariant of a pool, for `check` and, the
 * cheap part, for opening.
 *
 * The records: the database's own pages (PRAGMA quick_check); every
 * extent on a registered device, inside its data area, overlapping no
 * other extent nor a switch path placed by hand (pool_used()); each
 * kind's records through its check hook (a linear volume's extents add
 * up to its size, a switch volume's paths reach the whole volume, a thin
 * volume's pool exists).  The deep part, walking a thin
 * pool's committed map pages against the counts in memory, runs for
 * `check` only.  Opening runs the records part and keeps a volume whose
 * records break an invariant out of service (failed, with the breach as
 * its reason): serving overlapping extents would write one volume's data
 * over another's.
 */
#include "pool_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "label.h"
#include "log.h"

void pool_breach(struct pool_check *c, struct pool_volume *v, const char *fmt, ...)
{
	char msg[POOL_ERROR_LEN / 2], line[POOL_ERROR_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (v)
		snprintf(line, sizeof(line), "%s '%s': %s",
			 v->type == &thin_pool_type ? "thin pool" : "volume", v->rec.name, msg);
	else
		snprintf(line, sizeof(line), "%s", msg);
	c->n++;
	c->on_breach(c, v, line);
}

void pool_summary(struct pool_check *c, const char *fmt, ...)
{
	char line[POOL_ERROR_LEN];
	va_list ap;

	if (!c->summary)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	c->summary(c->arg, line);
}

void pool_check_extent_sum(struct pool *p, struct pool_volume *v, struct pool_check *c)
{
	uint64_t sum = 0;
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);

	for (size_t i = 0; i < n; i++)
		sum += e[i].length;
	if (sum != v->rec.size)
		pool_breach(c, v, "its extents add up to %llu bytes, its size is %llu",
			    (unsigned long long)sum, (unsigned long long)v->rec.size);
}

static int cmp_by_device(const void *a, const void *b)
{
	const struct extent_rec *x = *(const struct extent_rec *const *)a;
	const struct extent_rec *y = *(const struct extent_rec *const *)b;

	if (x->device != y->device)
		return (x->device > y->device) - (x->device < y->device);
	if (x->dev_offset != y->dev_offset)
		return (x->dev_offset > y->dev_offset) - (x->dev_offset < y->dev_offset);
	if (x->volume != y->volume)	/* ties in a fixed order: the same report each time */
		return (x->volume > y->volume) - (x->volume < y->volume);
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* "extent 3" or "path 1" (a switch path placed by hand: pool_used()). */
static const char *piece_name(const struct extent_rec *e, char *buf, size_t len)
{
	if (e->seq >= POOL_PLACED_SEQ)
		snprintf(buf, len, "path %u", e->seq - POOL_PLACED_SEQ);
	else
		snprintf(buf, len, "extent %u", e->seq);
	return buf;
}

/* @b starts inside @a (sorted by device and offset): a breach of each volume. */
static void overlap(struct pool *p, const struct extent_rec *a, const struct extent_rec *b,
		    struct pool_check *c)
{
	struct pool_volume *va = pool_volume_by_id(p, a->volume);
	struct pool_volume *vb = pool_volume_by_id(p, b->volume);
	struct pool_device *d = pool_device_by_id(p, a->device);
	char na[32], nb[32];

	/* a volume's own paths may share a range (multipath), and its extent */
	if (va == vb && (a->seq >= POOL_PLACED_SEQ || b->seq >= POOL_PLACED_SEQ))
		return;
	piece_name(a, na, sizeof(na));
	piece_name(b, nb, sizeof(nb));
	pool_breach(c, vb, "its %s overlaps %s of volume '%s' on device '%s'", nb, na,
		    va ? va->rec.name : "?", d ? d->rec.name : "?");
	if (va && va != vb)
		pool_breach(c, va, "its %s overlaps %s of volume '%s' on device '%s'", na, nb,
			    vb ? vb->rec.name : "?", d ? d->rec.name : "?");
}

/*
 * Every extent on a registered device, in its data area (a placed path's
 * own check says so for paths), and nothing overlapping: sorted by
 * device and offset, each piece against the one before it that reaches
 * furthest, so an overlap with any earlier piece is seen.
 */
static int check_extents(struct pool *p, struct pool_check *c)
{
	const struct extent_rec **by_dev, *far = NULL;
	struct extent_rec *used;
	size_t nr;

	if (pool_used(p, NULL, 0, &used, &nr))
		return -ENOMEM;
	by_dev = calloc(nr + 1, sizeof(*by_dev));
	if (!by_dev) {
		free(used);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nr; i++) {
		const struct extent_rec *e = &used[i];
		struct pool_volume *v = pool_volume_by_id(p, e->volume);
		struct pool_device *d = pool_device_by_id(p, e->device);

		by_dev[i] = e;
		if (e->seq >= POOL_PLACED_SEQ)
			continue;
		if (!d)
			pool_breach(c, v, "extent %u lies on device %lld, which the pool does not have",
				    e->seq, (long long)e->device);
		else if (e->dev_offset < DEVICE_DATA_OFFSET || e->dev_offset > d->rec.size ||
			 e->length > d->rec.size - e->dev_offset)
			pool_breach(c, v, "extent %u (%llu bytes at %llu) is outside the data area of device '%s'",
				    e->seq, (unsigned long long)e->length,
				    (unsigned long long)e->dev_offset, d->rec.name);
	}
	qsort(by_dev, nr, sizeof(*by_dev), cmp_by_device);
	for (size_t i = 0; i < nr; i++) {
		const struct extent_rec *b = by_dev[i];

		if (far && far->device != b->device)
			far = NULL;
		if (far && b->dev_offset < far->dev_offset + far->length)
			overlap(p, far, b, c);
		if (!far || b->dev_offset + b->length > far->dev_offset + far->length)
			far = b;
	}
	free(by_dev);
	free(used);
	return 0;
}

/* The records of every volume; the deep part too if c->deep. */
static int check_volumes(struct pool *p, struct pool_volume *only, struct pool_check *c,
			 struct pool_error *err)
{
	int r = 0;

	for (size_t i = 0; !r && i < p->nr_vols; i++) {
		struct pool_volume *v = p->vols[i];

		if (only && v != only)
			continue;
		if (v->failure && c->deep)
			pool_breach(c, v, "it is failed: %s", v->failure);
		r = v->type->check(p, v, c, err);
	}
	return r;
}

/* At open: a volume whose records break an invariant is not served. */
static void keep_out(struct pool_check *c, struct pool_volume *v, const char *line)
{
	(void)c;
	if (v && !v->broken)
		pool_volume_broken(v, line);
}

void pool_check_records(struct pool *p)
{
	struct pool_check c = { .on_breach = keep_out };
	struct pool_error err;

	if (check_extents(p, &c) || check_volumes(p, NULL, &c, &err))
		log_warn("out of memory while checking the pool's records");
}

/* For `check`: every breach is a line for people. */
static void print(struct pool_check *c, struct pool_volume *v, const char *line)
{
	(void)v;
	c->report(c->arg, line);
}

/* The database's own pages: each problem SQLite finds is a breach. */
static void report_store(void *arg, const char *msg)
{
	pool_breach(arg, NULL, "pool database: %s", msg);
}

int pool_check(struct pool *p, const char *name,
	       void (*breach)(void *arg, const char *msg),
	       void (*summary)(void *arg, const char *msg), void *arg,
	       size_t *breaches, struct pool_error *err)
{
	struct pool_check c = { .deep = true, .on_breach = print, .report = breach,
				.summary = summary, .arg = arg };
	struct pool_volume *only = NULL;
	int r = 0;

	pthread_mutex_lock(&p->admin);
	if (name)
		r = pool_volume_get(p, name, NULL, true, &only, err);
	if (!r && !only) {
		r = p->meta->ops->integrity(p->meta, report_store, &c);
		if (r)
			pool_store_fail(err, r, "check the pool database");
		for (size_t i = 0; !r && i < p->nr_devs; i++)
			if (p->devs[i]->failure)
				pool_breach(&c, NULL, "device '%s': it is failed: %s",
					    p->devs[i]->rec.name, p->devs[i]->failure);
		if (!r && check_extents(p, &c))
			r = pool_fail(err, -ENOMEM, "out of memory");
	}
	if (!r)
		r = check_volumes(p, only, &c, err);
	pthread_mutex_unlock(&p->admin);
	*breaches = c.n;
	return r;
}
