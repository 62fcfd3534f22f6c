#include "thin_walk.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "thin_map.h"

static int cmp_dir(const void *a, const void *b)
{
	const struct thin_dir_rec *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

static int cmp_leaf(const void *a, const void *b)
{
	const struct thin_leaf_rec *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

const struct thin_dir_rec *thin_walk_dir(const struct thin_walk *w, int64_t id)
{
	struct thin_dir_rec key = { .id = id };

	return bsearch(&key, w->dirs, w->nr_dirs, sizeof(key), cmp_dir);
}

const struct thin_leaf_rec *thin_walk_leaf(const struct thin_walk *w, int64_t id)
{
	struct thin_leaf_rec key = { .id = id };

	return bsearch(&key, w->leaves, w->nr_leaves, sizeof(key), cmp_leaf);
}

static int cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

bool thin_walk_unreadable(const struct thin_walk *w, int64_t id)
{
	const int64_t *leaves = w->unreadable_ids + w->unreadable_dirs;

	return bsearch(&id, w->unreadable_ids, w->unreadable_dirs, sizeof(id), cmp_id) ||
	       bsearch(&id, leaves, w->unreadable - w->unreadable_dirs, sizeof(id), cmp_id);
}

const struct thin_dir_rec *thin_walk_vol_dir(const struct thin_walk *w, size_t i)
{
	const struct thin_dir_rec *d = thin_walk_dir(w, w->vols[i].dir);

	return d && d->nr == thin_dir_slots(w->vols[i].nr_blocks) ? d : NULL;
}

/* A page whose row cannot be read is noted and left out; other errors stop. */
static int note_unreadable(struct thin_walk *w, int64_t id, int r)
{
	if (r != -EUCLEAN && r != -ENOENT)
		return r;
	w->unreadable_ids[w->unreadable++] = id;
	return 0;
}

static int load_pages(const struct thin_meta_ops *m, void *arg, struct thin_walk *w)
{
	int64_t *dir_ids = NULL, *leaf_ids = NULL;
	size_t nr_dir_ids = 0, nr_leaf_ids = 0;
	int r;

	r = m->page_ids(arg, &dir_ids, &nr_dir_ids, &leaf_ids, &nr_leaf_ids);
	if (r)
		return r;
	w->dirs = calloc(nr_dir_ids + 1, sizeof(*w->dirs));
	w->leaves = calloc(nr_leaf_ids + 1, sizeof(*w->leaves));
	w->unreadable_ids = calloc(nr_dir_ids + nr_leaf_ids + 1, sizeof(*w->unreadable_ids));
	r = w->dirs && w->leaves && w->unreadable_ids ? 0 : -ENOMEM;
	for (size_t i = 0; !r && i < nr_dir_ids; i++) {
		r = m->load_dir(arg, dir_ids[i], &w->dirs[w->nr_dirs]);
		if (!r)
			w->nr_dirs++;
		else
			r = note_unreadable(w, dir_ids[i], r);
	}
	w->unreadable_dirs = w->unreadable;
	for (size_t i = 0; !r && i < nr_leaf_ids; i++) {
		r = m->load_leaf(arg, leaf_ids[i], &w->leaves[w->nr_leaves]);
		if (!r)
			w->nr_leaves++;
		else
			r = note_unreadable(w, leaf_ids[i], r);
	}
	qsort(w->unreadable_ids, w->unreadable_dirs, sizeof(*w->unreadable_ids), cmp_id);
	qsort(w->unreadable_ids + w->unreadable_dirs, w->unreadable - w->unreadable_dirs,
	      sizeof(*w->unreadable_ids), cmp_id);
	free(dir_ids);
	free(leaf_ids);
	return r;
}

/* Marks what the volumes reach and counts block references. */
static int derive(struct thin_walk *w)
{
	w->dir_reached = calloc(w->nr_dirs + 1, sizeof(bool));
	w->leaf_reached = calloc(w->nr_leaves + 1, sizeof(bool));
	w->dir_refs = calloc(w->nr_dirs + 1, sizeof(uint32_t));
	w->leaf_refs = calloc(w->nr_leaves + 1, sizeof(uint32_t));
	w->block_refs = calloc(w->nr_blocks + 1, sizeof(uint32_t));
	if (!w->dir_reached || !w->leaf_reached || !w->dir_refs || !w->leaf_refs ||
	    !w->block_refs)
		return -ENOMEM;
	for (size_t i = 0; i < w->nr_vols; i++) {
		const struct thin_dir_rec *d = thin_walk_vol_dir(w, i);

		if (!d) {
			w->dangling++;
			continue;
		}
		if (w->dir_refs[d - w->dirs]++)
			continue;
		w->dir_reached[d - w->dirs] = true;
		for (uint32_t j = 0; j < d->nr; j++) {
			const struct thin_leaf_rec *l;

			if (!d->leaves[j])
				continue;
			l = thin_walk_leaf(w, d->leaves[j]);
			if (!l) {
				w->dangling++;
				continue;
			}
			if (w->leaf_refs[l - w->leaves]++)
				continue;
			w->leaf_reached[l - w->leaves] = true;
			for (unsigned int k = 0; k < THIN_LEAF_ENTRIES; k++) {
				uint32_t e = l->map[k];

				if (e && e - 1 < w->nr_blocks && !w->block_refs[e - 1]++)
					w->used++;
			}
		}
	}
	return 0;
}

int thin_walk_load(const struct thin_meta_ops *m, void *arg, uint64_t nr_blocks,
		   const struct thin_walk_vol *vols, size_t nr_vols,
		   struct thin_walk *w)
{
	int r;

	memset(w, 0, sizeof(*w));
	w->nr_blocks = nr_blocks;
	w->vols = vols;
	w->nr_vols = nr_vols;
	r = load_pages(m, arg, w);
	if (!r)
		r = derive(w);
	if (r)
		thin_walk_release(w);
	return r;
}

void thin_walk_release(struct thin_walk *w)
{
	for (size_t i = 0; i < w->nr_dirs; i++)
		free(w->dirs[i].leaves);
	free(w->dirs);
	free(w->leaves);
	free(w->unreadable_ids);
	free(w->dir_reached);
	free(w->leaf_reached);
	free(w->dir_refs);
	free(w->leaf_refs);
	free(w->block_refs);
	memset(w, 0, sizeof(*w));
}

static void report(void (*breach)(void *, const char *), void *arg, size_t *n,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void report(void (*breach)(void *, const char *), void *arg, size_t *n,
		   const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	breach(arg, msg);
	(*n)++;
}

/* Why volume @i has no map: its directory is missing, unreadable or misfit. */
static void report_lost_map(const struct thin_walk *w, size_t i, size_t *n,
			    void (*breach)(void *, const char *), void *arg)
{
	const struct thin_walk_vol *t = &w->vols[i];
	const struct thin_dir_rec *d = thin_walk_dir(w, t->dir);

	if (d)
		report(breach, arg, n, "volume '%s': its map (directory %lld) has %u slots where its size needs %u: it is damaged",
		       t->name, (long long)t->dir, d->nr, thin_dir_slots(t->nr_blocks));
	else
		report(breach, arg, n, "volume '%s': its map (directory %lld) is %s",
		       t->name, (long long)t->dir,
		       thin_walk_unreadable(w, t->dir) ? "damaged" : "missing");
}

static void check_volume(const struct thin_walk *w, size_t i, size_t *n,
			 void (*breach)(void *, const char *), void *arg)
{
	const struct thin_walk_vol *t = &w->vols[i];
	const struct thin_dir_rec *d = thin_walk_vol_dir(w, i);
	uint64_t mapped = 0;
	bool whole = true;

	if (!d) {
		report_lost_map(w, i, n, breach, arg);
		return;
	}
	for (uint32_t j = 0; j < d->nr; j++) {
		const struct thin_leaf_rec *l;

		if (!d->leaves[j])
			continue;
		l = thin_walk_leaf(w, d->leaves[j]);
		if (!l) {
			report(breach, arg, n, "volume '%s': leaf %lld of its directory %lld is %s",
			       t->name, (long long)d->leaves[j], (long long)d->id,
			       thin_walk_unreadable(w, d->leaves[j]) ? "damaged" : "missing");
			whole = false;
			continue;
		}
		for (unsigned int k = 0; k < THIN_LEAF_ENTRIES; k++) {
			uint64_t vb = (uint64_t)j * THIN_LEAF_ENTRIES + k;
			uint32_t e = l->map[k];

			if (!e)
				continue;
			mapped++;
			if (e - 1 >= w->nr_blocks)
				report(breach, arg, n,
				       "volume '%s': leaf %lld maps virtual block %llu to block %u, past the end of the pool (%llu blocks)",
				       t->name, (long long)l->id, (unsigned long long)vb, e - 1,
				       (unsigned long long)w->nr_blocks);
			if (vb >= t->nr_blocks)
				report(breach, arg, n,
				       "volume '%s' maps virtual block %llu, past its end (%llu blocks)",
				       t->name, (unsigned long long)vb,
				       (unsigned long long)t->nr_blocks);
		}
	}
	if (whole && d->mapped_known && d->mapped != mapped)
		report(breach, arg, n, "volume '%s': its directory %lld says it maps %llu blocks, its leaves map %llu",
		       t->name, (long long)d->id, (unsigned long long)d->mapped,
		       (unsigned long long)mapped);
}

/*
 * Derived counts make "count = references" hold by construction; what can
 * break is the sharing itself.  Sharing only ever comes from copying a
 * page, so every reference to a block sits at the same virtual block: a
 * block mapped at two virtual blocks (by two leaves, or twice by one) is
 * two owners writing over each other.
 */
static void check_shared_blocks(const struct thin_walk *w, size_t *n,
				void (*breach)(void *, const char *), void *arg)
{
	uint64_t *vb_of = calloc(w->nr_blocks + 1, sizeof(*vb_of));

	if (!vb_of) {
		report(breach, arg, n, "out of memory while checking shared blocks");
		return;
	}
	for (size_t i = 0; i < w->nr_dirs; i++) {
		const struct thin_dir_rec *d = &w->dirs[i];

		if (!w->dir_reached[i])
			continue;
		for (uint32_t j = 0; j < d->nr; j++) {
			const struct thin_leaf_rec *l = d->leaves[j] ?
				thin_walk_leaf(w, d->leaves[j]) : NULL;

			for (unsigned int k = 0; l && k < THIN_LEAF_ENTRIES; k++) {
				uint32_t e = l->map[k];
				uint64_t vb = (uint64_t)j * THIN_LEAF_ENTRIES + k + 1;

				if (!e || e - 1 >= w->nr_blocks)
					continue;
				if (!vb_of[e - 1])
					vb_of[e - 1] = vb;
				else if (vb_of[e - 1] != vb)
					report(breach, arg, n,
					       "block %u is mapped at virtual blocks %llu and %llu",
					       e - 1, (unsigned long long)vb_of[e - 1] - 1,
					       (unsigned long long)vb - 1);
			}
		}
	}
	free(vb_of);
}

size_t thin_walk_check(const struct thin_walk *w,
		       void (*breach)(void *arg, const char *msg), void *arg)
{
	uint64_t free_blocks = 0;
	size_t n = 0;

	for (size_t i = 0; i < w->nr_vols; i++)
		check_volume(w, i, &n, breach, arg);
	check_shared_blocks(w, &n, breach, arg);
	for (uint64_t b = 0; b < w->nr_blocks; b++)
		free_blocks += !w->block_refs[b];
	if (free_blocks + w->used != w->nr_blocks)
		report(breach, arg, &n, "free (%llu) and used (%llu) blocks do not add up to %llu",
		       (unsigned long long)free_blocks, (unsigned long long)w->used,
		       (unsigned long long)w->nr_blocks);
	return n;
}

size_t thin_walk_unreached(const struct thin_walk *w, size_t *damaged)
{
	size_t n = 0;

	assert(!w->dangling);
	for (size_t i = 0; i < w->nr_dirs; i++)
		n += !w->dir_reached[i];
	for (size_t i = 0; i < w->nr_leaves; i++)
		n += !w->leaf_reached[i];
	if (damaged)
		*damaged = w->unreadable;
	/* No reference dangles: no volume reaches a page that cannot be read. */
	return n + w->unreadable;
}

int thin_walk_gc(const struct thin_meta_ops *m, void *arg, const struct thin_walk *w)
{
	int64_t *dirs = calloc(w->nr_dirs + w->unreadable + 1, sizeof(*dirs));
	int64_t *leaves = calloc(w->nr_leaves + w->unreadable + 1, sizeof(*leaves));
	struct thin_commit c = { .dead_leaves = leaves, .dead_dirs = dirs };
	int r = -ENOMEM;

	assert(!w->dangling);
	if (dirs && leaves) {
		for (size_t i = 0; i < w->nr_dirs; i++)
			if (!w->dir_reached[i])
				dirs[c.nr_dead_dirs++] = w->dirs[i].id;
		for (size_t i = 0; i < w->nr_leaves; i++)
			if (!w->leaf_reached[i])
				leaves[c.nr_dead_leaves++] = w->leaves[i].id;
		for (size_t i = 0; i < w->unreadable; i++) {
			if (i < w->unreadable_dirs)
				dirs[c.nr_dead_dirs++] = w->unreadable_ids[i];
			else
				leaves[c.nr_dead_leaves++] = w->unreadable_ids[i];
		}
		r = m->commit(arg, &c);
	}
	free(dirs);
	free(leaves);
	return r;
}
