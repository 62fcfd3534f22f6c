/*
 * core/thin/thin_usage.c: how much of a thin volume's map is its own
 * (exclusive) and how much it shares, as `status` and `list` show it.
 *
 * A block is the volume's alone when its directory and leaf are the
 * volume's alone and the block's count is 1; otherwise it is shared.
 * Who else maps a block changes with every other volume's writes, so no
 * count of exclusive blocks is kept; but what is kept answers most of it
 * without reading a leaf:
 *
 * - the volume's mapped blocks (struct thin: mapped, exact under the pool
 *   lock: it moves with each entry published or cleared);
 * - the references of its directory and leaves, in their headers: a
 *   directory other volumes share (a snapshot not written since) holds
 *   no leaf alone, so nothing of it is exclusive;
 * - the pool's blocks whose count is 2 or more (thin_alloc: nr_shared):
 *   with none, a leaf alone maps only blocks of its own.
 *
 * So only the leaves a volume holds alone are read, and only when the
 * pool has shared blocks, for their blocks whose count is 1.  A leaf
 * whose entries are not loaded is read from the store and left unloaded:
 * a list must not load the map.  A volume of 1e8 blocks with a snapshot
 * costs its directory's slots; a pool's first snapshot, written all over
 * since, costs what it rewrote.
 */
#include "thin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "thin_int.h"

/* Entries of leaf @l, read into @rec (loaded or not: it stays as it was), whose count is 1. */
static int single_in_leaf(struct thin_pool *p, struct thin_leaf *l, struct thin_leaf_rec *rec,
			  uint64_t *single)
{
	int r = thin_pool_leaf_peek(p, l, rec);

	for (unsigned int j = 0; !r && j < THIN_LEAF_ENTRIES; j++) {
		uint32_t e = rec->map[j] & ~THIN_PROVISIONING;

		*single += e && thin_alloc_refs(&p->alloc, e - 1) == 1;
	}
	return r;
}

/*
 * @th's usage; the leaves it must read, not loaded, go through @rec and
 * stay unloaded.  Pool lock held.  0 or -EIO.
 */
static int usage_locked(struct thin *th, struct thin_leaf_rec *rec, struct thin_usage *out)
{
	struct thin_pool *p = th->pool;
	struct thin_dir *d = atomic_load(&th->dir);
	bool every_leaf_alone = true;
	int r = 0;

	out->mapped = atomic_load(&th->mapped);
	out->exclusive = 0;
	if (d && atomic_load(&d->refs) == 1) {
		for (uint32_t i = 0; i < d->nr; i++) {
			struct thin_leaf *l = atomic_load(&d->leaf[i]);

			every_leaf_alone &= !l || atomic_load(&l->refs) == 1;
		}
		if (every_leaf_alone && !p->alloc.nr_shared) {
			out->exclusive = out->mapped;
		} else {
			for (uint32_t i = 0; !r && i < d->nr; i++) {
				struct thin_leaf *l = atomic_load(&d->leaf[i]);

				if (l && atomic_load(&l->refs) == 1)
					r = single_in_leaf(p, l, rec, &out->exclusive);
			}
		}
	}
	out->shared = out->mapped - out->exclusive;
	return r;
}

void thin_usage(struct target *t, struct thin_usage *out)
{
	struct thin *th = (struct thin *)t;
	struct thin_leaf_rec *rec = malloc(sizeof(*rec));

	memset(out, 0, sizeof(*out));
	if (!rec)
		return;
	pthread_mutex_lock(&th->pool->lock);
	usage_locked(th, rec, out);
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
	int r = 0;

	if (!rec)
		return -ENOMEM;
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; !r && i < n; i++)
		r = usage_locked((struct thin *)t[idx[i]], rec, &out[idx[i]]);
	pthread_mutex_unlock(&p->lock);
	free(rec);
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
