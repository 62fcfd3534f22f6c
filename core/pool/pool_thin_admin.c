/*
 * core/pool/pool_thin_admin.c: what thin-provisioning-tools does for dm-thin
 * administrators, as pool service operations: dump, restore, repair,
 * trim, and the metadata size estimate.
 *
 * Dump reads a committed, consistent point: online, the pool commits
 * what is pending and holds its commits off (thin_pool_admin_begin)
 * while the walk (thin_walk.c) reads every page, and the volumes' map
 * directories are read from the store too, since a write may copy a
 * directory in memory meanwhile.  Then the pages are written out as
 * thin_dump's XML (thin_image.h), with no lock held on the pool.
 *
 * Restore and repair both end in new map pages for a pool: a thin image
 * (per volume, runs of virtual -> data blocks) is checked against the
 * pool (block size, the pool's end, every data block at one virtual
 * block, as sharing only ever comes from copying a page), turned into
 * pages, recorded in ONE store transaction with the volume rows, and the
 * pool is started again from the store (pool_thin_start), which is also
 * how a repaired pool that was failed comes back into service.  Pages are
 * built afresh: leaves equal in content at the same slot are written once
 * and shared, so a dump of a volume and its snapshots restores to the
 * sharing it had, and counts derive from the pages as always.
 *
 * Restore takes an empty thin pool (no volumes): the XML's data blocks
 * address the pool's blocks, whose content is not copied.  Repair keeps
 * every page it can read and drops what it cannot: an unreadable or
 * missing leaf loses the virtual blocks it covered, an unreadable
 * directory its volume's whole map, an entry past the pool's end or a
 * second virtual block on one data block that entry.  Each loss is
 * reported by volume name as a byte range.
 */
#include "pool_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "log.h"
#include "size.h"
#include "linear.h"
#include "thin_alloc.h"
#include "thin_image.h"
#include "thin_map.h"
#include "thin_pool.h"
#include "thin_walk.h"
#include "volume.h"

#define MAX_VIRTUAL_BLOCKS	((uint64_t)THIN_DIR_SLOTS_MAX * THIN_LEAF_ENTRIES)

/* ---- reading the committed pages ---------------------------------------------- */

struct committed {
	const struct thin_meta_ops *ops;
	void *arg;
	struct thin_walk_vol *vols;	/* by volume id, as the store has them */
	struct pool_volume **pvs;	/* the pool's volume of each */
	size_t nr;
	struct thin_walk w;
};

static void committed_release(struct pool *p, struct committed *c)
{
	thin_walk_release(&c->w);
	free(c->vols);
	free(c->pvs);
	if (c->arg)
		p->meta->ops->thin_close(p->meta, c->arg);
	memset(c, 0, sizeof(*c));
}

/* The thin volumes as committed: the store's rows, named from memory. */
static int committed_vols(struct pool *p, struct pool_volume *tp, struct committed *c,
			  struct pool_error *err)
{
	struct thin_vol_rec *rows = NULL;
	uint64_t bs = tp->tp.rec.block_size;
	size_t nr = 0;
	int r;

	r = c->ops->load_vols(c->arg, &rows, &nr);
	if (r)
		return pool_store_fail(err, r, "read the thin volumes");
	c->vols = calloc(nr + 1, sizeof(*c->vols));
	c->pvs = calloc(nr + 1, sizeof(*c->pvs));
	if (!c->vols || !c->pvs) {
		free(rows);
		return pool_fail(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < nr; i++) {
		struct pool_volume *v = pool_volume_by_id(p, rows[i].volume);

		if (!v || v->type != &thin_type)
			continue;	/* a row of a volume being created: not ours yet */
		c->pvs[c->nr] = v;
		c->vols[c->nr++] = (struct thin_walk_vol){ v->rec.name, rows[i].dir,
							   (v->rec.size + bs - 1) / bs };
	}
	free(rows);
	return 0;
}

/*
 * Reads thin pool @tp's committed pages (those that cannot be read are
 * left out, thin_walk.h).  A running pool commits first and holds its
 * commits off during the read.
 */
static int committed_read(struct pool *p, struct pool_volume *tp,
			  struct committed *c, struct pool_error *err)
{
	uint64_t nr_blocks = tp->rec.size / tp->tp.rec.block_size;
	struct thin_pool *pool = tp->tp.pool;
	int r;

	memset(c, 0, sizeof(*c));
	r = p->meta->ops->thin_open(p->meta, tp->rec.id, &c->ops, &c->arg);
	if (r) {
		c->arg = NULL;
		return pool_store_fail(err, r, "read the thin pool's metadata");
	}
	if (pool) {
		r = thin_pool_admin_begin(pool, NULL);
		if (r) {
			committed_release(p, c);
			return pool_fail(err, r, "cannot commit thin pool '%s': %s", tp->rec.name,
					 strerror(-r));
		}
	}
	r = committed_vols(p, tp, c, err);
	if (!r) {
		r = thin_walk_load(c->ops, c->arg, nr_blocks, c->vols, c->nr, &c->w);
		if (r == -ENOMEM)
			pool_fail(err, r, "out of memory");
		else if (r)
			pool_store_fail(err, r, "read the thin pool's metadata");
	}
	if (pool)
		thin_pool_admin_end(pool);
	if (r)
		committed_release(p, c);
	return r;
}

/* ---- dump ------------------------------------------------------------------ */

static void count_breach(void *arg, const char *msg)
{
	(void)msg;
	(*(size_t *)arg)++;
}

/*
 * Counts the mapped entries of directory @d and, with @out, writes them
 * as runs; with @shared, notes whether any block has other references.
 */
static uint64_t walk_entries(const struct thin_walk *w, const struct thin_dir_rec *d,
			     struct thin_image_writer *out, bool *shared)
{
	struct thin_image_run run = { 0 };
	uint64_t n = 0;

	for (uint32_t j = 0; d && j < d->nr; j++) {
		const struct thin_leaf_rec *l = d->leaves[j] ? thin_walk_leaf(w, d->leaves[j]) : NULL;

		for (unsigned int k = 0; l && k < THIN_LEAF_ENTRIES; k++) {
			uint64_t vb = (uint64_t)j * THIN_LEAF_ENTRIES + k, db;

			if (!l->map[k])
				continue;
			db = l->map[k] - 1;
			n++;
			if (shared && w->block_refs[db] > 1)
				*shared = true;
			if (!out)
				continue;
			if (run.len && run.origin + run.len == vb && run.data + run.len == db) {
				run.len++;
				continue;
			}
			if (run.len)
				thin_image_write_run(out, &run);
			run = (struct thin_image_run){ vb, db, 1 };
		}
	}
	if (out && run.len)
		thin_image_write_run(out, &run);
	return n;
}

/* Volume @id is one of the dump's devices. */
static bool dumped(const struct committed *c, int64_t id)
{
	for (size_t i = 0; i < c->nr; i++)
		if (c->pvs[i]->rec.id == id)
			return true;
	return false;
}

static void dump_walk(const struct committed *c, struct thin_image_writer *out)
{
	for (size_t i = 0; i < c->nr; i++) {
		const struct thin_dir_rec *d = thin_walk_vol_dir(&c->w, i);
		struct thin_image_dev dev = { .dev_id = (uint64_t)c->pvs[i]->rec.id };
		int64_t origin = c->pvs[i]->thin.rec.snapshot_of;
		bool shared = false;

		snprintf(dev.name, sizeof(dev.name), "%s", c->pvs[i]->rec.name);
		dev.size = c->pvs[i]->rec.size;
		dev.is_snapshot = origin && dumped(c, origin);
		dev.snapshot_of = dev.is_snapshot ? (uint64_t)origin : 0;
		dev.mapped_blocks = walk_entries(&c->w, d, NULL, &shared);
		dev.snap_time = shared;
		thin_image_write_dev(out, &dev);
		walk_entries(&c->w, d, out, NULL);
		thin_image_write_dev_end(out);
	}
}

int pool_thin_dump(struct pool *p, const char *name, enum pool_dump_format format,
		   FILE *out, size_t *nr_volumes, struct pool_error *err)
{
	struct thin_image_writer *wr;
	struct thin_image sb = { 0 };
	struct pool_volume *tp;
	struct committed c;
	size_t breaches = 0;
	int r;

	pool_admin_lock(p);
	r = pool_volume_get(p, name, &thin_pool_type, true, &tp, err);
	if (!r && tp->failure)
		r = pool_fail(err, -EIO, "thin pool '%s' is failed (%s): run 'mapperctl repair %s' first",
			      name, tp->failure, name);
	if (!r)
		r = committed_read(p, tp, &c, err);
	if (r)
		goto out;
	thin_walk_check(&c.w, count_breach, &breaches);
	if (breaches || c.w.dangling) {
		r = pool_fail(err, -EUCLEAN, "the maps of thin pool '%s' break %zu invariants: see 'mapperctl check %s', then 'mapperctl repair %s'",
			      name, breaches, name, name);
		goto out_release;
	}
	sb.block_size = tp->tp.rec.block_size;
	sb.nr_blocks = c.w.nr_blocks;
	sb.transaction = 1;
	for (uint64_t b = 0; b < c.w.nr_blocks && !sb.time; b++)
		sb.time = c.w.block_refs[b] > 1;
	r = thin_image_writer_open(out, format == POOL_DUMP_JSON ? THIN_IMAGE_JSON : THIN_IMAGE_XML,
				   &sb, &wr);
	if (r) {
		r = pool_fail(err, r, "out of memory");
		goto out_release;
	}
	dump_walk(&c, wr);
	thin_image_writer_close(wr);
	if (fflush(out) || ferror(out))
		r = pool_fail(err, -EIO, "cannot write the dump");
	*nr_volumes = c.nr;
out_release:
	committed_release(p, &c);
out:
	pool_admin_unlock(p);
	return r;
}

/* ---- pages from an image ------------------------------------------------------ */

/* A leaf being built, and the slot it is at (for sharing equal leaves). */
struct new_leaf {
	struct thin_leaf_rec rec;
	uint32_t slot;
	uint64_t hash;
};

struct new_pages {
	struct thin_dir_rec *dirs;	/* one per image device */
	size_t nr_dirs;
	struct new_leaf **leaves;	/* distinct */
	size_t nr_leaves, cap_leaves;
	size_t *index;			/* hash table of leaves (index + 1) */
	size_t index_cap;
};

static void new_pages_release(struct new_pages *n)
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

static int index_grow(struct new_pages *n)
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
static int64_t intern_leaf(struct new_pages *n, struct new_leaf *l, int64_t *next_id)
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
static int put_leaf(struct new_pages *n, struct new_leaf *l, int64_t *next_id,
		    struct thin_dir_rec *out)
{
	uint32_t slot = l->slot;	/* intern_leaf frees @l if it has its twin */

	out->leaves[slot] = intern_leaf(n, l, next_id);
	return out->leaves[slot] ? 0 : -ENOMEM;
}

/* The directory of @d (its virtual size @size) and its leaves. */
static int build_dir(struct new_pages *n, const struct thin_image_dev *d, uint64_t size,
		     uint8_t shift, int64_t *next_id, struct thin_dir_rec *out)
{
	uint64_t nr_blocks = (size + (1ull << shift) - 1) >> shift;
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

static int cmp_run(const void *a, const void *b)
{
	const struct thin_image_run *x = a, *y = b;

	return (x->origin > y->origin) - (x->origin < y->origin);
}

/*
 * Checks @img against thin pool @tp: block size, the pool's end, runs
 * that overlap, a data block at two virtual blocks.  Sorts each device's
 * runs.
 */
static int image_check(struct thin_image *img, struct pool_volume *tp, struct pool_error *err)
{
	uint64_t nr_blocks = tp->rec.size / tp->tp.rec.block_size;
	uint32_t *vb_of = NULL;		/* per data block: virtual block + 1 */
	int r = 0;

	if (img->block_size != tp->tp.rec.block_size)
		return pool_fail(err, -EINVAL, "the dump has blocks of %u bytes, thin pool '%s' of %u",
				 img->block_size, tp->rec.name, tp->tp.rec.block_size);
	vb_of = calloc(nr_blocks + 1, sizeof(*vb_of));
	if (!vb_of)
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; !r && i < img->nr_devs; i++) {
		struct thin_image_dev *d = &img->devs[i];

		for (size_t j = 0; j < i && !r; j++)
			if (img->devs[j].dev_id == d->dev_id)
				r = pool_fail(err, -EINVAL, "dev_id %llu appears twice",
					      (unsigned long long)d->dev_id);
		if (d->nr_runs)
			qsort(d->runs, d->nr_runs, sizeof(*d->runs), cmp_run);
		for (size_t j = 0; !r && j < d->nr_runs; j++) {
			const struct thin_image_run *run = &d->runs[j];

			if (run->origin + run->len > MAX_VIRTUAL_BLOCKS)
				r = pool_fail(err, -EFBIG, "device %llu maps virtual block %llu, past the largest thin volume",
					      (unsigned long long)d->dev_id,
					      (unsigned long long)(run->origin + run->len - 1));
			else if (j && d->runs[j - 1].origin + d->runs[j - 1].len > run->origin)
				r = pool_fail(err, -EINVAL, "device %llu maps virtual block %llu twice",
					      (unsigned long long)d->dev_id,
					      (unsigned long long)run->origin);
			else if (run->data + run->len > img->nr_blocks)
				r = pool_fail(err, -EINVAL, "device %llu maps data block %llu, past the dump's own end (nr_data_blocks %llu)",
					      (unsigned long long)d->dev_id,
					      (unsigned long long)(run->data + run->len - 1),
					      (unsigned long long)img->nr_blocks);
			else if (run->data + run->len > nr_blocks)
				r = pool_fail(err, -ENOSPC, "device %llu maps data block %llu, past the end of thin pool '%s' (%llu blocks): extend it first",
					      (unsigned long long)d->dev_id,
					      (unsigned long long)(run->data + run->len - 1),
					      tp->rec.name, (unsigned long long)nr_blocks);
			for (uint64_t k = 0; !r && k < run->len; k++) {
				uint32_t *v = &vb_of[run->data + k];

				if (!*v)
					*v = (uint32_t)(run->origin + k + 1);
				else if (*v != run->origin + k + 1)
					r = pool_fail(err, -EINVAL, "data block %llu is mapped at virtual blocks %llu and %llu (mapperfs shares a block only at one virtual block)",
						      (unsigned long long)(run->data + k),
						      (unsigned long long)(*v - 1),
						      (unsigned long long)(run->origin + k));
			}
		}
	}
	free(vb_of);
	return r;
}

/* ---- restore ------------------------------------------------------------------ */

struct restore {
	struct pool_volume *tp;
	struct thin_image img;
	struct volume_rec *recs;	/* per device */
	bool *sized_by_mappings;	/* per device: no size given, its mappings' end */
	struct new_pages pages;
};

/* The index of the device the image's device @i is a snapshot of, or -1. */
static ssize_t restore_origin(const struct restore *rs, size_t i)
{
	const struct thin_image_dev *d = &rs->img.devs[i];

	for (size_t j = 0; d->is_snapshot && j < rs->img.nr_devs; j++)
		if (j != i && rs->img.devs[j].dev_id == d->snapshot_of)
			return (ssize_t)j;
	return -1;
}

/* The volume id a restored device's origin got, or 0.  After the inserts. */
static int64_t restored_origin_id(const struct restore *rs, size_t i)
{
	ssize_t j = restore_origin(rs, i);

	return j < 0 ? 0 : rs->recs[j].id;
}

/* Every volume row first: a snapshot's row names its origin's id. */
static int record_restore(struct pool *p, void *arg)
{
	struct restore *rs = arg;
	const struct pool_meta_ops *m = p->meta->ops;
	int64_t pool = rs->tp->rec.id;
	int r = 0;

	for (size_t i = 0; !r && i < rs->pages.nr_leaves; i++)
		r = m->thin_leaf_put(p->meta, pool, &rs->pages.leaves[i]->rec);
	for (size_t i = 0; !r && i < rs->img.nr_devs; i++)
		r = m->volume_insert(p->meta, &rs->recs[i]);
	for (size_t i = 0; !r && i < rs->img.nr_devs; i++) {
		struct thin_rec row = { .volume = rs->recs[i].id, .pool = pool,
					.dir = rs->pages.dirs[i].id,
					.snapshot_of = restored_origin_id(rs, i) };

		r = m->thin_dir_put(p->meta, pool, &rs->pages.dirs[i]);
		if (!r)
			r = m->thin_put(p->meta, &row);
	}
	return r;
}

/*
 * A size for device @d with none given: the XML's (mapperctl's dumps),
 * else the end of its last mapping (*by_mappings set), else none: a
 * device that maps nothing has no size to guess.
 */
static int restore_size(const struct thin_image_dev *d, uint32_t bs, uint64_t *size,
			bool *by_mappings, struct pool_error *err)
{
	uint64_t end = d->nr_runs ? d->runs[d->nr_runs - 1].origin + d->runs[d->nr_runs - 1].len : 0;

	*by_mappings = false;
	if (d->size) {
		*size = d->size;
		return 0;
	}
	if (!end)
		return pool_fail(err, -EINVAL, "device %llu has no size and maps nothing: give its size with --volume %llu:NAME:SIZE",
				 (unsigned long long)d->dev_id, (unsigned long long)d->dev_id);
	*size = end * bs;
	*by_mappings = true;
	return 0;
}

/* Names and sizes for the image's devices, checked. */
static int restore_plan(struct pool *p, struct restore *rs, const struct pool_restore_spec *s,
			struct pool_error *err)
{
	uint32_t bs = rs->tp->tp.rec.block_size;
	int r;

	rs->recs = calloc(rs->img.nr_devs + 1, sizeof(*rs->recs));
	rs->sized_by_mappings = calloc(rs->img.nr_devs + 1, sizeof(*rs->sized_by_mappings));
	if (!rs->recs || !rs->sized_by_mappings)
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < rs->img.nr_devs; i++) {
		const struct thin_image_dev *d = &rs->img.devs[i];
		struct volume_rec *v = &rs->recs[i];
		uint64_t end = d->nr_runs ? d->runs[d->nr_runs - 1].origin +
					    d->runs[d->nr_runs - 1].len : 0;
		const struct pool_restore_volume *given = NULL;

		for (size_t j = 0; j < s->nr_vols; j++)
			if (s->vols[j].dev_id == d->dev_id)
				given = &s->vols[j];
		if (given && given->name)
			snprintf(v->name, sizeof(v->name), "%s", given->name);
		else if (d->name[0])
			snprintf(v->name, sizeof(v->name), "%s", d->name);
		else
			snprintf(v->name, sizeof(v->name), "thin%llu", (unsigned long long)d->dev_id);
		snprintf(v->kind, sizeof(v->kind), "%s", thin_type.name);
		r = pool_check_new_name(p, v->name, err);
		for (size_t j = 0; !r && j < i; j++)
			if (!strcmp(rs->recs[j].name, v->name))
				r = pool_fail(err, -EEXIST, "the dump names volume '%s' twice", v->name);
		v->size = given ? given->size : 0;
		if (!r && !v->size)
			r = restore_size(d, bs, &v->size, &rs->sized_by_mappings[i], err);
		if (!r && d->is_snapshot && restore_origin(rs, i) < 0)
			r = pool_fail(err, -EINVAL, "device %llu is a snapshot of device %llu, which the dump does not have",
				      (unsigned long long)d->dev_id, (unsigned long long)d->snapshot_of);
		if (!r && (v->size % 4096 || !v->size))
			r = pool_fail(err, -EINVAL, "device %llu: size %llu is not a positive multiple of 4 KiB",
				      (unsigned long long)d->dev_id, (unsigned long long)v->size);
		if (!r && end > (v->size + bs - 1) / bs)
			r = pool_fail(err, -EINVAL, "device %llu maps virtual block %llu, past its size",
				      (unsigned long long)d->dev_id, (unsigned long long)(end - 1));
		if (!r && thin_dir_slots((v->size + bs - 1) / bs) > THIN_DIR_SLOTS_MAX)
			r = pool_fail(err, -EFBIG, "device %llu is larger than a thin volume may be",
				      (unsigned long long)d->dev_id);
		if (r)
			return r;
	}
	return 0;
}

static int restore_pages(struct restore *rs, struct pool_error *err)
{
	/* Ids past the pool's: it reads the largest again when it restarts. */
	int64_t next_id = thin_pool_reserve_page_id(rs->tp->tp.pool);
	uint8_t shift = (uint8_t)__builtin_ctz(rs->tp->tp.rec.block_size);

	rs->pages.dirs = calloc(rs->img.nr_devs + 1, sizeof(*rs->pages.dirs));
	if (!rs->pages.dirs)
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < rs->img.nr_devs; i++) {
		rs->pages.nr_dirs++;
		if (build_dir(&rs->pages, &rs->img.devs[i], rs->recs[i].size, shift, &next_id,
			      &rs->pages.dirs[i]))
			return pool_fail(err, -ENOMEM, "out of memory");
	}
	return 0;
}

static void report_line(void (*report)(void *, const char *), void *arg,
			const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void report_line(void (*report)(void *, const char *), void *arg,
			const char *fmt, ...)
{
	char line[POOL_ERROR_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	report(arg, line);
}

static bool pool_has_volumes(struct pool *p, struct pool_volume *tp)
{
	for (size_t i = 0; i < p->nr_vols; i++)
		if (p->vols[i]->type == &thin_type && p->vols[i]->thin.rec.pool == tp->rec.id)
			return true;
	return false;
}

/* Adds the restored volumes to the model (room reserved). */
static void restore_publish(struct pool *p, struct restore *rs)
{
	for (size_t i = 0; i < rs->img.nr_devs; i++) {
		struct pool_volume *v = pool_volume_new(&rs->recs[i], &thin_type);

		if (!v) {
			log_error("volume '%s': out of memory: restart the daemon to serve it",
				  rs->recs[i].name);
			continue;
		}
		v->thin.rec = (struct thin_rec){ .volume = rs->recs[i].id, .pool = rs->tp->rec.id,
						 .dir = rs->pages.dirs[i].id,
						 .snapshot_of = restored_origin_id(rs, i) };
		pool_volume_publish(p, v);
	}
}

int pool_thin_restore(struct pool *p, const char *name, const struct pool_restore_spec *s,
		      void (*report)(void *arg, const char *line), void *arg,
		      struct pool_error *err)
{
	bool dry_run = s->dry_run;
	struct restore rs = { 0 };
	char why[POOL_ERROR_LEN - 64];
	uint64_t mapped = 0;
	int r;

	pool_admin_lock(p);
	r = pool_volume_get(p, name, &thin_pool_type, false, &rs.tp, err);
	if (!r && !rs.tp->tp.pool)
		r = pool_fail(err, -EIO, "thin pool '%s' is not running", name);
	if (!r && pool_has_volumes(p, rs.tp))
		r = pool_fail(err, -EBUSY, "thin pool '%s' has volumes: restore needs an empty pool",
			      name);
	if (r)
		goto out;
	r = thin_image_read_xml(s->xml, &rs.img, why, sizeof(why));
	if (r) {
		r = pool_fail(err, r, "cannot read the dump: %s", r == -ENOMEM ? "out of memory" : why);
		goto out;
	}
	r = image_check(&rs.img, rs.tp, err);
	if (!r)
		r = restore_plan(p, &rs, s, err);
	for (size_t i = 0; !r && i < s->nr_vols; i++) {
		bool found = false;

		for (size_t j = 0; j < rs.img.nr_devs; j++)
			found |= rs.img.devs[j].dev_id == s->vols[i].dev_id;
		if (!found)
			r = pool_fail(err, -ENOENT, "the dump has no device %llu",
				      (unsigned long long)s->vols[i].dev_id);
	}
	if (r)
		goto out;
	if (rs.img.nr_blocks > rs.tp->rec.size / rs.tp->tp.rec.block_size)
		report_line(report, arg, "the dump's pool has %llu data blocks, thin pool '%s' %llu: every mapping fits",
			    (unsigned long long)rs.img.nr_blocks, name,
			    (unsigned long long)(rs.tp->rec.size / rs.tp->tp.rec.block_size));
	for (size_t i = 0; i < rs.img.nr_devs; i++) {
		ssize_t origin = restore_origin(&rs, i);
		uint64_t n = 0;

		for (size_t j = 0; j < rs.img.devs[i].nr_runs; j++)
			n += rs.img.devs[i].runs[j].len;
		mapped += n;
		report_line(report, arg, "%s thin volume '%s' (dev_id %llu): %llu bytes%s, %llu mapped blocks%s%s%s",
			    dry_run ? "would create" : "creating", rs.recs[i].name,
			    (unsigned long long)rs.img.devs[i].dev_id,
			    (unsigned long long)rs.recs[i].size,
			    rs.sized_by_mappings[i] ? " (the end of its last mapping: the dump has no size)" : "",
			    (unsigned long long)n, origin < 0 ? "" : ", a snapshot of '",
			    origin < 0 ? "" : rs.recs[origin].name, origin < 0 ? "" : "'");
	}
	if (dry_run)
		goto out;
	r = restore_pages(&rs, err);
	if (!r && pool_reserve(p, rs.img.nr_devs, 0))
		r = pool_fail(err, -ENOMEM, "out of memory");
	if (r)
		goto out;
	r = thin_pool_admin_begin(rs.tp->tp.pool, NULL);
	if (r) {
		r = pool_store_fail(err, r, "commit the thin pool first");
		goto out;
	}
	r = pool_record(p, "record the restored volumes", record_restore, &rs, err);
	thin_pool_admin_end(rs.tp->tp.pool);
	if (r)
		goto out;
	restore_publish(p, &rs);
	pool_thin_stop(p, rs.tp);
	r = pool_thin_start(p, rs.tp, err);
	if (!r)
		log_info("thin pool '%s': restored %zu volumes, %llu mapped blocks, %zu leaves",
			 name, rs.img.nr_devs, (unsigned long long)mapped, rs.pages.nr_leaves);
out:
	new_pages_release(&rs.pages);
	thin_image_release(&rs.img);
	free(rs.recs);
	free(rs.sized_by_mappings);
	pool_admin_unlock(p);
	return r;
}

/* ---- repair ------------------------------------------------------------------- */

struct repair {
	struct pool_volume *tp;
	struct committed c;
	struct thin_image img;		/* what survives, per volume of c */
	struct new_pages pages;
	uint64_t lost;			/* blocks */
	size_t misfit;			/* directories read, but not of their volume's shape */
	FILE *losses;			/* the report's lines, shown once it is done */
	char *losses_buf;
	size_t losses_len;
};

/*
 * Reports virtual blocks [first, first + n) of volume @i as lost; @why,
 * if not NULL, ends the line.
 */
static void lose(struct repair *rp, size_t i, uint64_t first, uint64_t n, const char *why)
{
	uint64_t bs = rp->tp->tp.rec.block_size, size = rp->c.pvs[i]->rec.size;
	uint64_t off = first * bs, len = n * bs;

	if (off >= size)
		return;
	if (off + len > size)
		len = size - off;
	rp->lost += (len + bs - 1) / bs;
	fprintf(rp->losses, "volume '%s': lost bytes %llu..%llu (%llu bytes, blocks %llu..%llu)%s%s\n",
		    rp->c.pvs[i]->rec.name, (unsigned long long)off,
		    (unsigned long long)(off + len), (unsigned long long)len,
		    (unsigned long long)first, (unsigned long long)(first + (len + bs - 1) / bs),
		    why ? ": " : "", why ? why : "");
}

/* Lost runs of one volume are reported merged. */
struct loss {
	uint64_t first, n;
};

static void loss_add(struct repair *rp, size_t i, struct loss *l, uint64_t vb)
{
	if (l->n && l->first + l->n == vb) {
		l->n++;
		return;
	}
	if (l->n)
		lose(rp, i, l->first, l->n, NULL);
	*l = (struct loss){ vb, 1 };
}

/* What of volume @i survives: entries of readable leaves, in the pool, once. */
static int salvage_volume(struct repair *rp, size_t i, uint32_t *vb_of)
{
	const struct thin_walk *w = &rp->c.w;
	const struct thin_dir_rec *d = thin_walk_vol_dir(w, i);
	struct thin_image_dev *dev = thin_image_add_dev(&rp->img, (uint64_t)rp->c.pvs[i]->rec.id);
	uint64_t nr = rp->c.vols[i].nr_blocks;
	struct loss l = { 0 };
	char why[96];

	if (!dev)
		return -ENOMEM;
	dev->size = rp->c.pvs[i]->rec.size;
	if (!d) {
		snprintf(why, sizeof(why), "its whole map (directory %lld is %s)",
			 (long long)rp->c.vols[i].dir,
			 thin_walk_dir(w, rp->c.vols[i].dir) ||
			 thin_walk_unreadable(w, rp->c.vols[i].dir) ? "damaged" : "missing");
		rp->misfit += thin_walk_dir(w, rp->c.vols[i].dir) != NULL;
		lose(rp, i, 0, nr, why);
		return 0;
	}
	for (uint32_t j = 0; j < d->nr; j++) {
		const struct thin_leaf_rec *lf = d->leaves[j] ? thin_walk_leaf(w, d->leaves[j]) : NULL;

		if (d->leaves[j] && !lf) {
			for (unsigned int k = 0; k < THIN_LEAF_ENTRIES; k++)
				loss_add(rp, i, &l, (uint64_t)j * THIN_LEAF_ENTRIES + k);
			continue;
		}
		for (unsigned int k = 0; lf && k < THIN_LEAF_ENTRIES; k++) {
			uint64_t vb = (uint64_t)j * THIN_LEAF_ENTRIES + k, db;

			if (!lf->map[k] || vb >= nr)
				continue;	/* past its end: nothing it can read */
			db = lf->map[k] - 1;
			if (db >= w->nr_blocks || (vb_of[db] && vb_of[db] != vb + 1)) {
				loss_add(rp, i, &l, vb);
				continue;
			}
			vb_of[db] = (uint32_t)(vb + 1);
			if (thin_image_add_run(dev, vb, db, 1))
				return -ENOMEM;
		}
	}
	if (l.n)
		lose(rp, i, l.first, l.n, NULL);
	return 0;
}

static int record_repair(struct pool *p, void *arg)
{
	struct repair *rp = arg;
	const struct pool_meta_ops *m = p->meta->ops;
	int64_t pool = rp->tp->rec.id;
	int r;

	r = m->thin_pages_delete(p->meta, pool);
	for (size_t i = 0; !r && i < rp->pages.nr_leaves; i++)
		r = m->thin_leaf_put(p->meta, pool, &rp->pages.leaves[i]->rec);
	for (size_t i = 0; !r && i < rp->c.nr; i++) {
		struct thin_rec row = rp->c.pvs[i]->thin.rec;

		row.dir = rp->pages.dirs[i].id;
		r = m->thin_dir_put(p->meta, pool, &rp->pages.dirs[i]);
		if (!r)
			r = m->thin_put(p->meta, &row);
	}
	return r;
}

/* Every page is written anew, in the transaction that deletes the old ones. */
static int repair_pages(struct repair *rp, struct pool_error *err)
{
	uint8_t shift = (uint8_t)__builtin_ctz(rp->tp->tp.rec.block_size);
	int64_t next_id = 1;

	rp->pages.dirs = calloc(rp->c.nr + 1, sizeof(*rp->pages.dirs));
	if (!rp->pages.dirs)
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < rp->c.nr; i++) {
		rp->pages.nr_dirs++;
		if (build_dir(&rp->pages, &rp->img.devs[i], rp->c.pvs[i]->rec.size, shift, &next_id,
			      &rp->pages.dirs[i]))
			return pool_fail(err, -ENOMEM, "out of memory");
	}
	return 0;
}

static int repair_plan(struct repair *rp, struct pool_error *err)
{
	uint32_t *vb_of = calloc(rp->c.w.nr_blocks + 1, sizeof(*vb_of));
	int r = 0;

	if (!vb_of)
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; !r && i < rp->c.nr; i++)
		r = salvage_volume(rp, i, vb_of);
	free(vb_of);
	if (!r)
		return repair_pages(rp, err);
	return pool_fail(err, r, "out of memory");
}

/* Passes each line of @buf to @report. */
static void report_lines(void (*report)(void *, const char *), void *arg, char *buf,
			 size_t len)
{
	for (char *line = buf, *end; line < buf + len; line = end + 1) {
		end = memchr(line, '\n', (size_t)(buf + len - line));
		if (!end)
			end = buf + len;
		*end = '\0';
		report(arg, line);
	}
}

/*
 * Repair rebuilds maps, nothing else: a pool whose devices are not all
 * open would only fail again once its maps were rewritten, so it is
 * refused before anything is written.
 */
static int repair_check(struct pool *p, struct pool_volume *tp, struct pool_error *err)
{
	struct linear_seg *segs;
	struct pool_error e;
	unsigned int nr;
	int r;

	if (tp->broken)
		return pool_fail(err, -EUCLEAN, "thin pool '%s': %s; repair rebuilds maps, not pool records",
				 tp->rec.name, tp->failure);
	r = pool_volume_segs(p, tp, NULL, 0, &segs, &nr, &e);
	if (r)
		return pool_fail(err, r, "thin pool '%s': %s; repair rebuilds maps: bring it back ('mapperctl reload') first",
				 tp->rec.name, e.msg);
	free(segs);
	return pool_thin_retire_members(p, tp, err);
}

int pool_thin_repair(struct pool *p, const char *name,
		     void (*report)(void *arg, const char *line), void *arg,
		     struct pool_error *err)
{
	struct repair rp = { 0 };
	char *was_failed = NULL;
	int r;

	pool_admin_lock(p);
	r = pool_volume_get(p, name, &thin_pool_type, true, &rp.tp, err);
	if (!r)
		r = repair_check(p, rp.tp, err);
	if (r)
		goto out;
	rp.losses = open_memstream(&rp.losses_buf, &rp.losses_len);
	was_failed = rp.tp->failure ? strdup(rp.tp->failure) : NULL;
	if (!rp.losses || (rp.tp->failure && !was_failed)) {
		pool_thin_unretire_members(p, rp.tp);
		r = pool_fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	pool_thin_stop(p, rp.tp);
	r = committed_read(p, rp.tp, &rp.c, err);
	if (!r)
		r = repair_plan(&rp, err);
	if (!r)
		r = pool_record(p, "record the repaired maps", record_repair, &rp, err);
	for (size_t i = 0; !r && i < rp.c.nr; i++)
		rp.c.pvs[i]->thin.rec.dir = rp.pages.dirs[i].id;
	/* Serves what the store holds now: repaired, or as it was. */
	if (pool_thin_start(p, rp.tp, r ? &(struct pool_error){ 0 } : err) && !r)
		r = -EIO;
	if (r)
		goto out;
	fclose(rp.losses);
	rp.losses = NULL;
	report_lines(report, arg, rp.losses_buf, rp.losses_len);
	report_line(report, arg, "thin pool '%s' repaired: %zu volumes, %llu blocks lost, %llu damaged pages dropped, %zu leaves written",
		    name, rp.c.nr, (unsigned long long)rp.lost,
		    (unsigned long long)(rp.c.w.unreadable + rp.misfit), rp.pages.nr_leaves);
	if (was_failed)
		report_line(report, arg, "thin pool '%s' is back in service (it was failed: %s)",
			    name, was_failed);
	log_info("thin pool '%s' repaired: %llu blocks lost%s", name,
		 (unsigned long long)rp.lost, was_failed ? "; back in service" : "");
out:
	if (rp.losses)
		fclose(rp.losses);
	free(rp.losses_buf);
	free(was_failed);
	committed_release(p, &rp.c);
	new_pages_release(&rp.pages);
	thin_image_release(&rp.img);
	pool_admin_unlock(p);
	return r;
}

/* ---- trim, and the metadata size estimate ------------------------------------- */

int pool_thin_trim(struct pool *p, const char *name, uint64_t *bytes,
		   struct pool_error *err)
{
	struct pool_volume *tp;
	int r;

	pool_admin_lock(p);
	r = pool_volume_get(p, name, &thin_pool_type, false, &tp, err);
	if (!r && !tp->tp.pool)
		r = pool_fail(err, -EIO, "thin pool '%s' is not running", name);
	if (!r) {
		r = thin_pool_trim(tp->tp.pool, bytes);
		if (r == -EOPNOTSUPP)
			pool_fail(err, r, "the raw devices of thin pool '%s' cannot discard", name);
		else if (r)
			pool_fail(err, r, "cannot trim thin pool '%s': %s", name, strerror(-r));
	}
	pool_admin_unlock(p);
	return r;
}

int pool_thin_metadata_size(uint64_t block_size, uint64_t pool_size, uint64_t max_thins,
			    uint64_t *bytes, struct pool_error *err)
{
	if (block_size < THIN_BLOCK_MIN || block_size > THIN_BLOCK_MAX ||
	    (block_size & (block_size - 1)))
		return pool_fail(err, -EINVAL, "the block size must be a power of two from 64K to 1G");
	if (pool_size < block_size)
		return pool_fail(err, -EINVAL, "the pool is smaller than one block");
	if (pool_thin_check_blocks(NULL, block_size, pool_size, err))
		return -EFBIG;
	if (!max_thins || max_thins > POOL_MAX_THINS_MAX)
		return pool_fail(err, -EINVAL, "the number of thin volumes must be 1..%u",
				 POOL_MAX_THINS_MAX);
	*bytes = thin_metadata_estimate(pool_size / block_size, max_thins);
	return 0;
}
