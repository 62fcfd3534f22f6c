/*
 * core/pool/pool_thin.c: thin pools and thin volumes in the pool service.
 *
 * A thin pool is a volume of kind "thin-pool": a data area of extents,
 * split into blocks, which is not a file in the mount.  Its thin volumes
 * map their blocks into it (thin.c, thin_pool.c).  Their maps are pages
 * that the pool commits lazily on its own connection to the store; the
 * service records everything else: the volume rows, which directory page
 * is a volume's map, the external origins.
 *
 * An admin change of a thin volume therefore brackets itself with the
 * pool (thin_pool_admin_begin/end): after the volumes it touches are
 * suspended (their writes wait), the pool commits what is pending, so
 * that the directory ids the change records are committed ones, and no
 * commit runs until the change is recorded and memory shows it.  So
 *
 *   snapshot:  suspend the origin, begin, share its map in memory (O(1),
 *              undone if the record fails), record the new volume with
 *              the origin's directory, publish, end;
 *   rollback:  the same with the volume's row pointing at the snapshot's
 *              directory;
 *   extend:    record a grown copy of the directory under a new page id,
 *              then switch to it;
 *   remove:    record the deletion, then drop the map (the pages that die
 *              are deleted by the pool's next commit; a crash before it
 *              leaves unreachable pages, which opening collects).  A pool
 *              that is not running (failed) has no map to drop and no
 *              commit: the pages no other volume reaches are collected
 *              at once, as opening would.
 *
 * Opening a thin pool loads every map of it before it derives the block
 * counts, so one volume whose map cannot be read fails the whole pool:
 * counts without it would hand its blocks to others.  A missing external
 * origin fails only its volume; so does an origin image that changed
 * since the volume was made (its size and mtime are recorded) or that a
 * writer reached while served (image.c: the image is leased, and fenced
 * when the lease breaks).  Unreachable pages, damaged ones too, are
 * collected only when every thin volume of the pool has its row and every
 * reference resolved: never at the cost of a volume that did not load.
 */
#include "pool_int.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "device.h"
#include "fsid.h"
#include "image.h"
#include "json.h"
#include "linear.h"
#include "log.h"
#include "mirror.h"
#include "probe.h"
#include "size.h"
#include "thin.h"
#include "thin_alloc.h"
#include "thin_map.h"
#include "thin_pool.h"
#include "thin_reach.h"
#include "thin_walk.h"
#include "volume.h"

#define VOLUME_ALIGN		4096u

static struct thin_pool *running(struct pool_volume *pool_v)
{
	return pool_v->tp.pool;
}

/* The thin pool of thin volume @v, running, or NULL with @err set. */
static struct pool_volume *pool_of(struct pool *p, struct pool_volume *v,
				   struct pool_error *err)
{
	struct pool_volume *tp = pool_volume_by_id(p, v->thin.rec.pool);

	if (!tp || tp->type != &thin_pool_type) {
		pool_fail(err, -EUCLEAN, "thin volume '%s' names thin pool %lld, which the pool does not have",
			  v->rec.name, (long long)v->thin.rec.pool);
		return NULL;
	}
	if (!running(tp)) {
		pool_fail(err, -EIO, "thin pool '%s' is failed: %s", tp->rec.name,
			  tp->failure ? tp->failure : "not running");
		return NULL;
	}
	return tp;
}

/* Leaves a map of @size bytes needs: in 64 bits, and no "size + bs - 1" that a size near 2^64 wraps. */
static uint64_t slots_for(uint32_t bs, uint64_t size)
{
	return (size / bs + (size % bs != 0) + THIN_LEAF_ENTRIES - 1) / THIN_LEAF_ENTRIES;
}

static uint64_t slots_of(const struct pool_volume *tp, uint64_t size)
{
	return slots_for(tp->tp.rec->block_size, size);
}

int pool_thin_check_virtual_size(const char *pool, uint32_t bs, uint64_t size,
				 struct pool_error *err)
{
	char max[SIZE_STR_LEN], block[SIZE_STR_LEN];

	if (!size || size % VOLUME_ALIGN)
		return pool_fail(err, -EINVAL, "the size must be a positive multiple of 4 KiB");
	if (slots_for(bs, size) <= THIN_DIR_SLOTS_MAX)
		return 0;
	format_size((uint64_t)THIN_DIR_SLOTS_MAX * THIN_LEAF_ENTRIES * bs, max);
	if (pool)
		return pool_fail(err, -EFBIG, "a thin volume of thin pool '%s' is at most %s", pool,
				 max);
	return pool_fail(err, -EFBIG, "a thin volume with blocks of %s is at most %s",
			 format_size(bs, block), max);
}

static int check_virtual_size(const struct pool_volume *tp, uint64_t size,
			      struct pool_error *err)
{
	return pool_thin_check_virtual_size(tp->rec.name, tp->tp.rec->block_size, size, err);
}

/* A thin pool's block size and policies, as created or as read back. */
static int check_policy(const struct thin_pool_rec *tp, struct pool_error *err)
{
	uint32_t bs = tp->block_size;

	if (!thin_block_size_ok(bs))
		return pool_fail(err, -EINVAL, "block size %u must be a power of two from 64K to 1G",
				 bs);
	if (tp->low_water > 100)
		return pool_fail(err, -EINVAL, "the low-water mark must be a percentage 0..100");
	if (tp->wait && (!tp->wait_seconds || tp->wait_seconds > 86400))
		return pool_fail(err, -EINVAL, "a pool waits 1..86400 seconds when full");
	if (tp->autoextend_threshold < POOL_AUTOEXTEND_THRESHOLD_MIN || tp->autoextend_threshold > 100)
		return pool_fail(err, -EINVAL, "the autoextend threshold must be a percentage %u..100 (100: never)",
				 POOL_AUTOEXTEND_THRESHOLD_MIN);
	if (tp->autoextend_percent > POOL_AUTOEXTEND_PERCENT_MAX)
		return pool_fail(err, -EINVAL, "the autoextend percent must be a number 0..%u",
				 POOL_AUTOEXTEND_PERCENT_MAX);
	if (tp->autoextend_threshold < 100 && !tp->autoextend_percent)
		return pool_fail(err, -EINVAL, "an autoextend threshold needs a positive autoextend percent");
	if (tp->metadata_limit && tp->metadata_limit < 16 * THIN_PAGE_STORE_BYTES)
		return pool_fail(err, -EINVAL, "the metadata limit must be at least 64 KiB (16 map pages)");
	return 0;
}

int pool_thin_check_blocks(const char *name, uint32_t bs, uint64_t size,
			   struct pool_error *err)
{
	char max[SIZE_STR_LEN], block[SIZE_STR_LEN];

	if (size / bs <= THIN_ALLOC_MAX_BLOCKS)
		return 0;
	format_size(bs, block);
	format_size(THIN_ALLOC_MAX_BLOCKS * bs, max);
	if (!name)
		return pool_fail(err, -EFBIG, "a thin pool would have more than 2^28 blocks: with %s blocks it is at most %s",
				 block, max);
	return pool_fail(err, -EFBIG, "thin pool '%s' would have more than 2^28 blocks: with %s blocks it is at most %s",
			 name, block, max);
}

/* ---- attach: the kind rows -------------------------------------------------- */

/*
 * The row of volume @volume among @nr rows of @size bytes, each starting
 * with its volume id, sorted by it (pool_meta_image's order), or NULL.
 * O(log nr): attaching each of 100,000 thin volumes must not scan them all.
 */
static int cmp_row_volume(const void *key, const void *row)
{
	int64_t x = *(const int64_t *)key, y = *(const int64_t *)row;

	return (x > y) - (x < y);
}

static const void *row_of(const void *rows, size_t nr, size_t size, int64_t volume)
{
	return nr ? bsearch(&volume, rows, nr, size, cmp_row_volume) : NULL;
}

_Static_assert(offsetof(struct thin_pool_rec, volume) == 0, "row_of reads the volume first");
_Static_assert(offsetof(struct thin_rec, volume) == 0, "row_of reads the volume first");
_Static_assert(offsetof(struct thin_origin_rec, volume) == 0, "row_of reads the volume first");

static int thin_pool_attach(struct pool_volume *v, const struct pool_meta_image *img)
{
	char why[POOL_ERROR_LEN + 32];
	struct pool_error e;
	const struct thin_pool_rec *row = row_of(img->thin_pools, img->nr_thin_pools,
						 sizeof(*row), v->rec.id);

	v->tp.rec = calloc(1, sizeof(*v->tp.rec));
	if (!v->tp.rec)
		return -ENOMEM;
	if (!row) {
		pool_volume_broken(v, "its thin pool row is missing");
		return 0;
	}
	*v->tp.rec = *row;
	if (check_policy(v->tp.rec, &e)) {
		snprintf(why, sizeof(why), "its thin pool row is damaged: %s", e.msg);
		pool_volume_broken(v, why);
	}
	return 0;
}

static int thin_attach(struct pool_volume *v, const struct pool_meta_image *img)
{
	const struct thin_rec *row = row_of(img->thins, img->nr_thins, sizeof(*row), v->rec.id);
	const struct thin_origin_rec *origin = row_of(img->origins, img->nr_origins,
						      sizeof(*origin), v->rec.id);

	if (row)
		v->thin.rec = *row;
	if (origin) {
		v->thin.origin = malloc(sizeof(*v->thin.origin));
		if (!v->thin.origin)
			return -ENOMEM;
		*v->thin.origin = *origin;
	}
	if (!v->thin.rec.volume)
		pool_volume_broken(v, "its map is missing (no thin row)");
	return 0;
}

/* ---- external origins --------------------------------------------------------- */

/* "2026-12-01T10:00:03.123456789Z" (UTC) for @ns since the epoch. */
static const char *format_ns(int64_t ns, char *buf, size_t len)
{
	time_t sec = (time_t)(ns / 1000000000);
	struct tm tm;

	gmtime_r(&sec, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (long long)(ns % 1000000000));
	return buf;
}

/*
 * 0 if origin image @im is what @o recorded when the volume was made
 * (nothing recorded: a volume from before schema 6), else -ESTALE with
 * what changed; its unwritten blocks would show the new bytes.  One fstat.
 */
static int origin_unchanged(struct target *im, const struct thin_origin_rec *o,
			    struct pool_error *err)
{
	char was[SIZE_STR_LEN], now[SIZE_STR_LEN], t0[80], t1[80];
	uint64_t size;
	int64_t mtime;
	int r = image_identity(im, &size, &mtime);

	if (r)
		return pool_fail(err, r, "cannot look at its origin '%s': %s", o->origin_path,
				 strerror(-r));
	if (o->origin_size && size != o->origin_size)
		return pool_fail(err, -ESTALE, "its origin '%s' changed since the volume was made: "
				 "it is %s, it was %s", o->origin_path, format_size(size, now),
				 format_size(o->origin_size, was));
	if (o->origin_mtime_ns && mtime != o->origin_mtime_ns)
		return pool_fail(err, -ESTALE, "its origin '%s' changed since the volume was made: "
				 "modified %s, it was %s; if its bytes are as they were, "
				 "'touch -d @%lld.%09lld %s' says so", o->origin_path,
				 format_ns(mtime, t1, sizeof(t1)),
				 format_ns(o->origin_mtime_ns, t0, sizeof(t0)),
				 (long long)(o->origin_mtime_ns / 1000000000),
				 (long long)(o->origin_mtime_ns % 1000000000), o->origin_path);
	return 0;
}

/* Notes in @o what image @im is now, for origin_unchanged() to compare. */
static int record_identity(struct target *im, struct thin_origin_rec *o,
			   struct pool_error *err)
{
	int r = image_identity(im, &o->origin_size, &o->origin_mtime_ns);

	return r ? pool_fail(err, r, "cannot look at origin '%s': %s", o->origin_path,
			     strerror(-r)) : 0;
}

/*
 * An origin image is opened only as the pool's owner may read it
 * (fsid.h): the owner can name any path in pool.db, and a root daemon
 * must not show them, or copy on write into their raw device, what they
 * could not read.  Raw devices are opened with the process's rights: they
 * may be root's block devices by design, and nothing is written to one
 * that lacks the label.  as_owner() takes the owner's identity to open
 * @what ("origin") @path; owner_refusal() explains what opening it then
 * returned, @r, if it is a refusal of that kind (else 0).
 */
static int as_owner(struct pool *p, const char *what, const char *path,
		    struct fsid_saved *self, struct pool_error *err)
{
	int r = fsid_take(&p->owner, self);

	return r ? pool_fail(err, r, "cannot take the identity of the pool's owner (uid %u) "
			     "to open %s '%s': %s", (unsigned int)p->owner.uid, what, path,
			     strerror(-r)) : 0;
}

static int owner_refusal(const struct pool *p, const char *what, const char *path, int r,
			 const struct fsid_saved *self, struct pool_error *err)
{
	if (r == -EACCES && self->switched)
		return pool_fail(err, r, "%s '%s' cannot be read by the pool's owner (uid %u), "
				 "as whom it is read", what, path, (unsigned int)p->owner.uid);
	if (r == -ENOTBLK)
		return pool_fail(err, r, "%s '%s' is neither a regular file nor a block device",
				 what, path);
	return 0;
}

/* Opens the image @o names for pool @p, guarded (image.h), as it was recorded. */
static int open_image(struct pool *p, struct pool_volume *v, const struct thin_origin_rec *o,
		      struct target **out, struct pool_error *err)
{
	struct fsid_saved self;
	char why[160];
	int r = as_owner(p, "its origin", o->origin_path, &self, err);

	if (r)
		return r;
	r = image_open(o->origin_path, out);
	fsid_restore(&self);
	if (owner_refusal(p, "its origin", o->origin_path, r, &self, err))
		return r;
	if (r == -ETXTBSY)
		return pool_fail(err, r, "its origin '%s' is open for writing by another program "
				 "(its writes would show through): close it first", o->origin_path);
	if (r)
		return pool_fail(err, r, "cannot open its origin '%s': %s", o->origin_path,
				 r == -EINVAL ? "it is empty" : strerror(-r));
	r = origin_unchanged(*out, o, err);
	if (r) {
		(*out)->ops->destroy(*out);
		return r;
	}
	if (!image_guarded(*out, why, sizeof(why)))
		log_warn("thin volume '%s': nothing keeps other programs from writing its origin "
			 "'%s': %s", v->rec.name, o->origin_path, why);
	return 0;
}

/*
 * Gives thin target @t of @v the external origin @o names: a served
 * volume (which cannot be removed while @t reads it), or an image opened
 * here, guarded against writers, and closed with @t.
 */
static int attach_origin(struct pool *p, struct pool_volume *v, struct target *t,
			 const struct thin_origin_rec *o, struct pool_error *err)
{
	struct target *im;
	int r;

	if (o->origin_volume) {
		struct pool_volume *ov = pool_volume_by_id(p, o->origin_volume);

		if (!ov || !ov->served || ov->failure)
			return pool_fail(err, -ENOENT, "its origin volume %s is not served",
					 ov ? ov->rec.name : "(gone)");
		thin_set_origin(t, ov->served->target, atomic_load(&ov->served->size), false, NULL);
		return 0;
	}
	r = open_image(p, v, o, &im, err);
	if (r)
		return r;
	thin_set_origin(t, im, image_size(im), true, NULL);
	v->thin.image = im;
	return 0;
}

/*
 * Whether @v fails though served: its origin image is fenced (a writer
 * reached it: image.h); then why, in @why.  Its failing hook.
 */
static bool thin_failing(struct pool_volume *v, char *why, size_t len)
{
	if (!v->thin.image || !image_fenced(v->thin.image))
		return false;
	/* Cut to @len, as every reason is. */
	if (v->thin.unfence_failure)
		return snprintf(why, len, "%s", v->thin.unfence_failure) >= 0;
	return snprintf(why, len, "its origin '%s' was opened for writing or truncated by "
			"another program while served: its reads fail, so that it never shows "
			"the image half changed ('mapperctl reload' serves it again if the image "
			"is as it was)", v->thin.origin->origin_path) >= 0;
}

/*
 * Serves @v again if its origin image is fenced, yet nobody has it open
 * for writing now and it is as recorded (image_unfence).  Its recover
 * hook: otherwise why not becomes the reason thin_failing gives, as a
 * restart would give it.
 */
static int thin_recover(struct pool *p, struct pool_volume *v)
{
	const struct thin_origin_rec *o = v->thin.origin;
	struct pool_error e;
	int r;

	(void)p;
	if (!v->thin.image)
		return -EAGAIN;
	r = image_unfence(v->thin.image, o->origin_size, o->origin_mtime_ns);
	if (r == -ETXTBSY)
		pool_fail(&e, r, "its origin '%s' is open for writing by another program (its "
			  "writes would show through): close it, then 'mapperctl reload'",
			  o->origin_path);
	else if (r == -ESTALE && !origin_unchanged(v->thin.image, o, &e))
		pool_fail(&e, r, "its origin '%s' changed since the volume was made",
			  o->origin_path);
	else if (r && r != -ESTALE)
		pool_fail(&e, r, "cannot lease its origin '%s' again: %s", o->origin_path,
			  strerror(-r));
	free(v->thin.unfence_failure);
	v->thin.unfence_failure = r ? strdup(e.msg) : NULL;
	if (!r)
		log_info("thin volume '%s': its origin '%s' is as it was and nobody writes it: "
			 "served again", v->rec.name, o->origin_path);
	return r;
}

/* The image it reads as its origin, if any: never a raw device. */
static const char *thin_image(struct pool_volume *v)
{
	return v->thin.origin && !v->thin.origin->origin_volume ? v->thin.origin->origin_path :
								  NULL;
}

/* ---- build ------------------------------------------------------------------ */

static bool every_thin_has_its_row(struct pool *p)
{
	for (size_t i = 0; i < p->nr_vols; i++)
		if (p->vols[i]->type == &thin_type && !p->vols[i]->thin.rec.volume)
			return false;
	return true;
}

/*
 * The thin volumes of thin pool @tp, as the walk wants them; *out
 * malloc'ed.  A map's directory changes with the pool's commits (a write
 * after a snapshot copies it), so for a loaded map it is the live one:
 * the committed one, once the pool committed and holds its commits off.
 */
static int walk_vols(struct pool *p, struct pool_volume *tp,
		     struct thin_walk_vol **out, size_t *nr)
{
	struct thin_walk_vol *w = calloc(p->nr_vols + 1, sizeof(*w));
	uint64_t bs = tp->tp.rec->block_size;
	size_t n = 0;

	if (!w)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_vols; i++) {
		struct pool_volume *v = p->vols[i];

		if (v->type == &thin_type && v->thin.rec.pool == tp->rec.id)
			w[n++] = (struct thin_walk_vol){ v->rec.name,
				v->served ? thin_dir_id(v->served->target) : v->thin.rec.dir,
				(v->rec.size + bs - 1) / bs };
	}
	*out = w;
	*nr = n;
	return 0;
}

/* "2 map pages no volume reaches, 1 of them damaged", in @buf of @len. */
static const char *unreached_words(size_t n, size_t damaged, char *buf, size_t len)
{
	int k = snprintf(buf, len, "%zu map page%s no volume reaches", n, n == 1 ? "" : "s");

	if (damaged && k > 0 && (size_t)k < len)
		snprintf(buf + k, len - k, ", %zu of them damaged", damaged);
	return buf;
}

/*
 * Deletes the pages of @r through @ops/@arg, unless a directory a volume
 * reaches could not be read (then they stay for repair), and logs it.
 * True when it deleted any.  Releases @r.
 */
static bool delete_unreached(struct pool_volume *tp, const struct thin_meta_ops *ops,
			     void *arg, struct thin_reach *r)
{
	size_t n = r->dangling ? 0 : r->nr_dead_dirs + r->nr_dead_leaves;
	bool deleted = false;
	char words[96];

	if (n) {
		log_info("thin pool '%s': deleting %s", tp->rec.name,
			 unreached_words(n, r->damaged, words, sizeof(words)));
		deleted = !thin_reach_gc(ops, arg, r);
		if (!deleted)
			log_warn("thin pool '%s': cannot delete them now", tp->rec.name);
	}
	thin_reach_release(r);
	return deleted;
}

static bool pool_reaches(void *ctx, int64_t id, bool leaf)
{
	return thin_pool_reaches(ctx, id, leaf);
}

/*
 * Deletes the pages of thin pool @tp that none of its volumes reaches, its
 * maps just loaded (not started): garbage that a crash between a removal
 * and the pool's next commit leaves, or the map of a volume removed while
 * the pool was not running, damaged pages included.  Reads the ids of the
 * store's pages, not the pages volumes reach (thin_reach.h).  Deleting
 * them leaves the space map stale (thin_meta.h): the one loaded may still
 * count the blocks of leaves whose removal never committed, so true when
 * anything was deleted, and the caller loads the pool again, deriving the
 * counts from the leaves volumes reach.  Nothing is deleted if a thin
 * volume has no row (its map unknown): it stays for repair.
 */
static bool collect_garbage(struct pool *p, struct pool_volume *tp)
{
	const struct thin_meta_ops *ops = tp->tp.ops;
	uint64_t dirs, leaves, loaded_dirs, loaded_leaves;
	struct thin_reach reach = { 0 };
	bool none;
	int r;

	if (!every_thin_has_its_row(p))
		return false;
	r = ops->read_begin(tp->tp.arg);
	if (r)
		return false;
	/*
	 * As many rows as the volumes reach pages: none is garbage, and the
	 * ids need no listing (195,313 at 1e8 blocks).  (A leaf a volume
	 * names but the store lost could hide one garbage page: check names
	 * both.)
	 */
	thin_pool_pages(tp->tp.pool, &loaded_dirs, &loaded_leaves);
	none = ops->count_pages && !ops->count_pages(tp->tp.arg, &dirs, &leaves) &&
	       dirs == loaded_dirs && leaves == loaded_leaves;
	if (!none)
		r = thin_reach_find(ops, tp->tp.arg, pool_reaches, tp->tp.pool, &reach);
	ops->read_end(tp->tp.arg);
	return !none && !r && delete_unreached(tp, ops, tp->tp.arg, &reach);
}

/*
 * The same for thin pool @tp that is not loaded, through port @ops/@arg:
 * its volumes' directories are read to know what they reach
 * (remove_unloaded).
 */
static void collect_unloaded_garbage(struct pool *p, struct pool_volume *tp,
				     const struct thin_meta_ops *ops, void *arg)
{
	struct thin_walk_vol *vols;
	struct thin_reach reach;
	size_t nr;
	int r;

	if (!every_thin_has_its_row(p) || walk_vols(p, tp, &vols, &nr))
		return;
	r = ops->read_begin(arg);
	if (!r) {
		r = thin_reach_find_walk(ops, arg, vols, nr, &reach);
		ops->read_end(arg);
	}
	if (!r)
		delete_unreached(tp, ops, arg, &reach);
	free(vols);
}

/* Loads the map of every thin volume of @tp into its pool.  Not started. */
static int load_each_member(struct pool *p, struct pool_volume *tp, struct pool_error *err)
{
	for (size_t i = 0; i < p->nr_vols; i++) {
		struct pool_volume *v = p->vols[i];
		struct pool_error e;
		struct target *t;
		int r;

		if (v->type != &thin_type || v->thin.rec.pool != tp->rec.id)
			continue;
		/* A size no create or extend allows is a damaged row: its map cannot be sized. */
		if (check_virtual_size(tp, v->rec.size, &e))
			return pool_fail(err, -EUCLEAN, "thin volume '%s' is damaged: %s",
					 v->rec.name, e.msg);
		r = thin_load(tp->tp.pool, v->rec.id, v->rec.size, v->thin.rec.dir, &t);
		if (!r)
			r = pool_volume_serve(v, t);
		if (r)
			return pool_fail(err, r, "the map of thin volume '%s' cannot be read: %s",
					 v->rec.name, r == -ENOENT ? "a page is missing" :
					 r == -EUCLEAN ? "it is damaged" : strerror(-r));
	}
	return 0;
}

/* The same in one read of the store: a snapshot, and no lock taken per page. */
static int load_members(struct pool *p, struct pool_volume *tp, struct pool_error *err)
{
	int r = tp->tp.ops->read_begin(tp->tp.arg);

	if (r)
		return pool_fail(err, r, "cannot read its map pages: %s", strerror(-r));
	r = load_each_member(p, tp, err);
	tp->tp.ops->read_end(tp->tp.arg);
	return r;
}

static void unload_members(struct pool *p, struct pool_volume *tp)
{
	for (size_t i = 0; i < p->nr_vols; i++) {
		struct pool_volume *v = p->vols[i];

		if (v->type == &thin_type && v->thin.rec.pool == tp->rec.id && v->served) {
			volume_destroy(v->served);
			v->served = NULL;
			v->thin.image = NULL;	/* it went with the target */
			free(v->thin.unfence_failure);
			v->thin.unfence_failure = NULL;
		}
	}
}

static void close_pool(struct pool *p, struct pool_volume *tp)
{
	if (tp->tp.pool) {
		thin_pool_close(tp->tp.pool);
		tp->tp.pool = NULL;
	}
	pool_thin_data_close(tp);
	if (tp->tp.arg) {
		p->meta->ops->thin_close(p->meta, tp->tp.arg);
		tp->tp.arg = NULL;
	}
}

uint64_t pool_thin_metadata_limit(const struct pool_volume *tp)
{
	if (tp->tp.rec->metadata_limit)
		return tp->tp.rec->metadata_limit;
	return thin_metadata_estimate(tp->rec.size / tp->tp.rec->block_size,
				      THIN_DEFAULT_MAX_THINS);
}

/* Opens thin pool @tp's map and loads its volumes into it.  Not started. */
static int load_pool(struct pool *p, struct pool_volume *tp,
		     const struct thin_pool_params *params, uint64_t bytes, struct pool_error *err)
{
	int r = thin_pool_open(params, tp->tp.data, bytes, tp->tp.ops, tp->tp.arg, &tp->tp.pool);

	if (r)
		return pool_fail(err, r, "cannot open it: %s", strerror(-r));
	tp->tp.ev.raised = (struct thin_pool_raised){ 0 };	/* a new pool counts anew */
	return load_members(p, tp, err);
}

/* Undoes load_pool. */
static void unload_pool(struct pool *p, struct pool_volume *tp)
{
	unload_members(p, tp);
	thin_pool_close(tp->tp.pool);
	tp->tp.pool = NULL;
}

/*
 * Opens thin pool @tp from the store and loads its volumes' maps; with
 * @collect, deletes the pages that no volume reaches before it starts (a
 * crash may leave some: collect_garbage), and loads again if it did.
 */
static int open_thin_pool(struct pool *p, struct pool_volume *tp, bool collect,
			  struct pool_error *err)
{
	struct thin_pool_params params = {
		.id = tp->rec.id,
		.name = tp->rec.name,
		.block_size = tp->tp.rec->block_size,
		.zero = tp->tp.rec->zero,
		.when_full = tp->tp.rec->wait ? THIN_FULL_WAIT : THIN_FULL_ERROR,
		.wait_s = tp->tp.rec->wait_seconds,
		.low_water_pct = tp->tp.rec->low_water,
		.discard_passdown = tp->tp.rec->discard_passdown,
		.metadata_limit = pool_thin_metadata_limit(tp),
		.notify = pool_monitor_kick,
		.notify_arg = p,
	};
	char why[POOL_ERROR_LEN / 2] = "";
	uint64_t bytes;
	int r;

	r = pool_thin_data_open(p, tp, NULL, 0, &bytes, err);
	if (r)
		return r;
	r = p->meta->ops->thin_open(p->meta, tp->rec.id, &tp->tp.ops, &tp->tp.arg);
	if (r) {
		pool_fail(err, r, "cannot open its map pages: %s", strerror(-r));
		goto err_close;
	}
	r = load_pool(p, tp, &params, bytes, err);
	if (!r && collect && collect_garbage(p, tp)) {
		unload_pool(p, tp);
		r = load_pool(p, tp, &params, bytes, err);
	}
	if (r)
		goto err_unload;
	r = thin_pool_start(tp->tp.pool, why, sizeof(why));
	if (r) {
		pool_fail(err, r, "its maps are damaged: %s", why[0] ? why : strerror(-r));
		goto err_unload;
	}
	return 0;

err_unload:
	unload_members(p, tp);
err_close:
	close_pool(p, tp);
	return r;
}

static int thin_pool_build(struct pool *p, struct pool_volume *tp, struct pool_error *err)
{
	return open_thin_pool(p, tp, true, err);
}

static int thin_build(struct pool *p, struct pool_volume *v, struct pool_error *err)
{
	struct pool_volume *tp = pool_of(p, v, err);

	if (!tp)
		return -EIO;
	if (!v->served)
		return pool_fail(err, -EIO, "its map was not loaded");
	return v->thin.origin ? attach_origin(p, v, v->served->target, v->thin.origin, err) : 0;
}

static void thin_pool_release(struct pool *p, struct pool_volume *tp)
{
	close_pool(p, tp);
	pool_mirror_release(tp);
	free(tp->tp.rec);
}

static void thin_release(struct pool *p, struct pool_volume *v)
{
	(void)p;
	free(v->thin.origin);
	free(v->thin.unfence_failure);
}

/* ---- rebuild: restore and repair ------------------------------------------- */

static bool member_of(const struct pool_volume *v, const struct pool_volume *tp)
{
	return v->type == &thin_type && v->thin.rec.pool == tp->rec.id;
}

int pool_thin_retire_members(struct pool *p, struct pool_volume *tp, struct pool_error *err)
{
	for (size_t i = 0; i < p->nr_vols; i++) {
		struct pool_volume *v = p->vols[i];

		if (!member_of(v, tp) || !v->served || !volume_retire(v->served))
			continue;
		while (i--)
			if (member_of(p->vols[i], tp) && p->vols[i]->served)
				volume_unretire(p->vols[i]->served);
		return pool_fail(err, -EBUSY, "volume '%s' of thin pool '%s' is busy (open)",
				 v->rec.name, tp->rec.name);
	}
	return 0;
}

void pool_thin_unretire_members(struct pool *p, struct pool_volume *tp)
{
	for (size_t i = 0; i < p->nr_vols; i++)
		if (member_of(p->vols[i], tp) && p->vols[i]->served)
			volume_unretire(p->vols[i]->served);
}

/* The thin volumes of @tp, in *out (malloc'ed); NULL if out of memory. */
static struct pool_volume **members(struct pool *p, struct pool_volume *tp, size_t *nr)
{
	struct pool_volume **v = calloc(p->nr_vols + 1, sizeof(*v));

	*nr = 0;
	for (size_t i = 0; v && i < p->nr_vols; i++)
		if (member_of(p->vols[i], tp))
			v[(*nr)++] = p->vols[i];
	return v;
}

/* Out of the mount, all at once (one by one if out of memory). */
static void hide_members(struct pool *p, struct pool_volume *tp)
{
	size_t nr;
	struct pool_volume **v = members(p, tp, &nr);

	if (v) {
		pool_volumes_hide(p, v, nr);
		free(v);
		return;
	}
	for (size_t i = 0; i < p->nr_vols; i++)
		if (member_of(p->vols[i], tp))
			pool_volume_hide(p, p->vols[i]);
}

void pool_thin_stop(struct pool *p, struct pool_volume *tp)
{
	struct thin_pool *pool = tp->tp.pool;

	hide_members(p, tp);
	if (pool && thin_pool_stop(pool))
		log_warn("thin pool '%s': its last commit failed", tp->rec.name);
	tp->tp.pool = NULL;		/* statfs stops reading it first */
	if (pool && pool_thins_update(p))
		log_warn("thin pool '%s': out of memory while stopping it", tp->rec.name);
	tp->tp.pool = pool;
	unload_members(p, tp);
	close_pool(p, tp);
}

/*
 * Builds every thin volume of @tp that is not broken and puts the built
 * ones in the mount at once; a volume that cannot be is failed, saying
 * why.
 */
static void serve_members(struct pool *p, struct pool_volume *tp)
{
	size_t nr, built = 0;
	struct pool_volume **v = members(p, tp, &nr);

	for (size_t i = 0; !v && i < p->nr_vols; i++)
		if (member_of(p->vols[i], tp) && !p->vols[i]->broken)
			pool_volume_failed(p->vols[i], "out of memory");
	for (size_t i = 0; v && i < nr; i++) {
		struct pool_error e;

		if (v[i]->broken)
			continue;
		free(v[i]->failure);
		v[i]->failure = NULL;
		if (thin_build(p, v[i], &e))
			pool_volume_failed(v[i], e.msg);
		else
			v[built++] = v[i];
	}
	if (v && pool_volumes_show(p, v, built))
		for (size_t i = 0; i < built; i++)
			pool_volume_failed(v[i], "out of memory");
	else
		for (size_t i = 0; v && i < built; i++)
			pool_stale_file(p, v[i]->rec.id);	/* served anew, from what was written */
	free(v);
}

int pool_thin_start(struct pool *p, struct pool_volume *tp, struct pool_error *err)
{
	int r;

	free(tp->failure);
	tp->failure = NULL;
	/* Restore and repair deleted every page the pool had: no garbage to look for. */
	r = open_thin_pool(p, tp, false, err);
	if (r) {
		pool_volume_failed(tp, err->msg);
		return r;
	}
	if (pool_thins_update(p))
		log_warn("thin pool '%s' is not counted in statfs (out of memory)", tp->rec.name);
	serve_members(p, tp);
	return 0;
}

/* ---- create a thin pool -------------------------------------------------------- */

struct new_pool {
	struct volume_rec rec;
	struct thin_pool_rec tp;
	struct extent_plan plan;
};

static int record_new_pool(struct pool *p, void *arg)
{
	struct new_pool *n = arg;
	const struct pool_meta_ops *m = p->meta->ops;
	int r;

	r = m->volume_insert(p->meta, &n->rec);
	for (size_t i = 0; !r && i < n->plan.nr_ext; i++) {
		n->plan.ext[i].volume = n->rec.id;
		r = m->extent_insert(p->meta, &n->plan.ext[i]);
	}
	n->tp.volume = n->rec.id;
	return r ? r : m->thin_pool_insert(p->meta, &n->tp);
}

int pool_create_thin_pool(struct pool *p, const struct pool_thin_pool_spec *s,
			  struct volume_rec *out, struct pool_error *err)
{
	struct new_pool n = { .tp = s->policy };
	struct pool_volume *v = NULL, probe = { 0 };
	uint64_t bytes;
	int r;

	pool_admin_lock(p);
	r = pool_check_new_name(p, s->name, err);
	if (!r)
		r = check_policy(&n.tp, err);
	if (r)
		goto out;
	n.rec.size = s->size - s->size % n.tp.block_size;
	if (!n.rec.size) {
		r = pool_fail(err, -EINVAL, "the size is smaller than one block");
		goto out;
	}
	r = pool_thin_check_blocks(s->name, n.tp.block_size, n.rec.size, err);
	if (r)
		goto out;
	if (s->mirrors)
		r = pool_mirror_plan(p, n.rec.size, s->mirrors + 1, s->on, s->nr_on, &n.plan.ext,
				     &n.plan.nr_ext, err);
	else
		r = pool_plan_extents(p, &probe, n.rec.size, n.tp.block_size, s->on, s->nr_on,
				      &n.plan, err);
	if (r)
		goto out;
	snprintf(n.rec.name, sizeof(n.rec.name), "%s", s->name);
	snprintf(n.rec.kind, sizeof(n.rec.kind), "%s", thin_pool_type.name);
	v = pool_volume_new(&n.rec, &thin_pool_type);
	if (v)
		v->tp.rec = calloc(1, sizeof(*v->tp.rec));
	if (!v || !v->tp.rec || pool_reserve(p, 1, n.plan.nr_ext)) {
		r = pool_fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	*v->tp.rec = n.tp;
	/* A mirror's log is made before the records, and named after them. */
	if (s->mirrors)
		r = pool_thin_data_open(p, v, n.plan.ext, n.plan.nr_ext, &bytes, err);
	if (!r)
		r = pool_record(p, "record the thin pool", record_new_pool, &n, err);
	if (r)
		goto out;
	v->rec = n.rec;
	*v->tp.rec = n.tp;
	pool_mirror_recorded(p, v);
	pool_extents_publish(p, n.plan.ext, n.plan.nr_ext);
	pool_volume_publish(p, v);
	if (out)
		*out = v->rec;
	/* Opening it reads only what was just committed. */
	r = thin_pool_build(p, v, err);
	if (r)
		pool_volume_failed(v, err->msg);
	else if (pool_thins_update(p))
		log_warn("thin pool '%s' is not counted in statfs (out of memory)", v->rec.name);
	if (s->mirrors)
		log_info("created thin pool '%s' on %u legs", v->rec.name, s->mirrors + 1);
	else
		log_info("created thin pool '%s'", v->rec.name);
	v = NULL;
out:
	pool_volume_free(p, v);
	free(n.plan.ext);
	pool_admin_unlock(p);
	return r;
}

/* ---- change a thin pool's policies -------------------------------------------- */

static int record_policy(struct pool *p, void *arg)
{
	return p->meta->ops->thin_pool_update(p->meta, arg);
}

int pool_change_thin_pool(struct pool *p, const char *name,
			  const struct thin_pool_rec *policy, unsigned int fields,
			  struct thin_pool_rec *out, struct pool_error *err)
{
	struct pool_volume *tp;
	struct thin_pool_rec n;
	struct thin_pool_usage u;
	char size[SIZE_STR_LEN];
	int r;

	pool_admin_lock(p);
	r = pool_volume_get(p, name, &thin_pool_type, true, &tp, err);
	if (!r && tp->broken)
		r = pool_fail(err, -EUCLEAN, "thin pool '%s' is damaged: %s", name, tp->failure);
	if (r)
		goto out;
	n = *tp->tp.rec;
	if (fields & POOL_TP_DISCARD_PASSDOWN)
		n.discard_passdown = policy->discard_passdown;
	if (fields & POOL_TP_AUTOEXTEND_THRESHOLD)
		n.autoextend_threshold = policy->autoextend_threshold;
	if (fields & POOL_TP_AUTOEXTEND_PERCENT)
		n.autoextend_percent = policy->autoextend_percent;
	if (fields & POOL_TP_METADATA_LIMIT)
		n.metadata_limit = policy->metadata_limit;
	if (fields & POOL_TP_ON_EVENT)
		memcpy(n.on_event, policy->on_event, sizeof(n.on_event));
	if (fields & POOL_TP_WHEN_FULL) {
		n.wait = policy->wait;
		n.wait_seconds = policy->wait ? policy->wait_seconds : 0;
	}
	if (fields & POOL_TP_LOW_WATER)
		n.low_water = policy->low_water;
	if (fields & POOL_TP_ZERO)
		n.zero = policy->zero;
	r = check_policy(&n, err);
	if (!r && running(tp) && n.metadata_limit) {
		thin_pool_usage(running(tp), &u);
		if (u.metadata_bytes > n.metadata_limit)
			r = pool_fail(err, -ENOSPC, "the maps of thin pool '%s' take %s already",
				      name, format_size(u.metadata_bytes, size));
	}
	if (!r)
		r = pool_record(p, "record the thin pool's policies", record_policy, &n, err);
	if (r)
		goto out;
	*tp->tp.rec = n;
	tp->tp.ev.extend_failed_ms = 0;
	if (running(tp)) {
		thin_pool_set_metadata_limit(running(tp), pool_thin_metadata_limit(tp));
		thin_pool_set_discard_passdown(running(tp), n.discard_passdown);
		thin_pool_set_when_full(running(tp), n.wait ? THIN_FULL_WAIT : THIN_FULL_ERROR,
					n.wait_seconds);
		thin_pool_set_low_water(running(tp), n.low_water);
		thin_pool_set_zero(running(tp), n.zero);
	}
	pool_monitor_kick(p);		/* a lower threshold may apply at once */
	if (out)
		*out = n;
	log_info("changed the policies of thin pool '%s'", name);
out:
	pool_admin_unlock(p);
	return r;
}

/* ---- create a thin volume, snapshot ---------------------------------------- */

/* thin_pool_admin_begin(), and what its failure means for people. */
static int begin_admin(struct pool_volume *tp, struct pool_error *err)
{
	char doing[POOL_NAME_MAX + 64];
	int r = thin_pool_admin_begin(running(tp), NULL);

	if (!r)
		return 0;
	snprintf(doing, sizeof(doing), "commit thin pool '%s' first", tp->rec.name);
	return pool_store_fail(err, r, doing);
}

/*
 * Ends an admin bracket that freed blocks (remove, rollback), and waits
 * for the commit that frees them, with its discard passdown: a command
 * returns with the space back on the raw devices and in status.  A commit
 * that fails now is logged; the pool's worker goes on trying.
 */
static void end_admin_freeing(struct pool_volume *tp)
{
	if (thin_pool_admin_end_commit(running(tp)))
		log_warn("thin pool '%s': the blocks just freed wait for a commit that works",
			 tp->rec.name);
}

struct new_thin {
	struct volume_rec rec;
	struct thin_rec thin;
	struct thin_dir_rec dir;	/* its empty map, or none (nr 0): shared */
	struct thin_origin_rec *origin;
};

static int record_new_thin(struct pool *p, void *arg)
{
	struct new_thin *n = arg;
	const struct pool_meta_ops *m = p->meta->ops;
	int r;

	r = m->volume_insert(p->meta, &n->rec);
	n->thin.volume = n->rec.id;
	if (!r && n->dir.nr)
		r = m->thin_dir_put(p->meta, n->thin.pool, &n->dir);
	if (!r)
		r = m->thin_put(p->meta, &n->thin);
	if (!r && n->origin) {
		n->origin->volume = n->rec.id;
		r = m->thin_origin_put(p->meta, n->origin);
	}
	return r;
}

/*
 * A block device has no lease to guard it (image.c): a new volume over one
 * is refused unless the kernel keeps every writer out (its read-only flag).
 * One that lost the flag since (a loop device set up again) is only warned
 * of when the pool opens.
 */
static int writable_block_device(int fd, const char *path, struct pool_error *err)
{
	struct stat st;
	int ro = 0;

	if (fstat(fd, &st))
		return pool_fail(err, -errno, "cannot look at origin '%s': %s", path,
				 strerror(errno));
	if (!S_ISBLK(st.st_mode))
		return 0;
	if (ioctl(fd, BLKROGET, &ro))
		return pool_fail(err, -errno, "cannot look at origin '%s': %s", path,
				 strerror(errno));
	return ro ? 0 : pool_fail(err, -EROFS, "origin '%s' is a block device that can be written, "
				  "which would show through: make it read-only first "
				  "('blockdev --setro %s')", path, path);
}

/*
 * An origin is read as raw bytes: a disk image's container (qcow2 ...)
 * would be served as if it were the disk.  Nor may it be the pool's own
 * bytes: its mount, its database or one of its raw devices, which change
 * under the volume.
 */
static int raw_image(struct pool *p, const char *path, struct pool_error *err)
{
	struct device_label l;
	struct fsid_saved self;
	char what[128];
	int fd, r;

	r = as_owner(p, "origin", path, &self, err);
	if (r)
		return r;
	fd = device_open_path(path, O_RDONLY);
	fsid_restore(&self);
	if (owner_refusal(p, "origin", path, fd, &self, err))
		return fd;
	if (fd < 0)
		return pool_fail(err, fd, "cannot open origin '%s': %s", path, strerror(-fd));
	r = pool_check_not_own(p, fd, path, "origin", err);
	if (!r && !device_label_read_fd(fd, &l) && uuid_equal(&l.pool, &p->uuid))
		r = pool_fail(err, -EINVAL, "origin '%s' is a raw device of this pool", path);
	if (!r)
		r = writable_block_device(fd, path, err);
	if (r) {
		close(fd);
		return r;
	}
	r = probe_image_format(fd, what, sizeof(what));
	close(fd);
	if (r < 0)
		return pool_fail(err, r, "cannot read origin '%s': %s", path, strerror(-r));
	if (r)
		return pool_fail(err, -EINVAL, "origin '%s' is %s, not a raw image (convert it with 'qemu-img convert -O raw')",
				 path, what);
	return 0;
}

/* @arg names the origin: a volume of the pool, else an absolute path. */
static int resolve_origin(struct pool *p, const char *arg, struct thin_origin_rec *o,
			  struct pool_error *err)
{
	struct pool_volume *ov = pool_volume_by_name(p, arg);
	struct stat st;
	int r;

	memset(o, 0, sizeof(*o));
	if (ov) {
		if (ov->type == &thin_pool_type)
			return pool_fail(err, -EINVAL, "origin '%s' is a thin pool, not a volume", arg);
		if (!ov->served || ov->failure)
			return pool_fail(err, -EIO, "origin '%s' is failed: %s", arg,
					 ov->failure ? ov->failure : "not served");
		o->origin_volume = ov->rec.id;
		return 0;
	}
	if (arg[0] != '/')
		return pool_fail(err, -ENOENT, "origin '%s' is neither a volume nor an absolute path",
				 arg);
	if (stat(arg, &st))
		return pool_fail(err, -errno, "origin '%s' is neither a volume nor a file: %s", arg,
				 strerror(errno));
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return pool_fail(err, -EINVAL, "origin '%s' is neither a regular file nor a block device",
				 arg);
	r = raw_image(p, arg, err);
	if (r)
		return r;
	snprintf(o->origin_path, sizeof(o->origin_path), "%s", arg);
	return 0;
}

/* Records @n and publishes its target @t as @v; undoes nothing itself. */
static int commit_thin(struct pool *p, struct pool_volume *v, struct new_thin *n,
		       struct pool_error *err)
{
	int r;

	r = pool_record(p, "record the volume", record_new_thin, n, err);
	if (r)
		return r;
	pool_volume_recorded(v, &n->rec);
	v->thin.rec = n->thin;
	if (n->origin) {
		v->thin.origin = n->origin;
		n->origin = NULL;
	}
	thin_bind(v->served->target, n->rec.id);
	pool_volume_publish(p, v);
	return 0;
}

static struct pool_volume *new_thin_volume(struct new_thin *n, const char *name,
					   uint64_t size, int64_t pool)
{
	snprintf(n->rec.name, sizeof(n->rec.name), "%s", name);
	snprintf(n->rec.kind, sizeof(n->rec.kind), "%s", thin_type.name);
	n->rec.size = size;
	n->thin.pool = pool;
	return pool_volume_new(&n->rec, &thin_type);
}

int pool_create_thin(struct pool *p, const struct pool_thin_spec *s,
		     struct volume_rec *out, struct pool_error *err)
{
	struct thin_origin_rec origin;
	struct new_thin n = { 0 };
	struct pool_volume *tp, *v = NULL;
	struct target *t = NULL;
	int r;

	pool_admin_lock(p);
	r = pool_check_new_name_as(p, s->name, s->staging, err);
	if (!r)
		r = pool_volume_get(p, s->pool, &thin_pool_type, false, &tp, err);
	if (!r && !running(tp))
		r = pool_fail(err, -EIO, "thin pool '%s' is not running", s->pool);
	if (!r)
		r = check_virtual_size(tp, s->size, err);
	if (!r && s->origin)
		r = resolve_origin(p, s->origin, &origin, err);
	if (r)
		goto out;
	n.rec.read_only = s->read_only;
	n.rec.inactive = s->staging;
	v = new_thin_volume(&n, s->name, s->size, tp->rec.id);
	n.origin = s->origin ? malloc(sizeof(*n.origin)) : NULL;
	n.dir.id = n.thin.dir = thin_pool_reserve_page_id(running(tp));
	n.dir.nr = (uint32_t)slots_of(tp, s->size);
	n.dir.leaves = calloc(n.dir.nr + 1, sizeof(*n.dir.leaves));
	if (!v || (s->origin && !n.origin) || !n.dir.leaves || pool_reserve(p, 1, 0)) {
		r = pool_fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	if (n.origin)
		*n.origin = origin;
	r = thin_create(running(tp), 0, s->size, n.dir.id, &t);
	if (r) {
		r = pool_fail(err, r, "out of memory");
		goto out;
	}
	r = n.origin ? attach_origin(p, v, t, n.origin, err) : 0;
	if (!r && v->thin.image)	/* what it is now, guarded: what it must stay */
		r = record_identity(v->thin.image, n.origin, err);
	if (!r) {
		r = pool_volume_serve(v, t);
		if (r)
			r = pool_fail(err, r, "out of memory");
	} else {
		t->ops->destroy(t);
	}
	if (!r)
		r = commit_thin(p, v, &n, err);
	if (r)
		goto out;
	if (out)
		*out = v->rec;
	log_info("created thin volume '%s' in thin pool '%s'", v->rec.name, tp->rec.name);
	v = NULL;
out:
	pool_volume_free(p, v);
	free(n.dir.leaves);
	free(n.origin);
	pool_admin_unlock(p);
	return r;
}

/*
 * A group of snapshots taken at one instant: every origin is suspended
 * (its writes wait, those in flight drain) before any map is shared, and
 * resumed only after all are recorded, so that the snapshots agree with
 * each other as a crash would leave the origins (a VM with two disks,
 * Kubernetes' VolumeGroupSnapshot).  All or nothing: one store
 * transaction records every snapshot.
 */
struct snap {
	struct pool_volume *o, *tp, *v;	/* origin, its thin pool, the snapshot */
	struct new_thin n;
	bool begun;			/* this entry began its pool's admin bracket */
	bool shared;			/* v's target shares o's map */
};

struct snap_group {
	struct snap *s;
	size_t nr;
};

static int record_snapshots(struct pool *p, void *arg)
{
	struct snap_group *g = arg;
	int r = 0;

	for (size_t i = 0; !r && i < g->nr; i++)
		r = record_new_thin(p, &g->s[i].n);
	return r;
}

/* Validates pair @i of @spec into @sn: a new name, a served thin origin. */
static int snap_check(struct pool *p, const struct pool_snapshot_spec *spec, size_t i,
		      struct snap *sn, struct pool_error *err)
{
	const struct pool_snapshot_pair *pr = &spec->pairs[i];
	int r;

	r = pool_check_new_name_as(p, pr->name, spec->staging, err);
	if (!r)
		r = pool_volume_get(p, pr->origin, &thin_type, false, &sn->o, err);
	if (r)
		return r;
	for (size_t j = 0; j < i; j++) {
		if (!strcmp(spec->pairs[j].name, pr->name))
			return pool_fail(err, -EEXIST, "snapshot '%s' is named twice", pr->name);
		if (!strcmp(spec->pairs[j].origin, pr->origin))
			return pool_fail(err, -EINVAL, "origin '%s' is named twice", pr->origin);
	}
	sn->tp = pool_of(p, sn->o, err);
	if (!sn->tp)
		return -EIO;
	sn->n.rec.inactive = !spec->active;
	sn->n.rec.read_only = spec->read_only;
	sn->v = new_thin_volume(&sn->n, pr->name, sn->o->rec.size, sn->tp->rec.id);
	sn->n.origin = sn->o->thin.origin ? malloc(sizeof(*sn->n.origin)) : NULL;
	if (!sn->v || (sn->o->thin.origin && !sn->n.origin))
		return pool_fail(err, -ENOMEM, "out of memory");
	if (sn->n.origin)
		*sn->n.origin = *sn->o->thin.origin;	/* it reads through the same origin */
	return 0;
}

/* Shares @sn's origin's map with a new target; suspended and begun. */
static int snap_share(struct pool *p, struct snap *sn, struct pool_error *err)
{
	struct target *t;
	int r;

	sn->n.thin.dir = thin_dir_id(sn->o->served->target);
	sn->n.thin.snapshot_of = sn->o->rec.id;
	r = thin_snapshot(sn->o->served->target, 0, &t);
	if (r)
		return pool_fail(err, r, "out of memory");
	r = sn->n.origin ? attach_origin(p, sn->v, t, sn->n.origin, err) : 0;
	if (r) {
		t->ops->destroy(t);		/* drops its share of the map */
		return r;
	}
	if (pool_volume_serve(sn->v, t))	/* destroys t */
		return pool_fail(err, -ENOMEM, "out of memory");
	sn->shared = true;
	return 0;
}

/* The entry before @i that began @tp's bracket, if any. */
static bool pool_begun(const struct snap_group *g, size_t i, const struct pool_volume *tp)
{
	for (size_t j = 0; j < i; j++)
		if (g->s[j].tp == tp && g->s[j].begun)
			return true;
	return false;
}

static void snap_end(struct snap_group *g, size_t nr_suspended)
{
	for (size_t i = 0; i < g->nr; i++)
		if (g->s[i].begun)
			thin_pool_admin_end(running(g->s[i].tp));
	for (size_t i = 0; i < nr_suspended; i++)
		thin_unsuspend(g->s[i].o->served->target);
}

int pool_snapshot(struct pool *p, const struct pool_snapshot_spec *spec,
		  struct volume_rec *out, struct pool_error *err)
{
	struct snap_group g = { calloc(spec->nr + 1, sizeof(*g.s)), spec->nr };
	size_t suspended = 0, i;
	int r = 0;

	pool_admin_lock(p);
	if (!g.s)
		r = pool_fail(err, -ENOMEM, "out of memory");
	else if (!spec->nr)
		r = pool_fail(err, -EINVAL, "no snapshot to take");
	for (i = 0; !r && i < g.nr; i++)
		r = snap_check(p, spec, i, &g.s[i], err);
	if (!r && pool_reserve(p, g.nr, 0))
		r = pool_fail(err, -ENOMEM, "out of memory");
	if (r)
		goto out;
	pool_layout_archive_start(p);	/* beside the origins' drain and commit */
	for (; suspended < g.nr; suspended++)
		thin_suspend(g.s[suspended].o->served->target);
	for (i = 0; !r && i < g.nr; i++) {
		if (pool_begun(&g, i, g.s[i].tp))
			continue;
		r = begin_admin(g.s[i].tp, err);
		g.s[i].begun = !r;
	}
	for (i = 0; !r && i < g.nr; i++)
		r = snap_share(p, &g.s[i], err);
	if (!r)
		r = pool_record(p, g.nr > 1 ? "record the snapshots" : "record the volume",
				record_snapshots, &g, err);
	for (i = 0; i < g.nr; i++) {
		struct snap *sn = &g.s[i];

		if (r) {
			if (sn->shared)
				thin_remove(sn->v->served->target);
			continue;
		}
		pool_volume_recorded(sn->v, &sn->n.rec);
		sn->v->thin.rec = sn->n.thin;
		sn->v->thin.origin = sn->n.origin;
		sn->n.origin = NULL;
		thin_bind(sn->v->served->target, sn->n.rec.id);
		pool_volume_publish(p, sn->v);
		if (out)
			out[i] = sn->v->rec;
		log_info("created snapshot '%s' of '%s'%s", sn->v->rec.name, sn->o->rec.name,
			 g.nr > 1 ? " (in a group)" : "");
		sn->v = NULL;
	}
	snap_end(&g, suspended);
out:
	for (i = 0; g.s && i < g.nr; i++) {
		pool_volume_free(p, g.s[i].v);
		free(g.s[i].n.origin);
	}
	free(g.s);
	pool_admin_unlock(p);
	return r;
}

/* ---- rollback -------------------------------------------------------------------- */

/*
 * The rolled-back volume's new map, and it forgets the identity it was
 * received as, if it was: it holds another snapshot's blocks now, so no
 * stream may take it as the sender's snapshot (pool_thin_identity).
 */
static int record_rollback(struct pool *p, void *arg)
{
	const struct thin_rec *row = arg;
	int r = p->meta->ops->thin_put(p->meta, row);

	return r ? r : p->meta->ops->received_drop(p->meta, row->volume);
}

int pool_rollback(struct pool *p, const char *name, const char *snap,
		  struct pool_error *err)
{
	struct pool_volume *v, *s, *tp;
	struct thin_rec row;
	uint64_t reserved;
	bool began;
	int r;

	pool_admin_lock(p);
	r = pool_volume_get(p, name, &thin_type, false, &v, err);
	if (!r)
		r = pool_volume_get(p, snap, &thin_type, false, &s, err);
	if (r)
		goto out_unlock;
	if (v == s)
		r = pool_fail(err, -EINVAL, "'%s' cannot be rolled back to itself", name);
	else if (v->thin.rec.pool != s->thin.rec.pool)
		r = pool_fail(err, -EXDEV, "'%s' and '%s' are in different thin pools", name, snap);
	else if (v->rec.size != s->rec.size)
		r = pool_fail(err, -EINVAL, "'%s' and '%s' differ in size", name, snap);
	tp = r ? NULL : pool_of(p, v, err);
	if (!r && !tp)
		r = -EIO;
	if (!r && volume_retire(v->served))
		r = pool_fail(err, -EBUSY, "volume '%s' is busy (open)", name);
	if (r)
		goto out_unlock;
	thin_suspend(v->served->target);
	thin_suspend(s->served->target);
	reserved = thin_remove_bytes(v->served->target);	/* as remove_thin */
	thin_pool_cache_reserve(running(tp), reserved);
	began = !(r = begin_admin(tp, err));
	if (began) {
		row = v->thin.rec;
		row.dir = thin_dir_id(s->served->target);
		r = pool_record(p, "record the rollback", record_rollback, &row, err);
	}
	if (began && !r) {
		atomic_store(&v->served->zeros_from, VOLUME_ZEROS_UNKNOWN);
		r = thin_rollback(v->served->target, s->served->target);
		if (r)	/* memory could not follow: say so, the store is right */
			pool_volume_failed(v, "out of memory while rolling back");
		v->thin.rec = row;
		pool_stale_file(p, v->rec.id);
	}
	thin_unsuspend(s->served->target);
	thin_unsuspend(v->served->target);
	if (began && !r)
		end_admin_freeing(tp);	/* the map it had is freed */
	else if (began)
		thin_pool_admin_end(running(tp));
	thin_pool_cache_unreserve(running(tp), reserved);
	volume_unretire(v->served);
	if (!r)
		log_info("rolled back '%s' to '%s'", name, snap);
out_unlock:
	pool_admin_unlock(p);
	return r;
}

/* ---- extend ------------------------------------------------------------------------ */

struct thin_growth {
	const struct pool_volume *v;
	uint64_t size;
	struct thin_rec row;
	struct thin_dir_rec dir;	/* nr 0: the map keeps its directory */
};

static int record_thin_growth(struct pool *p, void *arg)
{
	struct thin_growth *g = arg;
	const struct pool_meta_ops *m = p->meta->ops;
	int r = 0;

	if (g->dir.nr) {
		r = m->thin_dir_put(p->meta, g->row.pool, &g->dir);
		if (!r)
			r = m->thin_put(p->meta, &g->row);
	}
	return r ? r : m->volume_set_size(p->meta, g->v->rec.id, g->size);
}

static int thin_extend(struct pool *p, struct pool_volume *v, uint64_t size,
		       char *const *on, size_t nr_on, struct pool_error *err)
{
	struct thin_growth g = { .v = v, .size = size, .row = v->thin.rec };
	struct pool_volume *tp = pool_of(p, v, err);
	struct thin_pool *pool;
	int r;

	(void)on;
	if (!tp)
		return -EIO;
	if (nr_on)
		return pool_fail(err, -EINVAL, "--on does not apply to thin volume '%s': it grows in its pool",
				 v->rec.name);
	r = check_virtual_size(tp, size, err);
	if (r)
		return r;
	pool = running(tp);
	thin_suspend(v->served->target);
	r = begin_admin(tp, err);
	if (r)
		goto out_resume;
	if (slots_of(tp, size) > slots_of(tp, v->rec.size)) {
		g.row.dir = thin_pool_reserve_page_id(pool);
		r = thin_dir_record(v->served->target, size, g.row.dir, &g.dir);
		if (r)
			r = pool_fail(err, r, "out of memory");
	}
	if (!r)
		r = pool_record(p, "record the new size", record_thin_growth, &g, err);
	if (!r && g.dir.nr && thin_resize(v->served->target, size, g.row.dir))
		pool_volume_failed(v, "out of memory while growing its map");
	if (!r) {
		v->thin.rec = g.row;
		v->rec.size = size;
		/* The map covers the new size before the size shows. */
		atomic_store(&v->served->size, size);
		pool_stale_file(p, v->rec.id);
	}
	free(g.dir.leaves);
	thin_pool_admin_end(pool);
out_resume:
	thin_unsuspend(v->served->target);
	return r;
}

/* A plain pool's growth: new extents, its data table over them, one record. */
static int grow_plain(struct pool *p, struct pool_volume *tp, uint64_t size, char *const *on,
		      size_t nr_on, uint64_t *bytes, struct pool_error *err)
{
	struct extent_plan plan = { 0 };
	struct linear_table *tb = NULL;
	struct linear_seg *segs;
	unsigned int nr;
	int r;

	r = pool_plan_extents(p, tp, size - tp->rec.size, tp->tp.rec->block_size, on, nr_on,
			      &plan, err);
	if (r)
		return r;
	r = pool_thin_data_segs(p, tp, plan.ext, plan.nr_ext, &segs, &nr, bytes, err);
	if (!r) {
		r = linear_table_new(segs, nr, &tb);
		free(segs);
		if (r)
			r = pool_fail(err, r, "out of memory");
	}
	if (!r && (r = thin_pool_grow_check(running(tp), *bytes)))
		r = pool_fail(err, r, "cannot grow thin pool '%s': %s", tp->rec.name,
			      strerror(-r));	/* -EFBIG cannot be: pool_thin_check_blocks() passed */
	if (!r)
		r = pool_record_extents(p, tp, size, &plan, err);
	if (r) {
		linear_table_free(tb);
		free(plan.ext);
		return r;
	}
	/* The table covers the new blocks before any can be allocated. */
	linear_publish(tp->tp.data, tb);
	pool_extents_publish(p, plan.ext, plan.nr_ext);
	tp->rec.size = size;
	free(plan.ext);
	return 0;
}

int pool_thin_pool_grow(struct pool *p, struct pool_volume *tp, uint64_t size,
			char *const *on, size_t nr_on, struct pool_error *err)
{
	uint32_t bs = tp->tp.rec->block_size;
	unsigned int legs;
	uint64_t bytes;
	int r;

	if (!running(tp))	/* a damaged row may hold any block size, even 0 */
		return pool_fail(err, -EIO, "thin pool '%s' is failed: %s", tp->rec.name,
				 tp->failure ? tp->failure : "not running");
	size -= size % bs;
	if (size <= tp->rec.size)
		return pool_fail(err, -EINVAL, "thin pool '%s' grows by whole blocks of %u bytes",
				 tp->rec.name, bs);
	r = pool_thin_check_blocks(tp->rec.name, bs, size, err);
	if (r)
		return r;
	if (pool_move_source_of(p, tp) >= 0)
		return pool_fail(err, -EBUSY, "thin pool '%s' is being moved: it grows once the "
				 "move is done or aborted", tp->rec.name);
	legs = pool_volume_legs(p, tp);
	if (legs > 1 && nr_on)
		return pool_fail(err, -EINVAL, "the legs of mirrored thin pool '%s' grow on their "
				 "own devices: give no devices", tp->rec.name);
	if (legs > 1) {
		r = pool_mirror_extend(p, tp, legs, size, err);
		bytes = tp->rec.size;	/* unchanged if its log could not grow */
	} else {
		r = grow_plain(p, tp, size, on, nr_on, &bytes, err);
	}
	if (r)
		return r;
	thin_pool_grow(running(tp), bytes);
	thin_pool_set_metadata_limit(running(tp), pool_thin_metadata_limit(tp));
	/* Autoextend or `extend`: a hook that tracks the pool's size hears of both. */
	pool_monitor_event(p, tp, "extended", LOG_LEVEL_INFO);
	return 0;
}

/* ---- remove ------------------------------------------------------------------------ */

static int record_removal(struct pool *p, void *arg)
{
	const struct pool_volume *v = arg;

	return p->meta->ops->volume_delete(p->meta, v->rec.id);
}

/*
 * Thin volume @v whose map is not loaded: its pool is not running (failed,
 * as LVM's lvremove meets a pool in fail mode), or @v has no thin row.
 * Its rows go, and with them, as the pool is not there to drop them at
 * its next commit, the pages only it reached: a walk of the store tells
 * them apart unless another volume's map is damaged too; then they stay
 * for repair.  Its blocks are free when the pool next loads (counts
 * derive from reachable pages).
 */
static int remove_unloaded(struct pool *p, struct pool_volume *v, struct pool_error *err)
{
	struct pool_volume *tp = pool_volume_by_id(p, v->thin.rec.pool);
	const struct thin_meta_ops *ops;
	void *arg;
	int r;

	r = pool_remove_records(p, v, err);	/* frees @v */
	if (r || !tp || tp->type != &thin_pool_type || running(tp) || tp->broken)
		return r;
	if (p->meta->ops->thin_open(p->meta, tp->rec.id, &ops, &arg)) {
		log_warn("thin pool '%s': cannot open its map pages to delete a removed volume's: 'mapperctl repair %s' deletes them",
			 tp->rec.name, tp->rec.name);
		return 0;
	}
	collect_unloaded_garbage(p, tp, ops, arg);
	p->meta->ops->thin_close(p->meta, arg);
	return 0;
}

/*
 * What the removal holds until its commit (the sets of the blocks it
 * frees, the leaves it drops) is first reserved from the pool's memory
 * budget, as a walk's pages are, so that it takes the place of loaded
 * leaves instead of coming on top of a full cache.  Nothing is committed
 * before its record (thin_pool_admin_hold): what other volumes have
 * pending goes in the one commit that frees the removed map, where the
 * copy of a map the volume shared takes its row.
 */
static int remove_thin(struct pool *p, struct pool_volume *v, struct pool_error *err)
{
	struct pool_volume *tp;
	uint64_t reserved;
	int r;

	if (!v->served)
		return remove_unloaded(p, v, err);
	tp = pool_of(p, v, err);
	if (!tp)
		return -EIO;
	if (volume_retire(v->served))
		return pool_fail(err, -EBUSY, "volume '%s' is busy (open)", v->rec.name);
	pool_layout_archive_start(p);	/* beside the drain and the commit */
	thin_suspend(v->served->target);
	reserved = thin_remove_bytes(v->served->target);
	thin_pool_cache_reserve(running(tp), reserved);
	thin_pool_admin_hold(running(tp));
	r = pool_record(p, "delete the volume", record_removal, v, err);
	if (!r && thin_remove(v->served->target))
		log_warn("thin volume '%s': out of memory while dropping its map; its blocks stay allocated until restart",
			 v->rec.name);
	thin_unsuspend(v->served->target);
	if (!r)
		end_admin_freeing(tp);
	else
		thin_pool_admin_end(running(tp));
	thin_pool_cache_unreserve(running(tp), reserved);
	if (r) {
		volume_unretire(v->served);
		return r;
	}
	pool_volume_forget(p, v);
	return 0;
}

/*
 * The store forgets a removed volume as the origin of its snapshots (ON
 * DELETE SET NULL); memory must too, or the next write of such a row
 * (repair, rollback) names a volume that is gone and the store refuses it.
 */
static void forget_origin(struct pool *p, int64_t id)
{
	for (size_t i = 0; i < p->nr_vols; i++) {
		struct pool_volume *v = p->vols[i];

		if (v->type == &thin_type && v->thin.rec.snapshot_of == id)
			v->thin.rec.snapshot_of = 0;
	}
}

static int thin_remove_volume(struct pool *p, struct pool_volume *v, struct pool_error *err)
{
	int64_t id = v->rec.id;
	int r = remove_thin(p, v, err);

	if (!r)
		forget_origin(p, id);
	return r;
}

static int thin_pool_remove(struct pool *p, struct pool_volume *tp, struct pool_error *err)
{
	struct thin_pool *pool = tp->tp.pool;
	bool logged = pool_volume_legs(p, tp) > 1 || pool_move_source_of(p, tp) >= 0;
	int64_t id = tp->rec.id;
	size_t n = 0;
	int r;

	for (size_t i = 0; i < p->nr_vols; i++)
		n += p->vols[i]->type == &thin_type && p->vols[i]->thin.rec.pool == tp->rec.id;
	if (n)
		return pool_fail(err, -EBUSY, "thin pool '%s' still has %zu volume%s", tp->rec.name,
				 n, n == 1 ? "" : "s");
	r = pool_record(p, "delete the thin pool", record_removal, tp, err);
	if (r)
		return r;
	if (pool && thin_pool_stop(pool))
		log_warn("thin pool '%s': its last commit failed", tp->rec.name);
	/* statfs stops reading it before it is closed */
	tp->tp.pool = NULL;
	if (pool_thins_update(p))
		pool = NULL;		/* leaked rather than freed under a reader */
	tp->tp.pool = pool;
	pool_volume_forget(p, tp);
	if (logged)
		pool_mirror_forget_log(p, id);
	return 0;
}

/* ---- reports ------------------------------------------------------------------------ */

void pool_thin_usage_gather(struct pool *p)
{
	struct target **t = calloc(p->nr_vols + 1, sizeof(*t));
	struct pool_volume **v = calloc(p->nr_vols + 1, sizeof(*v));
	struct thin_usage *u = calloc(p->nr_vols + 1, sizeof(*u));
	size_t n = 0;

	for (size_t i = 0; t && v && u && i < p->nr_vols; i++) {
		if (p->vols[i]->type != &thin_type || !p->vols[i]->served)
			continue;
		v[n] = p->vols[i];
		t[n++] = p->vols[i]->served->target;
	}
	if (t && v && u && !thin_usage_many(t, n, u)) {
		for (size_t i = 0; i < n; i++) {
			v[i]->thin.usage = u[i];
			v[i]->thin.usage_known = true;
		}
	}
	free(t);
	free(v);
	free(u);
}

void pool_thin_usage_forget(struct pool *p)
{
	for (size_t i = 0; i < p->nr_vols; i++)
		if (p->vols[i]->type == &thin_type)
			p->vols[i]->thin.usage_known = false;
}

/* @v's usage: as gathered for the rows of a list, else walked now. */
static void usage_of(struct pool_volume *v, struct thin_usage *out)
{
	if (v->thin.usage_known)
		*out = v->thin.usage;
	else
		thin_usage(v->served->target, out);
}

static void thin_status(struct pool *p, struct pool_volume *v, struct json *j)
{
	struct pool_volume *tp = pool_volume_by_id(p, v->thin.rec.pool);
	uint64_t bs = tp ? tp->tp.rec->block_size : 0;
	struct thin_usage u;

	if (tp)
		json_string(j, "pool", tp->rec.name);
	if (v->thin.rec.snapshot_of) {
		struct pool_volume *sv = pool_volume_by_id(p, v->thin.rec.snapshot_of);

		if (sv)
			json_string(j, "origin", sv->rec.name);
	}
	if (v->thin.origin) {
		struct pool_volume *ov = pool_volume_by_id(p, v->thin.origin->origin_volume);

		json_string(j, "external_origin", v->thin.origin->origin_volume ?
			    (ov ? ov->rec.name : "?") : v->thin.origin->origin_path);
	}
	if (!v->served)
		return;
	usage_of(v, &u);
	json_size(j, "mapped_bytes", u.mapped * bs);
	json_size(j, "exclusive_bytes", u.exclusive * bs);
	json_size(j, "shared_bytes", u.shared * bs);
	json_percent(j, "data_percent", u.mapped * bs, v->rec.size);
}

static int32_t hundredths(uint64_t part, uint64_t whole)
{
	return whole ? (int32_t)((part * 10000 + whole / 2) / whole) : 0;
}

static void thin_info(struct pool *p, struct pool_volume *v, struct pool_volume_info *out)
{
	struct pool_volume *tp = pool_volume_by_id(p, v->thin.rec.pool);
	struct pool_volume *sv = v->thin.rec.snapshot_of ?
				 pool_volume_by_id(p, v->thin.rec.snapshot_of) : NULL;
	struct thin_usage u;

	if (tp)
		snprintf(out->pool, sizeof(out->pool), "%s", tp->rec.name);
	if (sv)
		snprintf(out->origin, sizeof(out->origin), "%s", sv->rec.name);
	out->thin_id = v->rec.id;	/* dump's dev_id (pool_thin_admin.c) */
	if (!v->served || !tp)
		return;
	usage_of(v, &u);
	out->data_pct = hundredths(u.mapped * tp->tp.rec->block_size, v->rec.size);
	out->has_usage = true;
	out->mapped_bytes = u.mapped * tp->tp.rec->block_size;
	out->exclusive_bytes = u.exclusive * tp->tp.rec->block_size;
	out->shared_bytes = u.shared * tp->tp.rec->block_size;
}

static void thin_pool_info(struct pool *p, struct pool_volume *tp, struct pool_volume_info *out)
{
	const struct thin_pool_rec *r = tp->tp.rec;
	struct thin_pool_usage u;

	out->block_size = r->block_size;
	if (r->wait)
		snprintf(out->when_full, sizeof(out->when_full), "wait:%u", r->wait_seconds);
	else
		snprintf(out->when_full, sizeof(out->when_full), "error");
	if (!running(tp))
		return;
	thin_pool_usage(running(tp), &u);
	out->data_pct = hundredths(u.nr_blocks - u.nr_free - u.nr_pending, u.nr_blocks);
	out->meta_pct = hundredths(u.metadata_bytes, u.metadata_limit);
	if (u.full)
		out->condition = "full";
	else if (u.low_water)
		out->condition = "low-water";
	if (pool_volume_legs(p, tp) > 1)	/* "degraded" first: a copy is missing */
		pool_mirror_info(tp, pool_volume_legs(p, tp), out);
	if (pool_move_source_of(p, tp) >= 0)
		pool_move_info(tp, out);
}

static bool thin_pool_failing(struct pool_volume *tp, char *why, size_t len)
{
	struct thin_pool_usage u;

	if (!running(tp))
		return false;
	thin_pool_usage(running(tp), &u);
	if (u.failed)
		snprintf(why, len, "its metadata commits have failed for %llu s (%s): writes that need new blocks fail until one works",
			 (unsigned long long)(u.failing_ms / 1000), strerror(-u.commit_error));
	return u.failed;
}

static void thin_pool_status(struct pool *p, struct pool_volume *tp, struct json *j)
{
	const struct thin_pool_rec *r = tp->tp.rec;
	struct thin_pool_usage u;
	size_t nr_vols = 0;

	for (size_t i = 0; i < p->nr_vols; i++)
		nr_vols += p->vols[i]->type == &thin_type && p->vols[i]->thin.rec.pool == tp->rec.id;
	json_size(j, "block_size", r->block_size);
	if (running(tp)) {
		thin_pool_usage(running(tp), &u);
		uint64_t used = (u.nr_blocks - u.nr_free - u.nr_pending) * u.block_size;

		json_size(j, "data_used_bytes", used);
		json_size(j, "data_total_bytes", u.nr_blocks * u.block_size);
		json_percent(j, "data_percent", used, u.nr_blocks * u.block_size);
		json_size(j, "metadata_used_bytes", u.metadata_bytes);
		json_size(j, "metadata_total_bytes", u.metadata_limit);
		json_percent(j, "metadata_percent", u.metadata_bytes, u.metadata_limit);
		json_u64(j, "metadata_pages", u.nr_leaves + u.nr_dirs);
		json_size(j, "discarded_bytes", u.discarded_bytes);
		if (p->mount_dev) {	/* the daemon's cache; a CLI's own says nothing */
			json_size(j, "cache_bytes", u.cache_bytes);
			json_size(j, "cache_budget_bytes", u.cache_budget);
			json_size(j, "cache_reserved_bytes", u.cache_reserved);
			json_u64(j, "cache_evictions", u.evictions);
			json_u64(j, "cache_loads", u.loads);
			json_u64(j, "cache_miss_waits", u.miss_waits);
		}
		json_bool(j, "low_water_crossed", u.low_water);
		json_bool(j, "full", u.full);
		json_bool(j, "metadata_full", u.metadata_full);
		if (u.commit_error) {
			json_string(j, "commit_error", strerror(-u.commit_error));
			json_u64(j, "commit_failing_ms", u.failing_ms);
		}
	}
	json_u64(j, "thin_volumes", nr_vols);
	json_string(j, "when_full", r->wait ? "wait" : "error");
	if (r->wait)
		json_u64(j, "wait_seconds", r->wait_seconds);
	json_bool(j, "zero", r->zero);
	json_u64(j, "low_water_percent", r->low_water);
	json_bool(j, "discard_passdown", r->discard_passdown);
	/*
	 * A threshold of 100 never grows the pool: people read "autoextend:
	 * no", scripts keep the numbers as they were set.
	 */
	json_bool(j, "autoextend", r->autoextend_threshold < 100);
	if (r->autoextend_threshold < 100 || j->style != JSON_TEXT) {
		json_u64(j, "autoextend_threshold", r->autoextend_threshold);
		json_u64(j, "autoextend_percent", r->autoextend_percent);
	}
	if (r->on_event[0])
		json_string(j, "on_event", r->on_event);
	if (pool_volume_legs(p, tp) > 1)
		pool_mirror_status(p, tp, pool_volume_legs(p, tp), j);
	else
		pool_report_segments(p, tp, j);
	if (pool_move_source_of(p, tp) >= 0)
		pool_move_status(p, tp, j);
}

int pool_diff(struct pool *p, const char *a, const char *b,
	      int (*fn)(void *arg, uint64_t first, uint64_t count), void *arg,
	      uint32_t *block_size, struct pool_error *err)
{
	struct pool_volume *va, *vb, *tp;
	int r;

	pool_admin_lock(p);
	r = pool_volume_get(p, a, &thin_type, false, &va, err);
	if (!r)
		r = pool_volume_get(p, b, &thin_type, false, &vb, err);
	if (!r && va->thin.rec.pool != vb->thin.rec.pool)
		r = pool_fail(err, -EXDEV, "'%s' and '%s' are in different thin pools", a, b);
	tp = r ? NULL : pool_volume_by_id(p, va->thin.rec.pool);
	if (tp) {
		*block_size = tp->tp.rec->block_size;
		r = thin_diff(va->served->target, vb->served->target, fn, arg);
		if (r)
			pool_fail(err, r, "cannot compare '%s' and '%s': %s", a, b, strerror(-r));
	}
	pool_admin_unlock(p);
	return r;
}

/* ---- check ------------------------------------------------------------------------ */

/* The pool's counts in memory against the ones the committed pages give. */
static void compare_counts(struct pool_check *c, struct pool_volume *tp,
			   const struct thin_walk *w, const struct thin_pool_counts *m)
{
	size_t n0 = c->n, next_pending = 0;

	if (m->nr_blocks != w->nr_blocks) {
		pool_breach(c, tp, "memory has %llu blocks, the metadata %llu",
			    (unsigned long long)m->nr_blocks, (unsigned long long)w->nr_blocks);
		return;
	}
	for (uint64_t b = 0; b < m->nr_blocks && c->n - n0 < 20; b++) {
		uint32_t mem = thin_refs_get(&m->refs, b), pages = thin_refs_get(&w->block_refs, b);
		bool freed = next_pending < m->nr_pending && m->pending[next_pending] == b;

		next_pending += freed;
		if (mem != pages)
			pool_breach(c, tp, "block %llu: memory counts %u references, the committed pages %u",
				    (unsigned long long)b, mem, pages);
		if (freed && pages)
			pool_breach(c, tp, "block %llu is both free and mapped",
				    (unsigned long long)b);
	}
	if (c->n == n0 && m->nr_free + m->nr_pending + w->used != m->nr_blocks)
		pool_breach(c, tp, "free (%llu), freed (%llu) and used (%llu) blocks do not add up to %llu",
			    (unsigned long long)m->nr_free, (unsigned long long)m->nr_pending,
			    (unsigned long long)w->used, (unsigned long long)m->nr_blocks);
}

struct walk_breach {
	struct pool_check *c;
	struct pool_volume *tp;
};

static void walk_breach(void *arg, const char *msg)
{
	struct walk_breach *w = arg;

	pool_breach(w->c, w->tp, "%s", msg);
}

/*
 * The directories the store has for @w (walk_vols' order): a write may
 * copy a map's directory in memory while check reads the store, whose
 * commits are held.
 */
static int committed_dirs(struct pool *p, struct pool_volume *tp,
			  const struct thin_meta_ops *ops, void *arg, struct thin_walk_vol *w)
{
	struct thin_vol_rec *rows = NULL;
	size_t nr = 0, k = 0;
	int r;

	r = ops->load_vols(arg, &rows, &nr);
	if (r)
		return r;
	for (size_t i = 0; i < p->nr_vols; i++) {
		struct pool_volume *v = p->vols[i];

		if (v->type != &thin_type || v->thin.rec.pool != tp->rec.id)
			continue;
		for (size_t j = 0; j < nr; j++)
			if (rows[j].volume == v->rec.id)
				w[k].dir = rows[j].dir;
		k++;
	}
	free(rows);
	return 0;
}

/*
 * Pages no volume reaches: a breach besides @tp's failure, if it is
 * failed, which says why its maps do not load, not this.  Told only when
 * no reference dangles: what a damaged page names is unknown, and that
 * damage is the breach.
 */
static void report_unreached(struct pool_check *c, struct pool_volume *tp,
			     const struct thin_walk *w)
{
	char words[96];
	size_t n, damaged;

	if (w->dangling)
		return;
	n = thin_walk_unreached(w, &damaged);
	if (n)
		pool_breach_besides(c, tp, "%s: 'mapperctl repair %s' deletes them",
				    unreached_words(n, damaged, words, sizeof(words)),
				    tp->rec.name);
}

/*
 * A thin pool that is not running (failed): its failure is the breach,
 * told once (pool_fault.c), of whatever keeps its maps from loading.
 * What the failure does not say is which pages no volume reaches (a
 * removal that could not tell them apart, a crash), so the committed
 * pages are walked for those.
 */
static int check_stopped(struct pool *p, struct pool_volume *tp, struct pool_check *c,
			 struct pool_error *err)
{
	const struct thin_meta_ops *ops;
	struct thin_walk_vol *vols;
	struct thin_walk w;
	size_t nr;
	void *arg;
	int r;

	if (tp->broken || p->meta->ops->thin_open(p->meta, tp->rec.id, &ops, &arg))
		return 0;	/* its failure says it */
	r = walk_vols(p, tp, &vols, &nr);
	if (!r) {
		r = ops->read_begin(arg);	/* one read of the store, as at start */
		if (!r) {
			r = thin_walk_load(ops, arg, 0, vols, nr, &w);	/* pages, not blocks */
			ops->read_end(arg);
		}
		free(vols);
	}
	if (!r) {
		report_unreached(c, tp, &w);
		thin_walk_release(&w);
	}
	p->meta->ops->thin_close(p->meta, arg);
	return r == -ENOMEM ? pool_fail(err, r, "out of memory") : 0;
}

/*
 * Walks the committed pages on a connection of its own, in one read
 * transaction: the pool's commits are held off until it has seen the
 * store (its snapshot; the counts are copied as that commit left them),
 * then the pool goes on while the walk reads.  The walk's counts and
 * leaves and the copy of the pool's counts are reserved from the pool's
 * memory budget first (thin_pool_cache_reserve): they take the memory of
 * the leaves that makes the cache unload.  What keeps it from
 * looking (the store, a commit that fails) is a breach of this pool,
 * named, and check goes on with the others; only running out of memory
 * stops it.
 */
static int thin_pool_check(struct pool *p, struct pool_volume *tp, struct pool_check *c,
			   struct pool_error *err)
{
	struct walk_breach wb = { c, tp };
	struct thin_pool_usage u;
	struct thin_pool_counts counts;
	const struct thin_meta_ops *ops;
	struct thin_walk_vol *vols = NULL;
	struct thin_walk w;
	size_t nr, n0 = c->n;
	uint64_t reserved;
	void *arg;
	int r;

	pool_check_extent_sum(p, tp, c);
	if (pool_volume_legs(p, tp) > 1)
		pool_mirror_check(p, tp, pool_volume_legs(p, tp), c);
	pool_move_check(p, tp, c);
	if (!c->deep)
		return 0;
	if (!running(tp))
		return check_stopped(p, tp, c, err);
	r = p->meta->ops->thin_open(p->meta, tp->rec.id, &ops, &arg);
	if (r) {
		pool_breach(c, tp, "cannot read its maps: %s", strerror(-r));
		return 0;
	}
	thin_pool_usage(running(tp), &u);	/* a running pool's size is sound */
	reserved = thin_walk_bytes(u.nr_blocks, u.nr_leaves) + thin_refs_bytes(u.nr_blocks);
	thin_pool_cache_reserve(running(tp), reserved);
	r = thin_pool_admin_begin(running(tp), &counts);
	if (r == -ENOMEM)
		goto out;
	if (r) {
		pool_breach(c, tp, "cannot commit it to check it: %s",
			    r == -EBUSY ? "writes keep provisioning blocks" : strerror(-r));
		r = 0;
		goto out;
	}
	r = ops->read_begin(arg);
	if (r) {
		thin_pool_admin_end(running(tp));
		pool_breach(c, tp, "cannot read its maps: %s", strerror(-r));
		r = 0;
		goto out_counts;
	}
	r = walk_vols(p, tp, &vols, &nr);
	if (!r)
		r = committed_dirs(p, tp, ops, arg, vols);	/* the first read: the snapshot */
	thin_pool_admin_end(running(tp));
	if (!r)
		r = thin_walk_load(ops, arg, counts.nr_blocks, vols, nr, &w);
	if (r && r != -ENOMEM)
		pool_breach(c, tp, "cannot read its maps: %s", strerror(-r));
	if (r)
		goto out_read;
	thin_walk_check(&w, walk_breach, &wb);
	/* Counts from pages that cannot be read would differ block by block: noise. */
	if (!w.dangling)
		compare_counts(c, tp, &w, &counts);
	report_unreached(c, tp, &w);
	pool_summary(c, "thin pool '%s': %zu volume%s, %llu of %llu blocks used, %zu breach%s",
		     tp->rec.name, nr, nr == 1 ? "" : "s", (unsigned long long)w.used,
		     (unsigned long long)w.nr_blocks, c->n - n0, c->n - n0 == 1 ? "" : "es");
	thin_walk_release(&w);
out_read:
	ops->read_end(arg);
out_counts:
	free(vols);
	thin_pool_counts_release(&counts);
out:
	thin_pool_cache_unreserve(running(tp), reserved);
	p->meta->ops->thin_close(p->meta, arg);
	return r == -ENOMEM ? pool_fail(err, r, "out of memory") : 0;
}

/*
 * A served volume's origin image: not reached by a writer (image_watch),
 * and as it was when the volume was made.  Opening compares the latter
 * (open_image), so a changed image is told there, as the volume's failure.
 */
static void check_image(struct pool_volume *v, struct pool_check *c)
{
	struct pool_error e;
	char why[POOL_ERROR_LEN];

	if (!v->thin.image)
		return;
	if (thin_failing(v, why, sizeof(why)))
		pool_breach(c, v, "%s", why);
	else if (origin_unchanged(v->thin.image, v->thin.origin, &e))
		pool_breach(c, v, "%s", e.msg);
}

/* A thin volume's records: its pool, its size, its origin. */
static int thin_check(struct pool *p, struct pool_volume *v, struct pool_check *c,
		      struct pool_error *err)
{
	struct pool_volume *tp = pool_volume_by_id(p, v->thin.rec.pool);

	(void)err;
	if (!tp || tp->type != &thin_pool_type) {
		pool_breach(c, v, "its thin pool (volume %lld) does not exist",
			    (long long)v->thin.rec.pool);
		return 0;
	}
	/* A pool whose block size is damaged is a breach of its own. */
	if (tp->tp.rec->block_size && slots_of(tp, v->rec.size) > THIN_DIR_SLOTS_MAX)
		pool_breach(c, v, "its size is more than thin pool '%s' can map", tp->rec.name);
	if (v->thin.origin && v->thin.origin->origin_volume &&
	    !pool_volume_by_id(p, v->thin.origin->origin_volume))
		pool_breach(c, v, "its origin volume %lld does not exist",
			    (long long)v->thin.origin->origin_volume);
	check_image(v, c);
	return 0;
}

/* A thin volume is built on its pool, and on its origin if that is a volume. */
static struct pool_volume *thin_needs(struct pool *p, struct pool_volume *v)
{
	struct pool_volume *tp = pool_volume_by_id(p, v->thin.rec.pool);

	if (tp && tp->failure)
		return tp;
	if (v->thin.origin && v->thin.origin->origin_volume)
		return pool_volume_by_id(p, v->thin.origin->origin_volume);
	return tp;
}

/* ---- the monitor's watch: events and autoextend -------------------- */

/*
 * The monitor's pass over a running thin pool (its watch hook): the
 * events that arose since the last pass, then autoextend.
 *
 * Autoextend follows LVM's thin_pool_autoextend_threshold/percent: when
 * the data in use exceeds THRESHOLD percent of the pool, the pool grows
 * by PERCENT of its size (at least one block), onto free space of the
 * raw devices, first right after its last extent, then on the devices it
 * already uses (pool_plan_extents).  It repeats, up to a bound, while
 * still above the threshold.  A pool that waits when full (--when-full
 * wait:N) thus keeps its writers waiting only for the extension, never
 * failing them.  An extension that fails (no free space) is logged and
 * tried again after a while.
 */
#define AUTOEXTEND_ROUNDS	8	/* extensions per pass at most */
#define AUTOEXTEND_RETRY_MS	30000	/* after a failed one */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t used_percent(const struct thin_pool_usage *u)
{
	uint64_t used = u->nr_blocks - u->nr_free - u->nr_pending;

	return u->nr_blocks ? used * 100 / u->nr_blocks : 0;
}

/* Grows @tp while it is above its threshold.  Admin lock held. */
static void autoextend(struct pool *p, struct pool_volume *tp)
{
	struct pool_thin_events *ev = &tp->tp.ev;
	uint32_t bs = tp->tp.rec->block_size;
	char from[SIZE_STR_LEN], to[SIZE_STR_LEN];

	if (tp->tp.rec->autoextend_threshold >= 100)
		return;
	if (ev->extend_failed_ms && now_ms() - ev->extend_failed_ms < AUTOEXTEND_RETRY_MS)
		return;
	for (int round = 0; round < AUTOEXTEND_ROUNDS; round++) {
		struct thin_pool_usage u;
		struct pool_error err;
		uint64_t more, size = tp->rec.size;

		thin_pool_usage(tp->tp.pool, &u);
		if (used_percent(&u) <= tp->tp.rec->autoextend_threshold && !u.full)
			return;
		more = size / 100 * tp->tp.rec->autoextend_percent;
		more = (more + bs - 1) / bs * bs;
		if (more < bs)
			more = bs;
		if (pool_thin_pool_grow(p, tp, size + more, NULL, 0, &err)) {
			log_warn("thin pool '%s': cannot autoextend it past %llu%% used: %s",
				 tp->rec.name, (unsigned long long)used_percent(&u), err.msg);
			ev->extend_failed_ms = now_ms();
			return;
		}
		ev->extend_failed_ms = 0;
		log_info("thin pool '%s': autoextended from %s to %s (%llu%% used)",
			 tp->rec.name, format_size(size, from), format_size(tp->rec.size, to),
			 (unsigned long long)used_percent(&u));
	}
}

/*
 * An event raised each time its cause arose, even if it cleared again
 * before this pass: the pool counts them.
 */
static void edge(struct pool *p, struct pool_volume *tp, uint64_t *seen, uint64_t raised,
		 const char *event, enum log_level level)
{
	if (raised != *seen)
		pool_monitor_event(p, tp, event, level);
	*seen = raised;
}

static struct target *thin_pool_data(const struct pool_volume *tp)
{
	return tp->tp.data;
}

static uint64_t thin_pool_grain(const struct pool_volume *tp)
{
	return tp->tp.rec->block_size;
}

static struct log_limit mirror_start_failed;

static void thin_pool_watch(struct pool *p, struct pool_volume *tp)
{
	struct thin_pool_raised *seen = &tp->tp.ev.raised;
	struct thin_pool_usage u;
	int r;

	if (!tp->tp.pool)
		return;
	if (pool_volume_mirror(tp) && (r = mirror_start(pool_volume_mirror(tp))))
		log_error_limited(&mirror_start_failed, "thin pool '%s': cannot start its resync: %s",
				  tp->rec.name, strerror(-r));
	pool_mirror_note_stale(p, tp);
	thin_pool_usage(tp->tp.pool, &u);
	edge(p, tp, &seen->low_water, u.raised.low_water, "low-water", LOG_LEVEL_WARN);
	edge(p, tp, &seen->full, u.raised.full, "full", LOG_LEVEL_WARN);
	edge(p, tp, &seen->metadata_full, u.raised.metadata_full, "metadata-full",
	     LOG_LEVEL_WARN);
	edge(p, tp, &seen->failed, u.raised.failed, "failed", LOG_LEVEL_ERROR);
	if (pool_move_source_of(p, tp) >= 0)
		pool_move_watch(p, tp);
	else if (!u.failed)
		autoextend(p, tp);
}

/* ---- the running thin pools ------------------------------------------ */

int pool_thins_update(struct pool *p)
{
	struct pool_thins *t, *old;
	size_t n = 0;

	t = malloc(sizeof(*t) + (p->nr_vols + 1) * sizeof(t->v[0]));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_vols; i++)
		if (p->vols[i]->type == &thin_pool_type && p->vols[i]->tp.pool)
			t->v[n++] = p->vols[i]->tp.pool;
	t->nr = n;
	old = rcu_publish(p->thins, t);
	rcu_wait_readers();
	free(old);
	return 0;
}

int pool_commit_all(struct pool *p)
{
	int r = 0;

	for (size_t i = 0; i < p->nr_vols; i++) {
		struct thin_pool *tp = p->vols[i]->type == &thin_pool_type ?
				       p->vols[i]->tp.pool : NULL;
		int c = tp ? thin_pool_commit(tp) : 0;

		if (c && !r)
			r = c;
	}
	return r;
}

struct target_type thin_pool_type = {
	.name = "thin-pool",
	.noun = "thin pool",
	.nouns = "thin pools",
	.words = "thin pool",
	.served = false,
	.build_order = 0,
	.attach = thin_pool_attach,
	.build = thin_pool_build,
	.extend = pool_thin_pool_grow,
	.remove = thin_pool_remove,
	.check = thin_pool_check,
	.failing = thin_pool_failing,
	.status = thin_pool_status,
	.info = thin_pool_info,
	.watch = thin_pool_watch,
	.release = thin_pool_release,
	.runs_on = thin_pool_data,
	.build_over = pool_thin_data_build_over,
	.reload = pool_thin_data_reload,
	.grain = thin_pool_grain,
};

/* The monitor's look at the volume's origin image: a writer fences it. */
static void thin_watch(struct pool *p, struct pool_volume *v)
{
	char why[POOL_ERROR_LEN];

	(void)p;
	if (v->thin.image && image_watch(v->thin.image) &&
	    thin_failing(v, why, sizeof(why)))
		log_error("thin volume '%s': %s", v->rec.name, why);
}

struct target_type thin_type = {
	.name = "thin",
	.served = true,
	.build_order = 2,
	.attach = thin_attach,
	.build = thin_build,
	.extend = thin_extend,
	.reduce = pool_thin_reduce,
	.remove = thin_remove_volume,
	.check = thin_check,
	.failing = thin_failing,
	.recover = thin_recover,
	.needs = thin_needs,
	.image = thin_image,
	.status = thin_status,
	.info = thin_info,
	.watch = thin_watch,
	.release = thin_release,
};
