/*
 * core/thin/thin_usage.c: how much of a thin volume's map is its own
 * (exclusive) and how much it shares, as `status` and `list` show it.
 *
 * A block is the volume's alone when its directory and leaf are the
 * volume's alone and the block's count is 1; otherwise it is shared.
 * That needs a walk of the map: the count of mapped blocks is kept
 * (struct thin: mapped), but who else maps a block changes with every
 * other volume's writes, so no count of exclusive blocks is kept.
 *
 * `list` asks for every volume at once, and snapshots share directories
 * and leaves: 10,000 snapshots of one volume share one directory until
 * written, and then still share most leaves.  So the walk for many
 * volumes remembers, under one hold of the pool lock, what it found per
 * directory and per leaf (keyed by address, which cannot be reused while
 * the lock is held: pages die only in a commit, under it), and each is
 * walked once.  A leaf whose entries are not loaded is read from the
 * store for the sum and left unloaded: a list must not load the map.
 */
#include "thin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "thin_int.h"

/*
 * A page met before, in an open-addressed table keyed by its address: a
 * leaf with its sums, or a directory with the first volume found on it.
 */
struct seen {
	const void *key;		/* NULL: an empty slot */
	union {
		struct {
			uint32_t mapped;	/* entries mapped */
			uint32_t single;	/* ... to a block whose count is 1 */
		} leaf;
		size_t first;		/* a directory: out[] of its first volume */
	};
};

/* Grows as pages are met: distinct leaves are far fewer than the slots of all maps. */
struct memo {
	struct seen *v;			/* NULL until the first page */
	size_t cap;			/* a power of two */
	size_t nr;			/* pages in it, at most half of cap */
};

static struct seen *slot_of(struct seen *v, size_t cap, const void *key)
{
	size_t i = (size_t)(((uintptr_t)key >> 4) * 0x9e3779b97f4a7c15ull) & (cap - 1);

	while (v[i].key && v[i].key != key)
		i = (i + 1) & (cap - 1);
	return &v[i];
}

static int memo_grow(struct memo *m)
{
	size_t cap = m->cap ? 2 * m->cap : 1024;
	struct seen *v = calloc(cap, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		if (m->v[i].key)
			*slot_of(v, cap, m->v[i].key) = m->v[i];
	free(m->v);
	m->v = v;
	m->cap = cap;
	return 0;
}

/*
 * @key's entry, made (*fresh, key set, the rest to fill) if it was not
 * there; valid until the next call.  NULL out of memory.
 */
static struct seen *memo_get(struct memo *m, const void *key, bool *fresh)
{
	struct seen *s;

	if (2 * (m->nr + 1) > m->cap && memo_grow(m))
		return NULL;
	s = slot_of(m->v, m->cap, key);
	*fresh = !s->key;
	if (*fresh) {
		s->key = key;
		m->nr++;
	}
	return s;
}

/* Sums leaf @l, read into @rec (loaded or not: it stays as it was). */
static int sum_leaf(struct thin_pool *p, struct thin_leaf *l, struct thin_leaf_rec *rec,
		    struct seen *out)
{
	int r = thin_pool_leaf_peek(p, l, rec);

	out->leaf.mapped = out->leaf.single = 0;
	for (unsigned int j = 0; !r && j < THIN_LEAF_ENTRIES; j++) {
		uint32_t e = rec->map[j] & ~THIN_PROVISIONING;

		if (!e)
			continue;
		out->leaf.mapped++;
		out->leaf.single += thin_alloc_refs(&p->alloc, e - 1) == 1;
	}
	return r;
}

/*
 * @th's usage, its leaves' sums kept in @m (NULL: none kept); the leaves
 * not loaded are read from the store into @rec and stay unloaded.  Pool
 * lock held.  0, -ENOMEM or -EIO.
 */
static int usage_locked(struct thin *th, struct memo *m, struct thin_leaf_rec *rec,
			struct thin_usage *out)
{
	struct thin_dir *d = atomic_load(&th->dir);

	memset(out, 0, sizeof(*out));
	for (uint32_t i = 0; d && i < d->nr; i++) {
		struct thin_leaf *l = atomic_load(&d->leaf[i]);
		bool alone = atomic_load(&d->refs) == 1 && l && atomic_load(&l->refs) == 1;
		struct seen own, *s = &own;
		bool fresh = true;

		if (!l)
			continue;
		if (m && !(s = memo_get(m, l, &fresh)))
			return -ENOMEM;
		if (fresh) {
			int r = sum_leaf(th->pool, l, rec, s);

			if (r)
				return r;
		}
		out->mapped += s->leaf.mapped;
		out->exclusive += alone ? s->leaf.single : 0;
		out->shared += alone ? s->leaf.mapped - s->leaf.single : s->leaf.mapped;
	}
	return 0;
}

void thin_usage(struct target *t, struct thin_usage *out)
{
	struct thin *th = (struct thin *)t;

	struct thin_leaf_rec *rec = malloc(sizeof(*rec));

	memset(out, 0, sizeof(*out));
	if (!rec)
		return;
	pthread_mutex_lock(&th->pool->lock);
	usage_locked(th, NULL, rec, out);
	pthread_mutex_unlock(&th->pool->lock);
	free(rec);
}

/* qsort_r's: indexes into the thin volumes @arg, by their pool. */
static int by_pool(const void *a, const void *b, void *arg)
{
	struct target *const *t = arg;
	uintptr_t x = (uintptr_t)((struct thin *)t[*(const size_t *)a])->pool;
	uintptr_t y = (uintptr_t)((struct thin *)t[*(const size_t *)b])->pool;

	return (x > y) - (x < y);
}

/* The volumes t[idx[0..n)] of one pool, into out[idx[i]]. */
static int usage_of_pool(struct target *const *t, const size_t *idx, size_t n,
			 struct thin_usage *out)
{
	struct thin_pool *p = ((struct thin *)t[idx[0]])->pool;
	struct thin_leaf_rec *rec = malloc(sizeof(*rec));
	struct memo leaves = { 0 }, dirs = { 0 };
	int r = 0;

	if (!rec)
		return -ENOMEM;
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; !r && i < n; i++) {
		struct thin *th = (struct thin *)t[idx[i]];
		struct thin_dir *d = atomic_load(&th->dir);
		struct seen *dir = NULL;
		bool fresh = true;

		if (d && !(dir = memo_get(&dirs, d, &fresh))) {
			r = -ENOMEM;
		} else if (!fresh) {		/* a snapshot that shares it */
			out[idx[i]] = out[dir->first];
		} else {
			if (dir)
				dir->first = idx[i];
			r = usage_locked(th, &leaves, rec, &out[idx[i]]);
		}
	}
	pthread_mutex_unlock(&p->lock);
	free(rec);
	free(leaves.v);
	free(dirs.v);
	return r;
}

int thin_usage_many(struct target *const *t, size_t n, struct thin_usage *out)
{
	size_t *idx = malloc((n + 1) * sizeof(*idx));
	int r = 0;

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	qsort_r(idx, n, sizeof(*idx), by_pool, (void *)t);
	for (size_t i = 0, j; !r && i < n; i = j) {
		for (j = i + 1; j < n && ((struct thin *)t[idx[j]])->pool ==
					 ((struct thin *)t[idx[i]])->pool; j++)
			;
		r = usage_of_pool(t, idx + i, j - i, out);
	}
	free(idx);
	return r;
}
