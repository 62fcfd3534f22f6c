#include "thin_reach.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Index of @id in the sorted @ids, or -1. */
static ptrdiff_t find_id(const int64_t *ids, size_t nr, int64_t id)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ids[mid] == id)
			return (ptrdiff_t)mid;
		if (ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* Marks directory @i reached, and the leaves it names.  0 or -errno. */
static int reach_dir(const struct thin_meta_ops *m, void *arg, const int64_t *dir_ids,
		     size_t i, const int64_t *leaf_ids, size_t nr_leaves, bool *leaf_reached,
		     struct thin_reach *out)
{
	struct thin_dir_rec d = { 0 };
	int r = m->load_dir(arg, dir_ids[i], &d);

	if (r == -EUCLEAN || r == -ENOENT) {
		out->dangling++;	/* what it names is unknown */
		return 0;
	}
	if (r)
		return r;
	for (uint32_t j = 0; j < d.nr; j++) {
		ptrdiff_t k;

		if (!d.leaves[j])
			continue;
		k = find_id(leaf_ids, nr_leaves, d.leaves[j]);
		if (k < 0)
			out->dangling++;
		else
			leaf_reached[k] = true;
	}
	free(d.leaves);
	return 0;
}

/* The ids of @ids not @reached, into *dead. */
static int collect(const int64_t *ids, size_t nr, const bool *reached, int64_t **dead,
		   size_t *nr_dead)
{
	*dead = malloc((nr ? nr : 1) * sizeof(**dead));
	if (!*dead)
		return -ENOMEM;
	*nr_dead = 0;
	for (size_t i = 0; i < nr; i++)
		if (!reached[i])
			(*dead)[(*nr_dead)++] = ids[i];
	return 0;
}

int thin_reach_find(const struct thin_meta_ops *m, void *arg,
		    const struct thin_walk_vol *vols, size_t nr_vols, struct thin_reach *out)
{
	int64_t *dir_ids = NULL, *leaf_ids = NULL;
	size_t nr_dirs = 0, nr_leaves = 0;
	bool *dir_reached = NULL, *leaf_reached = NULL;
	int r;

	memset(out, 0, sizeof(*out));
	r = m->page_ids(arg, &dir_ids, &nr_dirs, &leaf_ids, &nr_leaves);
	if (r)
		return r;
	dir_reached = calloc(nr_dirs + 1, sizeof(bool));
	leaf_reached = calloc(nr_leaves + 1, sizeof(bool));
	r = dir_reached && leaf_reached ? 0 : -ENOMEM;
	for (size_t v = 0; !r && v < nr_vols; v++) {
		ptrdiff_t i = find_id(dir_ids, nr_dirs, vols[v].dir);

		if (i < 0)
			out->dangling++;
		else if (!dir_reached[i]) {
			dir_reached[i] = true;
			r = reach_dir(m, arg, dir_ids, (size_t)i, leaf_ids, nr_leaves,
				      leaf_reached, out);
		}
	}
	for (size_t i = 0; !r && i < nr_dirs; i++) {
		struct thin_dir_rec d = { 0 };
		int e;

		if (dir_reached[i])
			continue;
		e = m->load_dir(arg, dir_ids[i], &d);	/* only to tell damage */
		if (!e)
			free(d.leaves);
		else if (e == -EUCLEAN || e == -ENOENT)
			out->damaged++;
		else
			r = e;
	}
	for (size_t i = 0; !r && i < nr_leaves; i++) {
		struct thin_leaf_rec l;
		int e;

		if (leaf_reached[i])
			continue;
		e = m->load_leaf(arg, leaf_ids[i], &l);	/* garbage is few pages */
		if (e == -EUCLEAN || e == -ENOENT)
			out->damaged++;
		else if (e)
			r = e;
	}
	if (!r)
		r = collect(dir_ids, nr_dirs, dir_reached, &out->dead_dirs, &out->nr_dead_dirs);
	if (!r)
		r = collect(leaf_ids, nr_leaves, leaf_reached, &out->dead_leaves,
			    &out->nr_dead_leaves);
	free(dir_ids);
	free(leaf_ids);
	free(dir_reached);
	free(leaf_reached);
	if (r)
		thin_reach_release(out);
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
