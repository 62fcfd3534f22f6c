#include "thin_walk.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int load_pages(struct store *s, struct thin_walk *w)
{
	int64_t *ids = NULL;
	size_t nr = 0;
	int r;

	r = store_thin_dir_ids(s, w->pool, &ids, &nr);
	if (r)
		return r;
	w->dirs = calloc(nr ? nr : 1, sizeof(*w->dirs));
	r = w->dirs ? 0 : -ENOMEM;
	for (size_t i = 0; !r && i < nr; i++, w->nr_dirs++)
		r = store_thin_dir_get(s, w->pool, ids[i], &w->dirs[i]);
	free(ids);
	if (r)
		return r;
	r = store_thin_leaf_ids(s, w->pool, &ids, &nr);
	if (r)
		return r;
	w->leaves = calloc(nr ? nr : 1, sizeof(*w->leaves));
	r = w->leaves ? 0 : -ENOMEM;
	for (size_t i = 0; !r && i < nr; i++, w->nr_leaves++)
		r = store_thin_leaf_get(s, w->pool, ids[i], &w->leaves[i]);
	free(ids);
	return r;
}

static int load_geometry(struct store *s, struct thin_walk *w)
{
	struct extent_rec *e = NULL;
	struct volume_rec v;
	size_t nr = 0;
	int r;

	r = store_extents_of_volume(s, w->pool, &e, &nr);
	if (r)
		return r;
	for (size_t i = 0; i < nr; i++)
		w->nr_blocks += e[i].length / w->params.block_size;
	free(e);
	r = store_thin_list(s, w->pool, &w->vols, &w->nr_vols);
	if (r)
		return r;
	w->vol_blocks = calloc(w->nr_vols ? w->nr_vols : 1, sizeof(*w->vol_blocks));
	if (!w->vol_blocks)
		return -ENOMEM;
	for (size_t i = 0; i < w->nr_vols && !r; i++) {
		r = store_volume_get_by_id(s, w->vols[i].volume, &v);
		w->vol_blocks[i] = (v.size + w->params.block_size - 1) / w->params.block_size;
	}
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
		const struct thin_dir_rec *d = thin_walk_dir(w, w->vols[i].dir);

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

int thin_walk_load(struct store *s, int64_t pool, struct thin_walk *w)
{
	int r;

	memset(w, 0, sizeof(*w));
	w->pool = pool;
	r = store_thin_pool_get(s, pool, &w->params);
	if (!r)
		r = load_geometry(s, w);
	if (!r)
		r = load_pages(s, w);
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
	free(w->vols);
	free(w->vol_blocks);
	free(w->dir_reached);
	free(w->leaf_reached);
	free(w->dir_refs);
	free(w->leaf_refs);
	free(w->block_refs);
	memset(w, 0, sizeof(*w));
}

static const struct thin_rec *find_vol(const struct thin_walk *w, int64_t volume,
				       size_t *index)
{
	for (size_t i = 0; i < w->nr_vols; i++) {
		if (w->vols[i].volume == volume) {
			*index = i;
			return &w->vols[i];
		}
	}
	return NULL;
}

int thin_walk_usage(const struct thin_walk *w, int64_t volume,
		    struct thin_walk_usage *out)
{
	const struct thin_dir_rec *d;
	const struct thin_rec *t;
	size_t index;
	bool dir_alone;

	memset(out, 0, sizeof(*out));
	t = find_vol(w, volume, &index);
	if (!t)
		return -ENOENT;
	d = thin_walk_dir(w, t->dir);
	if (!d)
		return 0;
	dir_alone = w->dir_refs[d - w->dirs] == 1;
	for (uint32_t j = 0; j < d->nr; j++) {
		const struct thin_leaf_rec *l = d->leaves[j] ? thin_walk_leaf(w, d->leaves[j]) : NULL;
		bool alone = dir_alone && l && w->leaf_refs[l - w->leaves] == 1;

		for (unsigned int k = 0; l && k < THIN_LEAF_ENTRIES; k++) {
			uint32_t e = l->map[k];

			if (!e)
				continue;
			out->mapped++;
			if (alone && e - 1 < w->nr_blocks && w->block_refs[e - 1] == 1)
				out->exclusive++;
			else
				out->shared++;
		}
	}
	return 0;
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

static void check_volume(const struct thin_walk *w, size_t i, size_t *n,
			 void (*breach)(void *, const char *), void *arg)
{
	const struct thin_rec *t = &w->vols[i];
	const struct thin_dir_rec *d = thin_walk_dir(w, t->dir);

	if (!d) {
		report(breach, arg, n, "volume %lld: its map (directory %lld) is missing",
		       (long long)t->volume, (long long)t->dir);
		return;
	}
	for (uint32_t j = 0; j < d->nr; j++) {
		const struct thin_leaf_rec *l;

		if (!d->leaves[j])
			continue;
		l = thin_walk_leaf(w, d->leaves[j]);
		if (!l) {
			report(breach, arg, n, "directory %lld: leaf %lld is missing",
			       (long long)d->id, (long long)d->leaves[j]);
			continue;
		}
		for (unsigned int k = 0; k < THIN_LEAF_ENTRIES; k++) {
			uint64_t vb = (uint64_t)j * THIN_LEAF_ENTRIES + k;
			uint32_t e = l->map[k];

			if (!e)
				continue;
			if (e - 1 >= w->nr_blocks)
				report(breach, arg, n,
				       "leaf %lld maps virtual block %llu to block %u, past the end of the pool (%llu blocks)",
				       (long long)l->id, (unsigned long long)vb, e - 1,
				       (unsigned long long)w->nr_blocks);
			if (vb >= w->vol_blocks[i])
				report(breach, arg, n,
				       "volume %lld maps virtual block %llu, past its end (%llu blocks)",
				       (long long)t->volume, (unsigned long long)vb,
				       (unsigned long long)w->vol_blocks[i]);
		}
	}
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

size_t thin_walk_unreached(const struct thin_walk *w)
{
	size_t n = 0;

	for (size_t i = 0; i < w->nr_dirs; i++)
		n += !w->dir_reached[i];
	for (size_t i = 0; i < w->nr_leaves; i++)
		n += !w->leaf_reached[i];
	return n;
}

int thin_walk_gc(struct store *s, const struct thin_walk *w)
{
	int r;

	r = store_begin(s);
	if (r)
		return r;
	for (size_t i = 0; !r && i < w->nr_dirs; i++)
		if (!w->dir_reached[i])
			r = store_thin_dir_delete(s, w->pool, w->dirs[i].id);
	for (size_t i = 0; !r && i < w->nr_leaves; i++)
		if (!w->leaf_reached[i])
			r = store_thin_leaf_delete(s, w->pool, w->leaves[i].id);
	if (!r)
		r = store_commit(s);
	if (r)
		store_rollback(s);
	return r;
}

static uint32_t entry_at(const struct thin_walk *w, const struct thin_dir_rec *d,
			 uint64_t vb)
{
	const struct thin_leaf_rec *l;
	uint64_t j = vb / THIN_LEAF_ENTRIES;

	if (!d || j >= d->nr || !d->leaves[j])
		return 0;
	l = thin_walk_leaf(w, d->leaves[j]);
	return l ? l->map[vb % THIN_LEAF_ENTRIES] : 0;
}

int thin_walk_diff(const struct thin_walk *w, int64_t a, int64_t b,
		   int (*fn)(void *arg, uint64_t first, uint64_t count), void *arg)
{
	const struct thin_rec *ta, *tb;
	const struct thin_dir_rec *da, *db;
	uint64_t end, run = 0, nr_run = 0;
	size_t ia, ib;
	int r = 0;

	ta = find_vol(w, a, &ia);
	tb = find_vol(w, b, &ib);
	if (!ta || !tb)
		return -ENOENT;
	da = thin_walk_dir(w, ta->dir);
	db = thin_walk_dir(w, tb->dir);
	end = w->vol_blocks[ia] > w->vol_blocks[ib] ? w->vol_blocks[ia] : w->vol_blocks[ib];
	for (uint64_t vb = 0; vb < end && !r; vb++) {
		uint64_t j = vb / THIN_LEAF_ENTRIES;

		if (vb % THIN_LEAF_ENTRIES == 0 && da && db && j < da->nr && j < db->nr &&
		    da->leaves[j] == db->leaves[j]) {
			vb += THIN_LEAF_ENTRIES - 1;	/* one shared leaf */
			if (nr_run)
				r = fn(arg, run, nr_run);
			nr_run = 0;
			continue;
		}
		if (entry_at(w, da, vb) != entry_at(w, db, vb)) {
			if (!nr_run)
				run = vb;
			nr_run++;
		} else if (nr_run) {
			r = fn(arg, run, nr_run);
			nr_run = 0;
		}
	}
	if (!r && nr_run)
		r = fn(arg, run, nr_run);
	return r;
}
