/*
 * core/pool/pool_thin_restore.c: thin volumes and their maps in an empty
 * thin pool, from thin_dump XML (thin_image.h).
 *
 * The XML's data blocks address the pool's blocks, whose content is not
 * copied.  The image is checked against the pool (block size, the pool's
 * end, every data block at one virtual block, as sharing only ever comes
 * from copying a page), turned into pages (pool_thin_pages.c), recorded
 * in ONE store transaction with the volume rows, and the pool is started
 * again from the store (pool_thin_start).
 */
#include "pool_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "log.h"
#include "thin_image.h"
#include "thin_map.h"
#include "thin_pool.h"

#define MAX_VIRTUAL_BLOCKS	((uint64_t)THIN_DIR_SLOTS_MAX * THIN_LEAF_ENTRIES)

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

struct restore {
	struct pool_volume *tp;
	struct thin_image img;
	struct volume_rec *recs;	/* per device */
	bool *sized_by_mappings;	/* per device: no size given, its mappings' end */
	struct image_pages pages;
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
		if (image_pages_build_dir(&rs->pages, &rs->img.devs[i], rs->recs[i].size, shift, &next_id,
			      &rs->pages.dirs[i]))
			return pool_fail(err, -ENOMEM, "out of memory");
	}
	return 0;
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
		pool_report_line(report, arg, "the dump's pool has %llu data blocks, thin pool '%s' %llu: every mapping fits",
			    (unsigned long long)rs.img.nr_blocks, name,
			    (unsigned long long)(rs.tp->rec.size / rs.tp->tp.rec.block_size));
	for (size_t i = 0; i < rs.img.nr_devs; i++) {
		ssize_t origin = restore_origin(&rs, i);
		uint64_t n = 0;

		for (size_t j = 0; j < rs.img.devs[i].nr_runs; j++)
			n += rs.img.devs[i].runs[j].len;
		mapped += n;
		pool_report_line(report, arg, "%s thin volume '%s' (dev_id %llu): %llu bytes%s, %llu mapped blocks%s%s%s",
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
	image_pages_release(&rs.pages);
	thin_image_release(&rs.img);
	free(rs.recs);
	free(rs.sized_by_mappings);
	pool_admin_unlock(p);
	return r;
}

