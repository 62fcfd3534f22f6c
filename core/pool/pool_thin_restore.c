/*
 * core/pool/pool_thin_restore.c: thin volumes and their maps in an empty
 * thin pool, from thin_dump XML (thin_image.h).
 *
 * The XML's data blocks address the pool's blocks, whose content is not
 * copied: restore is run over the data area the dump describes.  It is
 * all or nothing, and it has to be, since a restore that half happened
 * cannot be run again (the pool is no longer empty).  So every check
 * that starting the pool would make is made before anything is written,
 * in the same order with --dry-run, which stops short of the writing:
 *
 *   1. no lock: read the XML and check what it says of itself
 *      (thin_image_check: dev_ids, runs, a data block at one virtual
 *      block, snapshot_of and its cycles); name and size each device
 *      (--volume, the XML's attributes, else thin<dev_id> and the end of
 *      its mappings) and check each size as `create thin` does
 *      (pool_thin_check_virtual_size, in 64 bits that no size near 2^64
 *      wraps); build the map pages, with ids from 1.  None of this needs
 *      the pool, so a large dump keeps no other change waiting.
 *   2. the admin lock: the pool is a running, empty thin pool of the
 *      dump's block size; every data block lies in it; no name is taken;
 *      the pages fit its metadata limit, counted as the pool counts them
 *      for META% (THIN_PAGE_STORE_BYTES a page, directories and distinct
 *      leaves); no data block is a hole of its raw device (below).
 *   3. one store transaction: the pool's old pages deleted (garbage: it
 *      has no volume), the leaves, the volume rows, the directories and
 *      thin rows written (ids moved past the pool's); then the pool is
 *      stopped and started again from the store.  Should starting
 *      fail all the same (out of memory, the store), the rows are deleted
 *      again in one transaction and the pool started as it was, and the
 *      error says so.
 *
 * Every step is O(n log n) in the devices and runs of the dump: lookups
 * are sorted indexes (thin_image.h's by_id and by_data, names sorted),
 * and the volumes go into the pool and the mount in one batch each
 * (pool_volumes_publish, pool_volumes_show).  What it holds is kept
 * small (a built leaf is its device and slot: pool_thin_pages.c), since
 * on a VM a page fault costs tens of microseconds.
 *
 * Holes.  A thin pool discards the data blocks it frees on its raw
 * devices (discard passdown; trim): a file device gets the range punched.
 * A block the dump maps that is a hole now was therefore most likely
 * discarded since the dump (a volume removed, a block overwritten by
 * copy-on-write), and would read zeros where the dump's volume had data:
 * the restore would look right and have lost data silently.  Restore
 * looks with SEEK_DATA over each distinct range of mapped data blocks
 * (thin_pool_holes: one lseek per hole or data extent), and refuses,
 * naming how many and the first (volume, virtual block, data block),
 * unless --force: then it maps them and names them in the report and the
 * log.  Refusing is the default because the mistake cannot be seen later
 * (the volumes read zeros, nothing counts them) and costs a whole redo,
 * while a restore meant to map holes (a copy of the data made sparse:
 * blocks of zeros read the same from a hole) loses nothing by saying
 * --force.  A block device cannot tell: its blocks all count as data.
 */
#include "pool_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "names.h"
#include "size.h"
#include "thin_image.h"
#include "thin_pool.h"

struct restore {
	const char *name;		/* of the thin pool */
	const struct pool_restore_spec *spec;
	struct thin_image img;
	struct volume_rec *recs;	/* per device: name and size, then the id */
	const struct volume_rec **by_name;	/* recs sorted by name */
	bool *sized_by_mappings;	/* per device: no size given, its mappings' end */
	uint64_t *mapped;		/* per device: blocks */
	uint64_t data_end;		/* the first data block past every mapping */
	struct image_pages pages;	/* ids from 1, until rebased */
	struct pool_volume *tp;
	struct pool_volume **vols;	/* per device, made before recording, */
	bool published;			/* ... and then the pool's */
	uint64_t holes;			/* mapped data blocks that are holes */
	size_t hole_dev;		/* the first: its device, */
	uint64_t hole_vb, hole_db;	/* virtual and data block */
};

static void restore_release(struct restore *rs)
{
	for (size_t i = 0; rs->vols && !rs->published && i < rs->img.nr_devs; i++)
		free(rs->vols[i]);	/* nothing hangs on them yet */
	free(rs->vols);
	image_pages_release(&rs->pages);
	thin_image_release(&rs->img);
	free(rs->recs);
	free(rs->by_name);
	free(rs->sized_by_mappings);
	free(rs->mapped);
}

/* ---- 1. the dump alone --------------------------------------------------------- */

static int read_image(struct restore *rs, struct pool_error *err)
{
	char why[POOL_ERROR_LEN - 64];
	uint32_t bs;
	int r;

	r = thin_image_read_xml(rs->spec->xml, &rs->img, why, sizeof(why));
	if (r)
		return pool_fail(err, r, "cannot read the dump: %s", r == -ENOMEM ? "out of memory" : why);
	bs = rs->img.block_size;
	if (!thin_block_size_ok(bs))
		return pool_fail(err, -EINVAL, "the dump has blocks of %u bytes: a thin pool's are a power of two from 64K to 1G",
				 bs);
	r = thin_image_check(&rs->img, why, sizeof(why));
	if (r)
		return pool_fail(err, r, "%s", r == -ENOMEM ? "out of memory" : why);
	return 0;
}

/* Each --volume to the device it names: given[i] for device i.  O(V log D). */
static int match_given(struct restore *rs, const struct pool_restore_volume **given,
		       struct pool_error *err)
{
	const struct pool_restore_spec *s = rs->spec;

	for (size_t k = 0; k < s->nr_vols; k++) {
		struct thin_image_dev *d = thin_image_find(&rs->img, s->vols[k].dev_id);
		size_t i = d ? (size_t)(d - rs->img.devs) : 0;

		if (!d)
			return pool_fail(err, -ENOENT, "the dump has no device %llu",
					 (unsigned long long)s->vols[k].dev_id);
		if (given[i])
			return pool_fail(err, -EINVAL, "--volume: dev_id %llu is given twice",
					 (unsigned long long)s->vols[k].dev_id);
		if (s->vols[k].name && !name_valid(s->vols[k].name))
			return pool_fail(err, -EINVAL, "invalid name '%s': " NAME_RULES,
					 s->vols[k].name);
		given[i] = &s->vols[k];
	}
	return 0;
}

/*
 * A size for device @i with none given: the XML's (mapperctl's dumps),
 * else the end of its last mapping (sized_by_mappings), else none: a
 * device that maps nothing has no size to guess.
 */
static int size_device(struct restore *rs, size_t i, const struct pool_restore_volume *given,
		       struct pool_error *err)
{
	const struct thin_image_dev *d = &rs->img.devs[i];
	/* thin_image_check: every mapping ends within 2^29 blocks, so this cannot wrap. */
	uint64_t end = d->nr_runs ? d->runs[d->nr_runs - 1].origin + d->runs[d->nr_runs - 1].len : 0;
	uint64_t bs = rs->img.block_size;
	uint64_t *size = &rs->recs[i].size;
	struct pool_error e;

	*size = given && given->size ? given->size : d->size;
	if (!*size && !end)
		return pool_fail(err, -EINVAL, "device %llu has no size and maps nothing: give its size with --volume %llu:NAME:SIZE",
				 (unsigned long long)d->dev_id, (unsigned long long)d->dev_id);
	if (!*size) {
		*size = end * bs;
		rs->sized_by_mappings[i] = true;
	}
	if (*size % 4096)
		return pool_fail(err, -EINVAL, "device %llu: size %llu is not a positive multiple of 4 KiB",
				 (unsigned long long)d->dev_id, (unsigned long long)*size);
	if (pool_thin_check_virtual_size(NULL, (uint32_t)bs, *size, &e))
		return pool_fail(err, -EFBIG, "device %llu: size %llu: %s",
				 (unsigned long long)d->dev_id, (unsigned long long)*size, e.msg);
	if (end > *size / bs + (*size % bs != 0))
		return pool_fail(err, -EINVAL, "device %llu maps virtual block %llu, past its size",
				 (unsigned long long)d->dev_id, (unsigned long long)(end - 1));
	return 0;
}

static void name_device(struct restore *rs, size_t i, const struct pool_restore_volume *given)
{
	const struct thin_image_dev *d = &rs->img.devs[i];
	struct volume_rec *v = &rs->recs[i];

	if (given && given->name)
		snprintf(v->name, sizeof(v->name), "%s", given->name);
	else if (d->name[0])
		snprintf(v->name, sizeof(v->name), "%s", d->name);
	else
		snprintf(v->name, sizeof(v->name), "thin%llu", (unsigned long long)d->dev_id);
	snprintf(v->kind, sizeof(v->kind), "%s", thin_type.name);
}

static int cmp_rec_name(const void *a, const void *b)
{
	return strcmp((*(const struct volume_rec *const *)a)->name,
		      (*(const struct volume_rec *const *)b)->name);
}

/* Each name valid and once; by_name.  O(D log D). */
static int check_names(struct restore *rs, struct pool_error *err)
{
	const struct volume_rec **v = malloc((rs->img.nr_devs + 1) * sizeof(*v));

	if (!v)
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < rs->img.nr_devs; i++)
		v[i] = &rs->recs[i];
	qsort(v, rs->img.nr_devs, sizeof(*v), cmp_rec_name);
	rs->by_name = v;
	for (size_t i = 0; i < rs->img.nr_devs; i++) {
		if (!name_valid(v[i]->name))
			return pool_fail(err, -EINVAL, "invalid name '%s': " NAME_RULES, v[i]->name);
		if (i && !strcmp(v[i]->name, v[i - 1]->name))
			return pool_fail(err, -EEXIST, "the dump names volume '%s' twice", v[i]->name);
	}
	return 0;
}

/* Names, sizes and counts of the image's devices, checked. */
static int plan(struct restore *rs, struct pool_error *err)
{
	size_t n = rs->img.nr_devs;
	const struct pool_restore_volume **given = calloc(n + 1, sizeof(*given));
	int r;

	rs->recs = calloc(n + 1, sizeof(*rs->recs));
	rs->sized_by_mappings = calloc(n + 1, sizeof(*rs->sized_by_mappings));
	rs->mapped = calloc(n + 1, sizeof(*rs->mapped));
	if (!given || !rs->recs || !rs->sized_by_mappings || !rs->mapped) {
		free(given);
		return pool_fail(err, -ENOMEM, "out of memory");
	}
	r = match_given(rs, given, err);
	for (size_t i = 0; !r && i < n; i++) {
		const struct thin_image_dev *d = &rs->img.devs[i];

		name_device(rs, i, given[i]);
		r = size_device(rs, i, given[i], err);
		for (size_t j = 0; j < d->nr_runs; j++) {
			rs->mapped[i] += d->runs[j].len;
			if (d->runs[j].data + d->runs[j].len > rs->data_end)
				rs->data_end = d->runs[j].data + d->runs[j].len;
		}
	}
	free(given);
	return r ? r : check_names(rs, err);
}

/* The pages, with ids from 1 (rebased once the pool gives its own). */
static int build_pages(struct restore *rs, struct pool_error *err)
{
	uint8_t shift = (uint8_t)__builtin_ctz(rs->img.block_size);
	int64_t next_id = 1;

	rs->pages.dirs = calloc(rs->img.nr_devs + 1, sizeof(*rs->pages.dirs));
	if (!rs->pages.dirs)
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < rs->img.nr_devs; i++) {
		rs->pages.nr_dirs++;
		if (image_pages_build_dir(&rs->pages, &rs->img.devs[i], rs->recs[i].size, shift,
					  &next_id, &rs->pages.dirs[i]))
			return pool_fail(err, -ENOMEM, "out of memory");
	}
	return 0;
}

/* ---- 2. against the pool (admin lock held) --------------------------------------- */

static bool pool_has_volumes(struct pool *p, struct pool_volume *tp)
{
	for (size_t i = 0; i < p->nr_vols; i++)
		if (p->vols[i]->type == &thin_type && p->vols[i]->thin.rec.pool == tp->rec.id)
			return true;
	return false;
}

static int find_pool(struct pool *p, struct restore *rs, struct pool_error *err)
{
	uint64_t nr_blocks;
	int r;

	r = pool_volume_get(p, rs->name, &thin_pool_type, false, &rs->tp, err);
	if (r)
		return r;
	if (!rs->tp->tp.pool)
		return pool_fail(err, -EIO, "thin pool '%s' is not running", rs->name);
	if (pool_has_volumes(p, rs->tp))
		return pool_fail(err, -EBUSY, "thin pool '%s' has volumes: restore needs an empty pool",
				 rs->name);
	if (rs->img.block_size != rs->tp->tp.rec->block_size)
		return pool_fail(err, -EINVAL, "the dump has blocks of %u bytes, thin pool '%s' of %u",
				 rs->img.block_size, rs->name, rs->tp->tp.rec->block_size);
	nr_blocks = rs->tp->rec.size / rs->tp->tp.rec->block_size;
	if (rs->data_end > nr_blocks) {
		const struct thin_image_ref *last = &rs->img.by_data[rs->img.nr_refs - 1];

		/* by_data sorts by start; name the run that reaches furthest. */
		for (size_t i = 0; i < rs->img.nr_refs; i++) {
			const struct thin_image_ref *ref = &rs->img.by_data[i];
			const struct thin_image_run *run = &rs->img.devs[ref->dev].runs[ref->run];

			if (run->data + run->len == rs->data_end)
				last = ref;
		}
		return pool_fail(err, -ENOSPC, "device %llu maps data block %llu, past the end of thin pool '%s' (%llu blocks): extend it first",
				 (unsigned long long)rs->img.devs[last->dev].dev_id,
				 (unsigned long long)(rs->data_end - 1), rs->name,
				 (unsigned long long)nr_blocks);
	}
	return 0;
}

/* No restored name is a volume's of the pool already.  O(V log D). */
static int check_names_free(struct pool *p, struct restore *rs, struct pool_error *err)
{
	for (size_t i = 0; i < p->nr_vols; i++) {
		const struct volume_rec *key = &p->vols[i]->rec;

		if (bsearch(&key, rs->by_name, rs->img.nr_devs, sizeof(*rs->by_name), cmp_rec_name))
			return pool_fail(err, -EEXIST, "volume '%s' exists", key->name);
	}
	return 0;
}

/*
 * The pages fit the pool's metadata limit, counted as META% counts them
 * (metadata_used_bytes: every page the pool loads, THIN_PAGE_STORE_BYTES
 * each).  The pool is empty, so they are all it will hold: the pages it
 * has are garbage, deleted with the restore.
 */
static int check_metadata(struct restore *rs, struct pool_error *err)
{
	uint64_t pages = rs->pages.nr_leaves + rs->pages.nr_dirs;
	uint64_t limit = pool_thin_metadata_limit(rs->tp);
	char need[SIZE_STR_LEN], max[SIZE_STR_LEN];

	if (pages * THIN_PAGE_STORE_BYTES <= limit)
		return 0;
	return pool_fail(err, -ENOSPC, "the restored maps would take %s of metadata (%llu map pages), past the metadata limit of thin pool '%s' (%s): raise it with 'mapperctl change %s --metadata-limit SIZE'",
			 format_size(pages * THIN_PAGE_STORE_BYTES, need), (unsigned long long)pages,
			 rs->name, format_size(limit, max), rs->name);
}

/* The run of by_data[@from, @to) that maps data block @db first. */
static const struct thin_image_ref *mapping_of(const struct restore *rs, size_t from, size_t to,
					      uint64_t db)
{
	for (size_t k = from; k < to; k++) {
		const struct thin_image_ref *ref = &rs->img.by_data[k];
		const struct thin_image_run *run = &rs->img.devs[ref->dev].runs[ref->run];

		if (run->data <= db && db < run->data + run->len)
			return ref;
	}
	return &rs->img.by_data[from];	/* cannot be: the range is the runs' */
}

/*
 * The mapped data blocks that are holes of their raw device, each
 * counted once: by_data's runs merged where they touch, each merged
 * range looked at once (so a dump of scattered single blocks costs one
 * lseek per hole or data extent, not one per block).  The first is named
 * by the run that maps it.
 */
static int find_holes(struct restore *rs, struct pool_error *err)
{
	const struct thin_image *img = &rs->img;
	uint64_t first = 0;
	size_t i = 0;
	int r = 0;

	while (!r && i < img->nr_refs) {
		const struct thin_image_run *run = &img->devs[img->by_data[i].dev].runs[img->by_data[i].run];
		uint64_t from = run->data, end = run->data + run->len;
		bool none_yet = !rs->holes;
		size_t j = i + 1;

		for (; j < img->nr_refs; j++) {
			run = &img->devs[img->by_data[j].dev].runs[img->by_data[j].run];
			if (run->data > end)
				break;
			if (run->data + run->len > end)
				end = run->data + run->len;
		}
		r = thin_pool_holes(rs->tp->tp.pool, from, end - from, &rs->holes, &first);
		if (!r && none_yet && rs->holes) {
			const struct thin_image_ref *ref = mapping_of(rs, i, j, first);

			run = &img->devs[ref->dev].runs[ref->run];
			rs->hole_dev = ref->dev;
			rs->hole_db = first;
			rs->hole_vb = run->origin + (first - run->data);
		}
		i = j;
	}
	if (r)
		return pool_fail(err, r, "cannot look for holes in the raw devices of thin pool '%s': %s",
				 rs->name, strerror(-r));
	if (!rs->holes || rs->spec->force)
		return 0;
	return pool_fail(err, -ENODATA, "%llu mapped data blocks are holes in their raw device (discarded since the dump?) and would read zeros; the first is data block %llu, virtual block %llu of volume '%s' (the dump's dev_id %llu): give --force to restore them all the same",
			 (unsigned long long)rs->holes, (unsigned long long)rs->hole_db,
			 (unsigned long long)rs->hole_vb, rs->recs[rs->hole_dev].name,
			 (unsigned long long)rs->img.devs[rs->hole_dev].dev_id);
}

static int check_against_pool(struct pool *p, struct restore *rs, struct pool_error *err)
{
	int r = find_pool(p, rs, err);

	if (!r)
		r = check_names_free(p, rs, err);
	if (!r)
		r = check_metadata(rs, err);
	if (!r)
		r = find_holes(rs, err);
	return r;
}

static void report_plan(struct restore *rs, void (*report)(void *, const char *), void *arg)
{
	bool dry_run = rs->spec->dry_run;
	uint64_t nr_blocks = rs->tp->rec.size / rs->tp->tp.rec->block_size;

	if (rs->img.nr_blocks > nr_blocks)
		pool_report_line(report, arg, "the dump's pool has %llu data blocks, thin pool '%s' %llu: every mapping fits",
				 (unsigned long long)rs->img.nr_blocks, rs->name,
				 (unsigned long long)nr_blocks);
	for (size_t i = 0; i < rs->img.nr_devs; i++) {
		const struct thin_image_dev *d = &rs->img.devs[i];
		const char *origin = d->is_snapshot ? rs->recs[d->origin].name : NULL;

		pool_report_line(report, arg, "%s thin volume '%s' (the dump's dev_id %llu): %llu bytes%s, %llu mapped blocks%s%s%s",
				 dry_run ? "would create" : "creating", rs->recs[i].name,
				 (unsigned long long)d->dev_id, (unsigned long long)rs->recs[i].size,
				 rs->sized_by_mappings[i] ? " (the end of its last mapping: the dump has no size)" : "",
				 (unsigned long long)rs->mapped[i], origin ? ", a snapshot of '" : "",
				 origin ? origin : "", origin ? "'" : "");
	}
	if (!rs->holes)
		return;
	pool_report_line(report, arg, "%s %llu data blocks that are holes in their raw device: they read zeros (the first is data block %llu, virtual block %llu of volume '%s')",
			 dry_run ? "would map" : "mapping", (unsigned long long)rs->holes,
			 (unsigned long long)rs->hole_db, (unsigned long long)rs->hole_vb,
			 rs->recs[rs->hole_dev].name);
	if (!dry_run)	/* a record for the log: the report told the user already */
		log_info("thin pool '%s': restore maps %llu data blocks that are holes in their raw device (--force): they read zeros; the first is data block %llu, virtual block %llu of volume '%s'",
			 rs->name, (unsigned long long)rs->holes, (unsigned long long)rs->hole_db,
			 (unsigned long long)rs->hole_vb, rs->recs[rs->hole_dev].name);
}

/* ---- 3. recording, and starting -------------------------------------------------- */

/* Page ids past the pool's: it reads the largest again when it restarts. */
static void rebase_pages(struct restore *rs)
{
	int64_t shift = thin_pool_reserve_page_id(rs->tp->tp.pool) - 1;

	for (size_t i = 0; i < rs->pages.nr_leaves; i++)
		rs->pages.leaves[i].id += shift;
	for (size_t i = 0; i < rs->pages.nr_dirs; i++) {
		struct thin_dir_rec *d = &rs->pages.dirs[i];

		d->id += shift;
		for (uint32_t j = 0; j < d->nr; j++)
			if (d->leaves[j])
				d->leaves[j] += shift;
	}
}

/* What publishing needs, made before anything is recorded, so that it cannot fail. */
static int prepare(struct pool *p, struct restore *rs, struct pool_error *err)
{
	rs->vols = calloc(rs->img.nr_devs + 1, sizeof(*rs->vols));
	for (size_t i = 0; rs->vols && i < rs->img.nr_devs; i++) {
		rs->vols[i] = pool_volume_new(&rs->recs[i], &thin_type);
		if (!rs->vols[i])
			return pool_fail(err, -ENOMEM, "out of memory");
	}
	if (!rs->vols || pool_reserve(p, rs->img.nr_devs, 0))
		return pool_fail(err, -ENOMEM, "out of memory");
	rebase_pages(rs);
	return 0;
}

/* The volume id a restored device's origin got, or 0.  After the inserts. */
static int64_t origin_id(const struct restore *rs, size_t i)
{
	const struct thin_image_dev *d = &rs->img.devs[i];

	return d->is_snapshot ? rs->recs[d->origin].id : 0;
}

/*
 * The pool's pages before are garbage (it has no volume to reach them):
 * deleted.  Every volume row first: a snapshot's row names its origin's
 * id.
 */
static int record_restore(struct pool *p, void *arg)
{
	struct restore *rs = arg;
	const struct pool_meta_ops *m = p->meta->ops;
	int64_t pool = rs->tp->rec.id;
	struct thin_leaf_rec leaf;
	int r = m->thin_pages_delete(p->meta, pool);

	for (size_t i = 0; !r && i < rs->pages.nr_leaves; i++) {
		image_pages_leaf(&rs->pages, i, &leaf);
		r = m->thin_leaf_put(p->meta, pool, &leaf);
	}
	for (size_t i = 0; !r && i < rs->img.nr_devs; i++)
		r = m->volume_insert(p->meta, &rs->recs[i]);
	for (size_t i = 0; !r && i < rs->img.nr_devs; i++) {
		struct thin_rec row = { .volume = rs->recs[i].id, .pool = pool,
					.dir = rs->pages.dirs[i].id, .snapshot_of = origin_id(rs, i) };

		r = m->thin_dir_put(p->meta, pool, &rs->pages.dirs[i]);
		if (!r)
			r = m->thin_put(p->meta, &row);
	}
	return r;
}

/* The pool was empty: its pages are all the restore's. */
static int record_undo(struct pool *p, void *arg)
{
	struct restore *rs = arg;
	const struct pool_meta_ops *m = p->meta->ops;
	int r = m->thin_pages_delete(p->meta, rs->tp->rec.id);

	for (size_t i = 0; !r && i < rs->img.nr_devs; i++)
		r = m->volume_delete(p->meta, rs->recs[i].id);
	return r;
}

static int record(struct pool *p, struct restore *rs, struct pool_error *err)
{
	int r = thin_pool_admin_begin(rs->tp->tp.pool, NULL);

	if (r)
		return pool_store_fail(err, r, "commit the thin pool first");
	r = pool_record(p, "record the restored volumes", record_restore, rs, err);
	thin_pool_admin_end(rs->tp->tp.pool);
	return r;
}

/* Adds the restored volumes to the model (room reserved), in one batch. */
static void publish(struct pool *p, struct restore *rs)
{
	for (size_t i = 0; i < rs->img.nr_devs; i++) {
		struct pool_volume *v = rs->vols[i];

		v->rec = rs->recs[i];
		v->thin.rec = (struct thin_rec){ .volume = rs->recs[i].id, .pool = rs->tp->rec.id,
						 .dir = rs->pages.dirs[i].id,
						 .snapshot_of = origin_id(rs, i) };
	}
	pool_volumes_publish(p, rs->vols, rs->img.nr_devs);
	rs->published = true;
}

/*
 * Starting failed although every check passed (out of memory, the store
 * could not be read): the restore is taken back, rows and model, and the
 * pool started again as it was.
 */
static int undo(struct pool *p, struct restore *rs, struct pool_error *err)
{
	struct pool_error why = *err, e;
	int r;

	r = pool_record(p, "undo the restore", record_undo, rs, &e);
	if (r)
		return pool_fail(err, -EIO, "thin pool '%s' did not start with the restored maps (%s), and undoing the restore failed too (%s): 'mapperctl reload' once the cause is gone",
				 rs->name, why.msg, e.msg);
	pool_volumes_forget(p, rs->vols, rs->img.nr_devs);	/* frees them */
	r = pool_thin_start(p, rs->tp, &e);
	log_error("thin pool '%s': restore undone: the pool did not start with the restored maps: %s",
		  rs->name, why.msg);
	if (r)
		return pool_fail(err, -EIO, "thin pool '%s' did not start with the restored maps (%s); the restore was undone, but the pool does not start either: %s",
				 rs->name, why.msg, e.msg);
	return pool_fail(err, -EIO, "thin pool '%s' did not start with the restored maps (%s); the restore was undone: the pool is as it was",
			 rs->name, why.msg);
}

static int record_and_start(struct pool *p, struct restore *rs, struct pool_error *err)
{
	size_t leaves;
	int r = prepare(p, rs, err);

	if (!r)
		r = record(p, rs, err);
	if (r)
		return r;
	publish(p, rs);
	leaves = rs->pages.nr_leaves;
	image_pages_release(&rs->pages);	/* the pool is about to load as much again */
	pool_thin_stop(p, rs->tp);
	r = pool_thin_start(p, rs->tp, err);
	if (r)
		return undo(p, rs, err);
	log_info("thin pool '%s': restored %zu volumes, %zu leaves", rs->name, rs->img.nr_devs,
		 leaves);
	return 0;
}

int pool_thin_restore(struct pool *p, const char *name, const struct pool_restore_spec *s,
		      void (*report)(void *arg, const char *line), void *arg,
		      struct pool_error *err)
{
	struct restore rs = { .name = name, .spec = s };
	int r;

	r = read_image(&rs, err);
	if (!r)
		r = plan(&rs, err);
	if (!r)
		r = build_pages(&rs, err);
	if (r)
		goto out;
	pool_admin_lock(p);
	r = check_against_pool(p, &rs, err);
	if (!r)
		report_plan(&rs, report, arg);
	if (!r && !s->dry_run)
		r = record_and_start(p, &rs, err);
	pool_admin_unlock(p);
out:
	restore_release(&rs);
	return r;
}
