/*
 * core/pool/pool_thin_admin.c: what thin-provisioning-tools does for dm-thin
 * administrators, as pool service operations: dump, repair, trim, and
 * the metadata size estimate (restore: pool_thin_restore.c).
 *
 * Dump reads a committed, consistent point: online, the pool commits
 * what is pending and holds its commits off (thin_pool_admin_begin)
 * until a read transaction of the walk's own connection has seen the
 * store (its snapshot), and the volumes' map directories are read from
 * the store too, since a write may copy a directory in memory meanwhile.
 * The walk (thin_walk.c) and the dump read that snapshot, with no lock
 * held on the pool, one leaf at a time, written out as thin_dump's XML
 * (thin_image.h).
 *
 * Repair, like restore, ends in new map pages for a pool
 * (pool_thin_pages.c), recorded in ONE store transaction with the thin
 * rows, and the pool is started again from the store (pool_thin_start),
 * which is also how a repaired pool that was failed comes back into
 * service.  Repair keeps every page it can read and drops what it cannot:
 * an unreadable or missing leaf loses the virtual blocks it covered, an
 * unreadable directory its volume's whole map, an entry past the pool's
 * end or a second virtual block on one data block that entry.  Each loss
 * is reported by volume name as a byte range.
 */
#include "pool_int.h"

#include <errno.h>
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

/* ---- reading the committed pages ---------------------------------------------- */

struct committed {
	const struct thin_meta_ops *ops;
	void *arg;
	struct thin_walk_vol *vols;	/* by volume id, as the store has them */
	struct pool_volume **pvs;	/* the pool's volume of each */
	size_t nr;
	bool reading;			/* in a read transaction of c->arg */
	struct thin_walk w;
	struct thin_pool *budget;	/* the running pool whose budget lent the walk ... */
	uint64_t reserved;		/* ... these bytes (thin_pool_cache_reserve) */
};

static void committed_release(struct pool *p, struct committed *c)
{
	thin_walk_release(&c->w);
	if (c->budget)
		thin_pool_cache_unreserve(c->budget, c->reserved);
	free(c->vols);
	free(c->pvs);
	if (c->reading)
		c->ops->read_end(c->arg);
	if (c->arg)
		p->meta->ops->thin_close(p->meta, c->arg);
	memset(c, 0, sizeof(*c));
}

/* The thin volumes as committed: the store's rows, named from memory. */
static int committed_vols(struct pool *p, struct pool_volume *tp, struct committed *c,
			  struct pool_error *err)
{
	struct thin_vol_rec *rows = NULL;
	uint64_t bs = tp->tp.rec->block_size;
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
 * left out, thin_walk.h) in a read transaction that lasts until
 * committed_release.  A running pool commits first and holds its commits
 * off until that transaction has its snapshot; the walk's counts are
 * first reserved from its memory budget, until committed_release.
 */
static int committed_read(struct pool *p, struct pool_volume *tp,
			  struct committed *c, struct pool_error *err)
{
	uint64_t nr_blocks = tp->rec.size / tp->tp.rec->block_size;
	struct thin_pool *pool = tp->tp.pool;
	int r;

	memset(c, 0, sizeof(*c));
	r = p->meta->ops->thin_open(p->meta, tp->rec.id, &c->ops, &c->arg);
	if (r) {
		c->arg = NULL;
		return pool_store_fail(err, r, "read the thin pool's metadata");
	}
	if (pool) {
		struct thin_pool_usage u;

		thin_pool_usage(pool, &u);
		c->budget = pool;
		c->reserved = thin_walk_bytes(nr_blocks, u.nr_leaves);
		thin_pool_cache_reserve(pool, c->reserved);
		r = thin_pool_admin_begin(pool, NULL);
		if (r) {
			committed_release(p, c);
			return pool_fail(err, r, "cannot commit thin pool '%s': %s", tp->rec.name,
					 strerror(-r));
		}
	}
	r = c->ops->read_begin(c->arg);
	if (r)
		pool_store_fail(err, r, "read the thin pool's metadata");
	c->reading = !r;
	if (!r)
		r = committed_vols(p, tp, c, err);	/* the first read: the snapshot */
	if (pool)
		thin_pool_admin_end(pool);
	if (!r) {
		r = thin_walk_load(c->ops, c->arg, nr_blocks, c->vols, c->nr, &c->w);
		if (r == -ENOMEM)
			pool_fail(err, r, "out of memory");
		else if (r)
			pool_store_fail(err, r, "read the thin pool's metadata");
	}
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
 * The blocks directory @d maps, and in *@shared whether any of them has
 * other references.  The walk counts a block once per distinct leaf, so
 * a block is shared also when its leaf is reached from another directory,
 * or its directory from another volume: a snapshot nobody wrote since
 * shares its origin's whole map, and its blocks are as shared as any.
 * From the walk's figures: reads nothing.
 */
static uint64_t dir_mapped(const struct thin_walk *w, const struct thin_dir_rec *d,
			   bool *shared)
{
	bool page_shared = d && w->dir_refs[d - w->dirs] > 1;
	uint64_t n = 0;

	*shared = false;
	for (uint32_t j = 0; d && j < d->nr; j++) {
		const struct thin_walk_leaf *l = d->leaves[j] ? thin_walk_leaf(w, d->leaves[j]) : NULL;

		if (!l || !l->mapped)
			continue;
		n += l->mapped;
		*shared |= page_shared || l->refs > 1 || l->shares_block;
	}
	return n;
}

/* Writes the mapped entries of directory @d as runs, a leaf read at a time.  0 or -errno. */
static int write_entries(const struct thin_walk *w, const struct thin_dir_rec *d,
			 struct thin_image_writer *out)
{
	struct thin_image_run run = { 0 };
	struct thin_leaf_rec rec;
	int r;

	for (uint32_t j = 0; d && j < d->nr; j++) {
		const struct thin_walk_leaf *l = d->leaves[j] ? thin_walk_leaf(w, d->leaves[j]) : NULL;

		if (!l || !l->mapped)
			continue;
		r = thin_walk_read_leaf(w, l, &rec);
		if (r)
			return r;
		for (unsigned int k = 0; k < THIN_LEAF_ENTRIES; k++) {
			uint64_t vb = (uint64_t)j * THIN_LEAF_ENTRIES + k, db;

			if (!rec.map[k])
				continue;
			db = rec.map[k] - 1;
			if (run.len && run.origin + run.len == vb && run.data + run.len == db) {
				run.len++;
				continue;
			}
			if (run.len)
				thin_image_write_run(out, &run);
			run = (struct thin_image_run){ vb, db, 1 };
		}
	}
	if (run.len)
		thin_image_write_run(out, &run);
	return 0;
}

/* Volume @id is one of the dump's devices. */
static bool dumped(const struct committed *c, int64_t id)
{
	for (size_t i = 0; i < c->nr; i++)
		if (c->pvs[i]->rec.id == id)
			return true;
	return false;
}

static int dump_walk(const struct committed *c, struct thin_image_writer *out)
{
	int r = 0;

	for (size_t i = 0; !r && i < c->nr; i++) {
		const struct thin_dir_rec *d = thin_walk_vol_dir(&c->w, i);
		struct thin_image_dev dev = { .dev_id = (uint64_t)c->pvs[i]->rec.id };
		int64_t origin = c->pvs[i]->thin.rec.snapshot_of;
		bool shared = false;

		snprintf(dev.name, sizeof(dev.name), "%s", c->pvs[i]->rec.name);
		dev.size = c->pvs[i]->rec.size;
		dev.is_snapshot = origin && dumped(c, origin);
		dev.snapshot_of = dev.is_snapshot ? (uint64_t)origin : 0;
		dev.mapped_blocks = dir_mapped(&c->w, d, &shared);
		dev.snap_time = shared;
		thin_image_write_dev(out, &dev);
		r = write_entries(&c->w, d, out);
		thin_image_write_dev_end(out);
	}
	return r;
}

/* Whether any block of the walk has two references, by block or by page. */
static bool any_shared(const struct thin_walk *w)
{
	for (size_t i = 0; i < w->nr_dirs; i++)
		if (w->dir_refs[i] > 1)
			return true;
	for (size_t i = 0; i < w->nr_leaves; i++)
		if (thin_walk_leaf_at(w, i)->refs > 1)
			return true;
	return w->shared_refs > 0;
}

/* Notes in @what the dumped volumes that read an external origin. */
static void note_external(const struct committed *c, struct pool_dumped *what)
{
	for (size_t i = 0; i < c->nr; i++) {
		if (!c->pvs[i]->thin.origin)
			continue;
		if (!what->nr_external++)
			snprintf(what->first_external, sizeof(what->first_external), "%s",
				 c->pvs[i]->rec.name);
	}
}

int pool_thin_dump(struct pool *p, const char *name, enum pool_dump_format format,
		   FILE *out, struct pool_dumped *what, struct pool_error *err)
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
	sb.block_size = tp->tp.rec->block_size;
	sb.nr_blocks = c.w.nr_blocks;
	sb.transaction = 1;
	sb.time = any_shared(&c.w);		/* as every device's snap_time */
	r = thin_image_writer_open(out, format == POOL_DUMP_JSON ? THIN_IMAGE_JSON : THIN_IMAGE_XML,
				   &sb, &wr);
	if (r) {
		r = pool_fail(err, r, "out of memory");
		goto out_release;
	}
	r = dump_walk(&c, wr);
	thin_image_writer_close(wr);
	if (r)
		pool_store_fail(err, r, "read the thin pool's metadata");
	else if (fflush(out) || ferror(out))
		r = pool_fail(err, -EIO, "cannot write the dump");
	*what = (struct pool_dumped){ .nr_volumes = c.nr };
	note_external(&c, what);
out_release:
	committed_release(p, &c);
out:
	pool_admin_unlock(p);
	return r;
}

/* ---- repair ------------------------------------------------------------------- */

struct repair {
	struct pool_volume *tp;
	struct committed c;
	struct thin_image img;		/* what survives, per volume of c */
	struct image_pages pages;
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
	uint64_t bs = rp->tp->tp.rec->block_size, size = rp->c.pvs[i]->rec.size;
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

/*
 * What of volume @i survives: entries of readable leaves, in the pool,
 * once.  0, -ENOMEM, or the store's -errno.
 */
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
		const struct thin_walk_leaf *wl = d->leaves[j] ? thin_walk_leaf(w, d->leaves[j]) : NULL;
		struct thin_leaf_rec lf;
		int r;

		if (d->leaves[j] && !wl) {
			for (unsigned int k = 0; k < THIN_LEAF_ENTRIES; k++)
				loss_add(rp, i, &l, (uint64_t)j * THIN_LEAF_ENTRIES + k);
			continue;
		}
		if (!wl)
			continue;
		r = thin_walk_read_leaf(w, wl, &lf);
		if (r)
			return r;
		for (unsigned int k = 0; k < THIN_LEAF_ENTRIES; k++) {
			uint64_t vb = (uint64_t)j * THIN_LEAF_ENTRIES + k, db;

			if (!lf.map[k] || vb >= nr)
				continue;	/* past its end: nothing it can read */
			db = lf.map[k] - 1;
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
	struct thin_leaf_rec leaf;
	int r;

	r = m->thin_pages_delete(p->meta, pool);
	for (size_t i = 0; !r && i < rp->pages.nr_leaves; i++) {
		image_pages_leaf(&rp->pages, i, &leaf);
		r = m->thin_leaf_put(p->meta, pool, &leaf);
	}
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
	uint8_t shift = (uint8_t)__builtin_ctz(rp->tp->tp.rec->block_size);
	int64_t next_id = 1;

	rp->pages.dirs = calloc(rp->c.nr + 1, sizeof(*rp->pages.dirs));
	if (!rp->pages.dirs)
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < rp->c.nr; i++) {
		rp->pages.nr_dirs++;
		if (image_pages_build_dir(&rp->pages, &rp->img.devs[i], rp->c.pvs[i]->rec.size, shift, &next_id,
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
	if (r == -ENOMEM)
		return pool_fail(err, r, "out of memory");
	return pool_store_fail(err, r, "read the thin pool's metadata");
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
	pool_report_line(report, arg, "thin pool '%s' repaired: %zu volume%s, %llu blocks lost, %llu damaged pages dropped, %zu leaves written",
		    name, rp.c.nr, rp.c.nr == 1 ? "" : "s", (unsigned long long)rp.lost,
		    (unsigned long long)(rp.c.w.unreadable + rp.misfit), rp.pages.nr_leaves);
	if (was_failed)
		pool_report_line(report, arg, "thin pool '%s' is back in service (it was failed: %s)",
			    name, was_failed);
	log_info("thin pool '%s' repaired: %llu blocks lost%s", name,
		 (unsigned long long)rp.lost, was_failed ? "; back in service" : "");
out:
	if (rp.losses)
		fclose(rp.losses);
	free(rp.losses_buf);
	free(was_failed);
	committed_release(p, &rp.c);
	image_pages_release(&rp.pages);
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
	if (!thin_block_size_ok(block_size))
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
