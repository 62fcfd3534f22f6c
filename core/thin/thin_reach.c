#include "thin_reach.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The ids of @ids that @reached says no volume reaches, into *dead. */
static int unreached(const int64_t *ids, size_t nr, bool leaf, thin_reached_fn *reached,
		     void *ctx, int64_t **dead, size_t *nr_dead)
{
	*dead = malloc((nr ? nr : 1) * sizeof(**dead));
	if (!*dead)
		return -ENOMEM;
	*nr_dead = 0;
	for (size_t i = 0; i < nr; i++)
		if (!reached(ctx, ids[i], leaf))
			(*dead)[(*nr_dead)++] = ids[i];
	return 0;
}

/* Counts the dead pages that cannot be read into out->damaged.  0 or -errno. */
static int count_damaged(const struct thin_meta_ops *m, void *arg, struct thin_reach *out)
{
	for (size_t i = 0; i < out->nr_dead_dirs; i++) {
		struct thin_dir_rec d = { 0 };
		int e = m->load_dir(arg, out->dead_dirs[i], &d);

		if (!e)
			free(d.leaves);
		else if (e == -EUCLEAN || e == -ENOENT)
			out->damaged++;
		else
			return e;
	}
	for (size_t i = 0; i < out->nr_dead_leaves; i++) {
		struct thin_leaf_rec l;
		int e = m->load_leaf(arg, out->dead_leaves[i], &l);

		if (e == -EUCLEAN || e == -ENOENT)
			out->damaged++;
		else if (e)
			return e;
	}
	return 0;
}

int thin_reach_find(const struct thin_meta_ops *m, void *arg, thin_reached_fn *reached,
		    void *ctx, struct thin_reach *out)
{
	int64_t *dir_ids = NULL, *leaf_ids = NULL;
	size_t nr_dirs = 0, nr_leaves = 0;
	int r;

	memset(out, 0, sizeof(*out));
	r = m->page_ids(arg, &dir_ids, &nr_dirs, &leaf_ids, &nr_leaves);
	if (!r)
		r = unreached(dir_ids, nr_dirs, false, reached, ctx, &out->dead_dirs,
			      &out->nr_dead_dirs);
	if (!r)
		r = unreached(leaf_ids, nr_leaves, true, reached, ctx, &out->dead_leaves,
			      &out->nr_dead_leaves);
	if (!r)
		r = count_damaged(m, arg, out);
	free(dir_ids);
	free(leaf_ids);
	if (r)
		thin_reach_release(out);
	return r;
}

static int cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* What thin_reach_find_walk's volumes reach: sorted ids. */
struct walk_reach {
	int64_t *dirs, *leaves;
	size_t nr_dirs, nr_leaves;
};

static bool sorted_has(const int64_t *ids, size_t nr, int64_t id)
{
	return nr && bsearch(&id, ids, nr, sizeof(*ids), cmp_id);
}

static bool walk_reached(void *ctx, int64_t id, bool leaf)
{
	const struct walk_reach *w = ctx;

	return leaf ? sorted_has(w->leaves, w->nr_leaves, id) :
		      sorted_has(w->dirs, w->nr_dirs, id);
}

/* Appends the leaves directory @id names to @w; a damaged or missing one is dangling. */
static int walk_dir(const struct thin_meta_ops *m, void *arg, int64_t id,
		    struct walk_reach *w, size_t *dangling)
{
	struct thin_dir_rec d = { 0 };
	int64_t *leaves;
	int r = m->load_dir(arg, id, &d);

	if (r == -EUCLEAN || r == -ENOENT) {
		(*dangling)++;
		return 0;
	}
	if (r)
		return r;
	leaves = realloc(w->leaves, (w->nr_leaves + d.nr + 1) * sizeof(*leaves));
	if (!leaves) {
		free(d.leaves);
		return -ENOMEM;
	}
	w->leaves = leaves;
	for (uint32_t i = 0; i < d.nr; i++)
		if (d.leaves[i])
			w->leaves[w->nr_leaves++] = d.leaves[i];
	free(d.leaves);
	return 0;
}

int thin_reach_find_walk(const struct thin_meta_ops *m, void *arg,
			 const struct thin_walk_vol *vols, size_t nr_vols, struct thin_reach *out)
{
	struct walk_reach w = { calloc(nr_vols + 1, sizeof(int64_t)), NULL, 0, 0 };
	size_t dangling = 0;
	int r = w.dirs ? 0 : -ENOMEM;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; !r && i < nr_vols; i++)
		w.dirs[w.nr_dirs++] = vols[i].dir;
	if (!r)
		qsort(w.dirs, w.nr_dirs, sizeof(*w.dirs), cmp_id);
	for (size_t i = 0; !r && i < w.nr_dirs; i++)
		if (!i || w.dirs[i] != w.dirs[i - 1])	/* a snapshot shares its origin's */
			r = walk_dir(m, arg, w.dirs[i], &w, &dangling);
	if (!r && w.nr_leaves)
		qsort(w.leaves, w.nr_leaves, sizeof(*w.leaves), cmp_id);
	if (!r)
		r = thin_reach_find(m, arg, walk_reached, &w, out);
	if (!r)
		out->dangling = dangling;
	free(w.dirs);
	free(w.leaves);
	return r;
}

int thin_reach_gc(const struct thin_meta_ops *m, void *arg, const struct thin_reach *r)
{
	struct thin_commit c = {
		.dead_leaves = r->dead_leaves, .nr_dead_leaves = r->nr_dead_leaves,
		.dead_dirs = r->dead_dirs, .nr_dead_dirs = r->nr_dead_dirs,
	};

	assert(!r->dangling);
	return m->commit(arg, &c);
}

void thin_reach_release(struct thin_reach *r)
{
	free(r->dead_dirs);
	free(r->dead_leaves);
	memset(r, 0, sizeof(*r));
}
