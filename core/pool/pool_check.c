/*
 * core/pool/pool_check.c: every invariant of a pool, for `check` and, the
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
 *
 * Check tells each fault once.  An overlap is one line, though both
 * volumes are kept out at open; a failure that check does not find again
 * in the records (a missing device, a damaged thin pool row, a missing
 * origin) is one line for the fault, naming every volume it keeps out
 * (pool_fault.c), not one per volume; and a volume whose records check
 * did find broken is not told again as "failed".  The last summary line
 * is the verdict, for the pool or the one volume checked.
 */
#include "pool_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "label.h"
#include "log.h"

/* Notes that @v has a breach in this check. */
static void hit(struct pool_check *c, struct pool_volume *v)
{
	struct pool_volume **n;

	if (!v || pool_check_hit(c, v))
		return;
	if (c->nr_hit == c->cap_hit) {
		n = realloc(c->hit, (c->cap_hit ? 2 * c->cap_hit : 16) * sizeof(*n));
		if (!n)
			return;		/* at worst, a failed volume is told twice */
		c->hit = n;
		c->cap_hit = c->cap_hit ? 2 * c->cap_hit : 16;
	}
	c->hit[c->nr_hit++] = v;
}

bool pool_check_hit(const struct pool_check *c, const struct pool_volume *v)
{
	for (size_t i = 0; i < c->nr_hit; i++)
		if (c->hit[i] == v)
			return true;
	return false;
}

/*
 * Tells a breach of @v's (counted, or the other side of one told); one
 * that @explains @v's failure keeps that failure from being told again.
 */
static void vbreach(struct pool_check *c, struct pool_volume *v, bool counted,
		    bool explains, const char *fmt, va_list ap)
{
	char msg[2 * POOL_ERROR_LEN], line[2 * POOL_ERROR_LEN + 96];	/* a reason and its victims */

	if (c->only && v != c->only)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (v)
		snprintf(line, sizeof(line), "%s '%s': %s",
			 v->type->noun, v->rec.name, msg);
	else
		snprintf(line, sizeof(line), "%s", msg);
	if (explains)
		hit(c, v);
	c->n += counted;
	c->on_breach(c, v, line, counted);
}

void pool_breach(struct pool_check *c, struct pool_volume *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vbreach(c, v, true, true, fmt, ap);
	va_end(ap);
}

void pool_breach_also(struct pool_check *c, struct pool_volume *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vbreach(c, v, false, true, fmt, ap);
	va_end(ap);
}

void pool_breach_besides(struct pool_check *c, struct pool_volume *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vbreach(c, v, true, false, fmt, ap);
	va_end(ap);
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
	uint64_t sum[POOL_LEGS_MAX] = { 0 }, moving = 0, moved = 0;
	unsigned int legs = 1;
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);

	for (size_t i = 0; i < n; i++) {
		unsigned int leg = pool_extent_leg(&e[i]);

		if (leg == POOL_LEG_MOVE) {
			moving += e[i].length;
			continue;
		}
		if (leg >= POOL_LEGS_MAX) {
			pool_breach(c, v, "extent %u belongs to leg %u, past the last a mirror can have",
				    e[i].seq, leg);
			continue;
		}
		sum[leg] += e[i].length;
		if (leg + 1 > legs)
			legs = leg + 1;
	}
	for (size_t i = 0; moving && i < n; i++)	/* what a move replaces */
		if (pool_extent_leg(&e[i]) == 0 && e[i].seq < POOL_PLACED_SEQ)
			for (size_t k = 0; k < n; k++)
				if (pool_extent_leg(&e[k]) == POOL_LEG_MOVE &&
				    pool_move_source(&e[k]) == e[i].device) {
					moved += e[i].length;
					break;
				}
	if (moving != moved)
		pool_breach(c, v, "a move in flight has %llu bytes to go to, the extents it moves %llu",
			    (unsigned long long)moving, (unsigned long long)moved);
	for (unsigned int leg = 0; leg < legs; leg++) {
		if (sum[leg] == v->rec.size)
			continue;
		if (legs == 1)
			pool_breach(c, v, "its extents add up to %llu bytes, its size is %llu",
				    (unsigned long long)sum[leg], (unsigned long long)v->rec.size);
		else
			pool_breach(c, v, "the extents of its leg %u add up to %llu bytes, its size is %llu",
				    leg, (unsigned long long)sum[leg], (unsigned long long)v->rec.size);
	}
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

/*
 * @b starts inside @a (sorted by device and offset): one breach, told of
 * the volume checked if it is one of them; both volumes are kept out at
 * open.
 */
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
	if (c->only && c->only == va && va != vb) {
		const struct extent_rec *e = a;
		struct pool_volume *w = va;

		a = b, b = e;
		va = vb, vb = w;
	}
	piece_name(a, na, sizeof(na));
	piece_name(b, nb, sizeof(nb));
	pool_breach(c, vb, "its %s overlaps %s of volume '%s' on device '%s'", nb, na,
		    va ? va->rec.name : "?", d ? d->rec.name : "?");
	if (va && va != vb)
		pool_breach_also(c, va, "its %s overlaps %s of volume '%s' on device '%s'", na,
				 nb, vb ? vb->rec.name : "?", d ? d->rec.name : "?");
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

/* The records of every volume (or of c->only); the deep part too if c->deep. */
static int check_volumes(struct pool *p, struct pool_check *c, struct pool_error *err)
{
	int r = 0;

	for (size_t i = 0; !r && i < p->nr_vols; i++)
		if (!c->only || p->vols[i] == c->only)
			r = p->vols[i]->type->check(p, p->vols[i], c, err);
	return r;
}

/* At open: a volume whose records break an invariant is not served. */
static void keep_out(struct pool_check *c, struct pool_volume *v, const char *line,
		     bool counted)
{
	(void)c, (void)counted;
	if (v && !v->broken)
		pool_volume_broken(v, line);
}

void pool_check_records(struct pool *p)
{
	struct pool_check c = { .on_breach = keep_out };
	struct pool_error err;

	if (check_extents(p, &c) || check_volumes(p, &c, &err))
		log_warn("out of memory while checking the pool's records");
	free(c.hit);
}

/* For `check`: every breach is a line for people; the other side of one is not. */
static void print(struct pool_check *c, struct pool_volume *v, const char *line,
		  bool counted)
{
	(void)v;
	if (counted)
		c->report(c->arg, line);
}

/* The database's own pages: each problem SQLite finds is a breach. */
static void report_store(void *arg, const char *msg)
{
	pool_breach(arg, NULL, "pool database: %s", msg);
}

/* "; thin pool 'tp' and volumes 'a', 'b' are not served", or "". */
static void victims_clause(struct pool *p, struct pool_fault f, char *buf, size_t len)
{
	char names[POOL_ERROR_LEN - 32];
	size_t n = pool_fault_victims(p, f, names, sizeof(names));

	if (n)
		snprintf(buf, len, "; %s %s not served", names, n > 1 ? "are" : "is");
	else
		buf[0] = '\0';
}

struct fault_check {
	struct pool *p;
	struct pool_check *c;
};

/*
 * A fault the records did not show (a device that is failed, a volume
 * failed of its own that check found nothing wrong with): one line.
 */
static void fault_breach(void *arg, struct pool_fault f)
{
	struct fault_check *fc = arg;
	char victims[POOL_ERROR_LEN];

	if (f.vol && pool_check_hit(fc->c, f.vol))
		return;		/* told already, as the breach of its records */
	victims_clause(fc->p, f, victims, sizeof(victims));
	if (f.dev)
		pool_breach(fc->c, NULL, "device '%s': it is failed: %s%s", f.dev->rec.name,
			    f.dev->failure, victims);
	else
		pool_breach(fc->c, f.vol, "it is failed: %s%s", f.vol->failure, victims);
}

/* What is failed, each fault once (of the volume checked: why it is failed). */
static void check_failures(struct pool *p, struct pool_check *c)
{
	struct fault_check fc = { p, c };

	if (!c->only)
		pool_faults(p, fault_breach, &fc);
	else if (c->only->failure && !pool_check_hit(c, c->only))
		pool_breach(c, c->only, "it is failed: %s", c->only->failure);
}

/* The verdict, the last summary line: "volume 'l5': ok, 0 breaches found". */
static void verdict(struct pool *p, struct pool_check *c)
{
	char subject[POOL_NAME_MAX + PATH_MAX + 16];

	if (c->only)
		snprintf(subject, sizeof(subject), "%s '%s'",
			 c->only->type->noun, c->only->rec.name);
	else
		snprintf(subject, sizeof(subject), "pool '%s'", p->dir);
	pool_summary(c, "%s: %s%zu breach%s found", subject, c->n ? "" : "ok, ", c->n,
		     c->n == 1 ? "" : "es");
}

int pool_check(struct pool *p, const char *name,
	       void (*breach)(void *arg, const char *msg),
	       void (*summary)(void *arg, const char *msg), void *arg,
	       size_t *breaches, struct pool_error *err)
{
	struct pool_check c = { .deep = true, .on_breach = print, .report = breach,
				.summary = summary, .arg = arg };
	int r = 0;

	pool_admin_lock(p);
	if (name)
		r = pool_volume_get_staged(p, name, NULL, true, &c.only, err);
	if (!r && !c.only) {
		r = p->meta->ops->integrity(p->meta, true, report_store, &c);
		if (r)
			pool_store_fail(err, r, "check the pool database");
	}
	if (!r && check_extents(p, &c))
		r = pool_fail(err, -ENOMEM, "out of memory");
	if (!r)
		r = check_volumes(p, &c, err);
	if (!r) {
		check_failures(p, &c);
		verdict(p, &c);
	}
	pool_admin_unlock(p);
	free(c.hit);
	*breaches = c.n;
	return r;
}
