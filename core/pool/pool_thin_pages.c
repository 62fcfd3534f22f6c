/*
 * core/pool/pool_thin_pages.c: a thin pool's map pages built afresh from
 * a thin image (per volume, runs of virtual -> data blocks), for restore
 * and repair.
 *
 * Each volume gets a directory with exactly the slots its size needs and
 * a leaf per slot that maps anything.  Leaves equal in content at the
 * same slot are written once and shared (a hash table of the leaves built
 * so far), so a dump of a volume and its snapshots restores to the
 * sharing it had: counts derive from the pages as always (thin_meta.h).
 * Page ids are handed out in order from a counter the caller keeps.
 */
#include "pool_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "thin_image.h"
#include "thin_map.h"

void image_pages_release(struct image_pages *n)
{
	for (size_t i = 0; i < n->nr_dirs; i++)
		free(n->dirs[i].leaves);
	for (size_t i = 0; i < n->nr_leaves; i++)
		free(n->leaves[i]);
	free(n->dirs);
	free(n->leaves);
	free(n->index);
	memset(n, 0, sizeof(*n));
}

static uint64_t leaf_hash(const struct new_leaf *l)
{
	uint64_t h = 0xcbf29ce484222325ull ^ l->slot;

	for (unsigned int i = 0; i < THIN_LEAF_ENTRIES; i++)
		h = (h ^ l->rec.map[i]) * 0x100000001b3ull;
	return h;
}

static int index_grow(struct image_pages *n)
{
	size_t cap = n->index_cap ? 2 * n->index_cap : 1024;
	size_t *v = calloc(cap, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n->nr_leaves; i++) {
		size_t k = n->leaves[i]->hash & (cap - 1);

		while (v[k])
			k = (k + 1) & (cap - 1);
		v[k] = i + 1;
	}
	free(n->index);
	n->index = v;
	n->index_cap = cap;
	return 0;
}

/*
 * The page id of a leaf equal to @l at its slot: an existing one, or @l
 * itself (taken) under a new id.  0 on ENOMEM.
 */
static int64_t intern_leaf(struct image_pages *n, struct new_leaf *l, int64_t *next_id)
{
	size_t k;

	l->hash = leaf_hash(l);
	if (2 * (n->nr_leaves + 1) > n->index_cap && index_grow(n))
		goto err;
	for (k = l->hash & (n->index_cap - 1); n->index[k]; k = (k + 1) & (n->index_cap - 1)) {
		struct new_leaf *o = n->leaves[n->index[k] - 1];

		if (o->hash == l->hash && o->slot == l->slot &&
		    !memcmp(o->rec.map, l->rec.map, sizeof(l->rec.map))) {
			free(l);
			return o->rec.id;
		}
	}
	if (n->nr_leaves == n->cap_leaves) {
		size_t cap = n->cap_leaves ? 2 * n->cap_leaves : 256;
		struct new_leaf **v = realloc(n->leaves, cap * sizeof(*v));

		if (!v)
			goto err;
		n->leaves = v;
		n->cap_leaves = cap;
	}
	l->rec.id = (*next_id)++;
	n->leaves[n->nr_leaves++] = l;
	n->index[k] = n->nr_leaves;
	return l->rec.id;
err:
	free(l);
	return 0;
}

/* Puts leaf @l (taken) at its slot of directory @out.  0 or -ENOMEM. */
static int put_leaf(struct image_pages *n, struct new_leaf *l, int64_t *next_id,
		    struct thin_dir_rec *out)
{
	uint32_t slot = l->slot;	/* intern_leaf frees @l if it has its twin */

	out->leaves[slot] = intern_leaf(n, l, next_id);
	return out->leaves[slot] ? 0 : -ENOMEM;
}

/* The directory of @d (its virtual size @size) and its leaves. */
int image_pages_build_dir(struct image_pages *n, const struct thin_image_dev *d, uint64_t size,
			  uint8_t shift, int64_t *next_id, struct thin_dir_rec *out)
{
	uint64_t nr_blocks = (size >> shift) + ((size & ((1ull << shift) - 1)) != 0);	/* no wrap */
	struct new_leaf *cur = NULL;

	out->nr = thin_dir_slots(nr_blocks);
	out->leaves = calloc(out->nr + 1, sizeof(*out->leaves));
	if (!out->leaves)
		return -ENOMEM;
	out->id = (*next_id)++;
	for (size_t i = 0; i < d->nr_runs; i++) {
		const struct thin_image_run *r = &d->runs[i];

		for (uint64_t k = 0; k < r->len; k++) {
			uint64_t vb = r->origin + k;
			uint32_t slot = (uint32_t)(vb / THIN_LEAF_ENTRIES);

			if (cur && cur->slot != slot) {
				if (put_leaf(n, cur, next_id, out))
					return -ENOMEM;
				cur = NULL;
			}
			if (!cur) {
				cur = calloc(1, sizeof(*cur));
				if (!cur)
					return -ENOMEM;
				cur->slot = slot;
			}
			cur->rec.map[vb % THIN_LEAF_ENTRIES] = (uint32_t)(r->data + k + 1);
		}
	}
	if (cur && put_leaf(n, cur, next_id, out))
		return -ENOMEM;
	return 0;
}

