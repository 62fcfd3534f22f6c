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
 *
 * A leaf is held as what it is made of, not as its 2 KiB of entries: the
 * device and the slot, whose runs give the entries again whenever they
 * are needed (to compare a new leaf with an equal-looking one, to write
 * it).  A restore of 100,000 volumes so holds 3 MB of leaves, not 200 MB:
 * on a VM where a page fault costs tens of microseconds, memory touched
 * is time.  The image must stay as it is while its pages are used.
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
	free(n->dirs);
	free(n->leaves);
	free(n->index);
	memset(n, 0, sizeof(*n));
}

/* The index of @d's first run that ends past virtual block @vb.  O(log runs). */
static size_t first_run(const struct thin_image_dev *d, uint64_t vb)
{
	size_t lo = 0, hi = d->nr_runs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->runs[mid].origin + d->runs[mid].len <= vb)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * @d's entries in leaf @slot into @map, from run *@i on (the first that
 * ends past the slot's start); *@i is left at the first run that reaches
 * past the slot.  @d's runs are sorted and do not overlap.  O(entries).
 */
static void fill_leaf(const struct thin_image_dev *d, uint32_t slot, size_t *i, uint32_t *map)
{
	uint64_t lo = (uint64_t)slot * THIN_LEAF_ENTRIES, hi = lo + THIN_LEAF_ENTRIES;

	memset(map, 0, THIN_LEAF_ENTRIES * sizeof(*map));
	for (size_t j = *i; j < d->nr_runs && d->runs[j].origin < hi; j++) {
		const struct thin_image_run *r = &d->runs[j];
		uint64_t from = r->origin > lo ? r->origin : lo;
		uint64_t to = r->origin + r->len < hi ? r->origin + r->len : hi;

		for (uint64_t vb = from; vb < to; vb++)
			map[vb - lo] = (uint32_t)(r->data + (vb - r->origin) + 1);
		if (r->origin + r->len <= hi)
			*i = j + 1;
	}
}

void image_pages_leaf(const struct image_pages *n, size_t i, struct thin_leaf_rec *out)
{
	const struct image_leaf *l = &n->leaves[i];
	size_t run = first_run(l->dev, (uint64_t)l->slot * THIN_LEAF_ENTRIES);

	out->id = l->id;
	fill_leaf(l->dev, l->slot, &run, out->map);
}

static uint64_t leaf_hash(uint32_t slot, const uint32_t *map)
{
	uint64_t h = 0xcbf29ce484222325ull ^ slot;

	for (unsigned int i = 0; i < THIN_LEAF_ENTRIES; i++)
		h = (h ^ map[i]) * 0x100000001b3ull;
	return h;
}

static int index_grow(struct image_pages *n)
{
	size_t cap = n->index_cap ? 2 * n->index_cap : 1024;
	size_t *v = calloc(cap, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n->nr_leaves; i++) {
		size_t k = n->leaves[i].hash & (cap - 1);

		while (v[k])
			k = (k + 1) & (cap - 1);
		v[k] = i + 1;
	}
	free(n->index);
	n->index = v;
	n->index_cap = cap;
	return 0;
}

/* Leaf @o holds @map at slot @slot. */
static bool same_leaf(const struct image_leaf *o, uint32_t slot, uint64_t hash,
		      const uint32_t *map)
{
	uint32_t other[THIN_LEAF_ENTRIES];
	size_t run;

	if (o->hash != hash || o->slot != slot)
		return false;
	run = first_run(o->dev, (uint64_t)slot * THIN_LEAF_ENTRIES);
	fill_leaf(o->dev, slot, &run, other);
	return !memcmp(other, map, sizeof(other));
}

/*
 * The page id of a leaf holding @map at slot @slot: an equal one's, or
 * a new one's, made of device @d.  0 on ENOMEM.
 */
static int64_t intern_leaf(struct image_pages *n, const struct thin_image_dev *d, uint32_t slot,
			   const uint32_t *map, int64_t *next_id)
{
	uint64_t hash = leaf_hash(slot, map);
	size_t k;

	if (2 * (n->nr_leaves + 1) > n->index_cap && index_grow(n))
		return 0;
	for (k = hash & (n->index_cap - 1); n->index[k]; k = (k + 1) & (n->index_cap - 1))
		if (same_leaf(&n->leaves[n->index[k] - 1], slot, hash, map))
			return n->leaves[n->index[k] - 1].id;
	if (n->nr_leaves == n->cap_leaves) {
		size_t cap = n->cap_leaves ? 2 * n->cap_leaves : 256;
		struct image_leaf *v = realloc(n->leaves, cap * sizeof(*v));

		if (!v)
			return 0;
		n->leaves = v;
		n->cap_leaves = cap;
	}
	n->leaves[n->nr_leaves++] = (struct image_leaf){ (*next_id)++, d, slot, hash };
	n->index[k] = n->nr_leaves;
	return n->leaves[n->nr_leaves - 1].id;
}

int image_pages_build_dir(struct image_pages *n, const struct thin_image_dev *d, uint64_t size,
			  uint8_t shift, int64_t *next_id, struct thin_dir_rec *out)
{
	uint64_t nr_blocks = (size >> shift) + ((size & ((1ull << shift) - 1)) != 0);	/* no wrap */
	uint32_t map[THIN_LEAF_ENTRIES];
	uint64_t next_vb = 0;
	size_t i = 0;

	out->nr = thin_dir_slots(nr_blocks);
	out->leaves = calloc(out->nr + 1, sizeof(*out->leaves));
	if (!out->leaves)
		return -ENOMEM;
	out->id = (*next_id)++;
	while (i < d->nr_runs) {	/* a leaf for each slot a run reaches */
		uint64_t vb = d->runs[i].origin > next_vb ? d->runs[i].origin : next_vb;
		uint32_t slot = (uint32_t)(vb / THIN_LEAF_ENTRIES);

		fill_leaf(d, slot, &i, map);
		out->leaves[slot] = intern_leaf(n, d, slot, map, next_id);
		if (!out->leaves[slot])
			return -ENOMEM;
		next_vb = (uint64_t)(slot + 1) * THIN_LEAF_ENTRIES;
	}
	return 0;
}
