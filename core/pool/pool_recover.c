/*
 * core/pool/pool_recover.c: a pool's layout written out (`backup`,
 * vgcfgbackup), put back from the archive or a backup (`restore-layout`,
 * vgcfgrestore), and the pool's database rebuilt from its devices
 * (`recover`).
 *
 * The last two work on the store of a pool nobody serves (they take the
 * pool's lock; the daemon holds it while it runs), without opening the
 * pool: they write rows, and the next open builds everything from them
 * and writes the devices' layout copies anew (pool_layout.c).
 *
 * recover: each device named is opened (claimed) and its label and layout
 * copies read.  All must carry the label of one pool; the newest good
 * copy among them is the layout, and every device whose own copy is
 * older, damaged or missing is named.  A layout device not among those
 * named is refused unless --force (then it keeps its recorded path and
 * fails at open, as a missing device does).  The damaged database is
 * moved aside, a new one made with the pool's uuid, and the layout
 * recorded in one transaction, but for thin volumes: their maps were in
 * the database, so they are reported lost, never invented; `restore`
 * brings them back from a dump.
 *
 * restore-layout: the layout in the file must be this pool's, with the
 * same devices.  Linear and switch volumes are replaced by the file's;
 * thin pools and thin volumes stay as they are (their maps are only in
 * the database): a thin pool the file lacks or places differently is
 * refused, and a thin volume the file has but the pool lost is named and
 * needs --force, as LVM asks for it with thin pools.  The layout before
 * is archived first, so a restore can itself be undone.
 */
#include "pool_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "device.h"
#include "layout.h"
#include "layout_area.h"
#include "log.h"

static bool is_thin(const struct volume_rec *v)
{
	return !strcmp(v->kind, "thin");
}

static bool is_thin_pool(const struct volume_rec *v)
{
	return !strcmp(v->kind, "thin-pool");
}

/*
 * Records @l's volumes for which @take says yes: rows, extents, stripe
 * rows, switch tables and paths, thin pool rows, thin rows and origins.
 */
static int record_volumes(struct pool_meta *m, const struct layout *l,
			  bool (*take)(const struct volume_rec *v))
{
	const struct pool_meta_image *img = &l->img;
	const struct pool_meta_ops *o = m->ops;
	int r = 0;

	for (size_t i = 0; i < img->nr_volumes && !r; i++)
		if (take(&img->volumes[i]))
			r = o->volume_restore(m, &img->volumes[i]);
	for (size_t i = 0; i < img->nr_extents && !r; i++)
		if (take(layout_volume(img, img->extents[i].volume)))
			r = o->extent_insert(m, &img->extents[i]);
	for (size_t i = 0; i < img->nr_stripes && !r; i++)
		if (take(layout_volume(img, img->stripes[i].volume)))
			r = o->stripe_insert(m, &img->stripes[i]);
	for (size_t i = 0; i < img->nr_switches && !r; i++) {
		const struct switch_rec *sw = &img->switches[i];
		size_t first = 0;

		if (!take(layout_volume(img, sw->volume)))
			continue;
		while (first < img->nr_switch_paths && img->switch_paths[first].volume != sw->volume)
			first++;
		if (img->nr_switch_paths - first < sw->nr_paths)
			return -EINVAL;
		r = o->switch_insert(m, sw, &img->switch_paths[first], l->tables[i],
				     l->table_lens[i]);
	}
	for (size_t i = 0; i < img->nr_thin_pools && !r; i++)
		if (take(layout_volume(img, img->thin_pools[i].volume)))
			r = o->thin_pool_insert(m, &img->thin_pools[i]);
	for (size_t i = 0; i < img->nr_thins && !r; i++)
		if (take(layout_volume(img, img->thins[i].volume)))
			r = o->thin_put(m, &img->thins[i]);
	for (size_t i = 0; i < img->nr_origins && !r; i++)
		if (take(layout_volume(img, img->origins[i].volume)))
			r = o->thin_origin_put(m, &img->origins[i]);
	for (size_t i = 0; i < img->nr_tags && !r; i++)
		if (img->tags[i].on == TAG_ON_VOLUME && take(layout_volume(img, img->tags[i].owner)))
			r = o->tag_add(m, &img->tags[i]);
	return r;
}

static int lock_pool(const char *dir, const char *who, struct pool_error *err)
{
	char holder[80];
	int fd = pool_lock(dir, who);

	if (fd == -EBUSY) {
		pool_lock_holder(dir, holder, sizeof(holder));
		return pool_fail(err, -EBUSY, "pool '%s' is in use by %s: stop it first", dir,
				 holder);
	}
	if (fd < 0)
		return pool_fail(err, fd, "cannot lock pool '%s': %s", dir, strerror(-fd));
	return fd;
}

/* ---- backup ----------------------------------------------------------- */

int pool_backup(struct pool *p, FILE *f, struct pool_error *err)
{
	struct layout l;
	int r;

	pool_admin_lock(p);
	r = pool_layout_load(p->meta, &l);
	if (!r) {
		l.seq = p->layout_seq;
		l.time = (int64_t)time(NULL);
		r = layout_write(&l, f);
		layout_release(&l);
	}
	pool_admin_unlock(p);
	return r ? pool_fail(err, r, "cannot write the layout: %s", strerror(-r)) : 0;
}

/* ---- recover ---------------------------------------------------------- */

struct found {
	const char *path;
	struct device *dev;
	struct device_label label;
	struct layout_area area;
};

static bool take_all_but_thin(const struct volume_rec *v)
{
	return v && !is_thin(v);
}

static const char *const db_tails[] = { "", "-wal", "-shm" };

/*
 * Moves DIR/pool.db (and its -wal, -shm) aside to @aside
 * (pool.db.damaged-TIME), or back from it with @back.
 */
static int move_db(const char *db, const char *aside, bool back, struct pool_error *err)
{
	for (size_t i = 0; i < 3; i++) {
		char a[PATH_MAX + 8], b[PATH_MAX + 48];

		snprintf(a, sizeof(a), "%s%s", db, db_tails[i]);
		snprintf(b, sizeof(b), "%s%s", aside, db_tails[i]);
		if (rename(back ? b : a, back ? a : b) && errno != ENOENT)
			return pool_fail(err, -errno, "cannot move '%s': %s", back ? b : a,
					 strerror(errno));
	}
	return 0;
}

/* Removes DIR/pool.db and its -wal, -shm: a recovery that failed. */
static void remove_db(const char *db)
{
	for (size_t i = 0; i < 3; i++) {
		char a[PATH_MAX + 8];

		snprintf(a, sizeof(a), "%s%s", db, db_tails[i]);
		unlink(a);
	}
}

/* 0 if @db holds a pool that loads, else why not. */
static int db_loads(const char *db, pool_meta_open_fn *open_meta)
{
	struct pool_meta_image img;
	struct pool_meta *m;
	int r = open_meta(db, false, &m);

	if (r)
		return r;
	r = m->ops->load(m, &img);
	if (!r)
		pool_meta_image_release(&img);
	m->ops->close(m);
	return r;
}

static int read_devices(const struct pool_recover_spec *s, struct found *f,
			struct pool_error *err)
{
	for (size_t i = 0; i < s->nr_paths; i++) {
		char why[128];
		int r;

		f[i].path = s->paths[i];
		r = device_open(s->paths[i], 0, &f[i].dev);
		if (r)
			return pool_fail(err, r, "cannot open '%s': %s", s->paths[i],
					 device_strerror(s->paths[i], r, why, sizeof(why)));
		r = device_label_read(f[i].dev, &f[i].label);
		if (r)
			return pool_fail(err, -EINVAL, "'%s' %s", s->paths[i],
					 r == -ENODATA ? "carries no mapperfs label" :
					 "has a damaged mapperfs label");
		if (i && !uuid_equal(&f[i].label.pool, &f[0].label.pool))
			return pool_fail(err, -EINVAL, "'%s' belongs to another pool than '%s'",
					 s->paths[i], s->paths[0]);
		r = layout_area_read(f[i].dev, &f[i].area);
		if (r)
			return pool_fail(err, r, "cannot read the layout copies of '%s': %s",
					 s->paths[i], strerror(-r));
	}
	return 0;
}

/* The newest good copy of the pool's layout among @f, or NULL. */
static const struct layout_slot *newest_copy(const struct found *f, size_t nr)
{
	const struct layout_slot *best = NULL;

	for (size_t i = 0; i < nr; i++) {
		const struct layout_slot *s = layout_area_newest(&f[i].area);

		if (s && uuid_equal(&s->pool, &f[i].label.pool) && (!best || s->seq > best->seq))
			best = s;
	}
	return best;
}

/*
 * The newest overflow marker among @f newer than copy @than: the layout
 * that outgrew the devices' metadata areas, of which they hold no text.
 */
static const struct layout_slot *newest_overflow(const struct found *f, size_t nr,
						 uint64_t than)
{
	const struct layout_slot *best = NULL;

	for (size_t i = 0; i < nr; i++)
		for (unsigned int k = 0; k < 2; k++) {
			const struct layout_slot *s = &f[i].area.slot[k];

			if (s->state == LAYOUT_SLOT_OVERFLOW && s->seq > than &&
			    uuid_equal(&s->pool, &f[i].label.pool) && (!best || s->seq > best->seq))
				best = s;
		}
	return best;
}

/*
 * Copy @best is stale when the devices say a newer layout did not fit:
 * refused, or with --force used and said so; never taken silently.
 */
static int check_stale(const struct pool_recover_spec *s, const struct found *f,
		       const struct layout_slot *best, FILE *out, struct pool_error *err)
{
	const struct layout_slot *over = newest_overflow(f, s->nr_paths, best ? best->seq : 0);

	if (!over)
		return best ? 0 : pool_fail(err, -ENODATA,
					    "no device given holds a good copy of the layout");
	if (!best)
		return pool_fail(err, -ESTALE, "no device given holds a layout that fits: layout %"
				 PRIu64 " (%zu bytes) outgrew their metadata area; the pool's "
				 "archive keeps it (POOL/archive/%08" PRIu64 ".layout)", over->seq,
				 over->len, over->seq);
	if (!s->force)
		return pool_fail(err, -ESTALE, "the devices' layout copies are stale: layout %"
				 PRIu64 " (%zu bytes) outgrew their metadata area, and copy %" PRIu64
				 ", the newest they hold, lacks every change since (the pool's archive "
				 "keeps them, POOL/archive/%08" PRIu64 ".layout); --force recovers "
				 "copy %" PRIu64 " all the same", over->seq, over->len, best->seq,
				 over->seq, best->seq);
	fprintf(out, "using stale layout copy %" PRIu64 ": layout %" PRIu64 " (%zu bytes) outgrew "
		"the devices' metadata area, and the changes since copy %" PRIu64 " are lost\n",
		best->seq, over->seq, over->len, best->seq);
	return 0;
}

/* Names each device whose copy is not the newest: stale, damaged or missing. */
static void report_copies(const struct found *f, size_t nr, uint64_t newest, FILE *out)
{
	for (size_t i = 0; i < nr; i++) {
		const struct layout_slot *s = layout_area_newest(&f[i].area);
		bool damaged = f[i].area.slot[0].state == LAYOUT_SLOT_DAMAGED ||
			       f[i].area.slot[1].state == LAYOUT_SLOT_DAMAGED;

		if (!s)
			fprintf(out, "'%s': %s\n", f[i].path,
				damaged ? "its layout copies are damaged" : "holds no layout copy");
		else if (s->seq < newest)
			fprintf(out, "'%s': its layout copy %" PRIu64 " is stale (the newest is %"
				PRIu64 ")%s\n", f[i].path, s->seq, newest,
				damaged ? ", and a newer one is damaged" : "");
		else if (damaged)
			fprintf(out, "'%s': one of its layout copies is damaged\n", f[i].path);
	}
}

/* Points each device of @l at the path that carries its label. */
static int place_devices(struct layout *l, const struct found *f, size_t nr, bool force,
			 FILE *out, struct pool_error *err)
{
	for (size_t i = 0; i < l->img.nr_devices; i++) {
		struct device_rec *d = &l->img.devices[i];
		size_t k = 0;

		while (k < nr && !uuid_equal(&f[k].label.device, &d->uuid))
			k++;
		if (k < nr) {
			snprintf(d->path, sizeof(d->path), "%s", f[k].path);
			continue;
		}
		if (!force)
			return pool_fail(err, -ENODEV, "device '%s' (last at '%s') is not among "
					 "those given: name it, or use --force to recover without it",
					 d->name, d->path);
		fprintf(out, "device '%s' was not named: kept at '%s', it fails until it is "
			"there\n", d->name, d->path);
	}
	for (size_t k = 0; k < nr; k++) {
		size_t i = 0;

		while (i < l->img.nr_devices && !uuid_equal(&f[k].label.device,
							     &l->img.devices[i].uuid))
			i++;
		if (i == l->img.nr_devices)
			fprintf(out, "'%s': not a device of the layout, left alone\n", f[k].path);
	}
	return 0;
}

static int record_recovered(const char *db, pool_meta_open_fn *open_meta,
			    const struct layout *l, struct pool_error *err)
{
	struct pool_meta *m;
	int r = open_meta(db, true, &m);

	if (r)
		return pool_fail(err, r, "cannot create '%s': %s", db, strerror(-r));
	r = m->ops->begin(m);
	if (!r)
		r = m->ops->uuid_set(m, &l->img.uuid);
	if (!r)
		r = m->ops->layout_seq_set(m, l->seq);
	for (size_t i = 0; i < l->img.nr_devices && !r; i++)
		r = m->ops->device_restore(m, &l->img.devices[i]);
	for (size_t i = 0; i < l->img.nr_tags && !r; i++)
		if (l->img.tags[i].on == TAG_ON_DEVICE)
			r = m->ops->tag_add(m, &l->img.tags[i]);
	if (!r)
		r = record_volumes(m, l, take_all_but_thin);
	if (!r)
		r = m->ops->commit(m);
	if (r)
		m->ops->rollback(m);
	m->ops->close(m);
	if (r) {
		remove_db(db);
		return pool_store_fail(err, r, "record the recovered layout");
	}
	return 0;
}

/* Whether thin volume @v's pool is one the caller restores from a dump. */
static bool dumped(const struct pool_recover_spec *s, const struct layout *l, int64_t v)
{
	const struct volume_rec *pool = NULL;

	for (size_t i = 0; i < l->img.nr_thins && !pool; i++)
		if (l->img.thins[i].volume == v)
			pool = layout_volume(&l->img, l->img.thins[i].pool);
	for (size_t i = 0; pool && i < s->nr_dumps; i++)
		if (!strcmp(s->dumps[i].pool, pool->name))
			return true;
	return false;
}

static int check_dumps(const struct pool_recover_spec *s, const struct layout *l,
		       struct pool_error *err)
{
	for (size_t k = 0; k < s->nr_dumps; k++) {
		size_t i = 0;

		while (i < l->img.nr_volumes && (strcmp(l->img.volumes[i].name, s->dumps[k].pool) ||
						 !is_thin_pool(&l->img.volumes[i])))
			i++;
		if (i == l->img.nr_volumes)
			return pool_fail(err, -ENOENT, "--dump: the layout has no thin pool '%s'",
					 s->dumps[k].pool);
		for (size_t j = 0; j < k; j++)
			if (!strcmp(s->dumps[j].pool, s->dumps[k].pool))
				return pool_fail(err, -EINVAL, "--dump: thin pool '%s' is given twice",
						 s->dumps[k].pool);
	}
	return 0;
}

static void say_line(void *arg, const char *line)
{
	fprintf(arg, "%s\n", line);
}

/*
 * What the layout says of restored thin volume @v beyond its map: read-only,
 * the consent to shrink, inactive, its tags.
 */
static int settle_thin(struct pool *p, const struct layout *l, const struct volume_rec *v,
		       struct pool_error *err)
{
	char *tags[64];
	size_t nr = 0;
	int r = 0;

	if (v->read_only)
		r = pool_set_read_only(p, v->name, true, err);
	if (!r && v->allow_shrink)
		r = pool_set_allow_shrink(p, v->name, true, err);
	if (!r && v->inactive)
		r = pool_activate(p, v->name, false, err);
	for (size_t i = 0; i < l->img.nr_tags && nr < 64; i++)
		if (l->img.tags[i].on == TAG_ON_VOLUME && l->img.tags[i].owner == v->id)
			tags[nr++] = (char *)l->img.tags[i].tag;
	if (!r && nr)
		r = pool_tag(p, TAG_ON_VOLUME, v->name, tags, nr, NULL, 0, err);
	return r;
}

/*
 * The thin volumes of each dumped thin pool, as `restore` makes them, with
 * what the layout says of them besides.  The pool is opened frozen: until
 * the recovery succeeds, nothing is written on the devices.
 */
static int restore_dumps(const struct pool_recover_spec *s, pool_meta_open_fn *open_meta,
			 const struct layout *l, FILE *out, struct pool_error *err)
{
	struct pool_restore_spec rs = { 0 };
	struct pool *p = NULL;
	int r;

	r = pool_open_frozen(s->dir, open_meta, &p, err);
	for (size_t i = 0; i < s->nr_dumps && !r; i++) {
		rs.xml = fopen(s->dumps[i].path, "re");
		if (!rs.xml) {
			r = pool_fail(err, -errno, "cannot open '%s': %s", s->dumps[i].path,
				      strerror(errno));
			break;
		}
		r = pool_thin_restore(p, s->dumps[i].pool, &rs, say_line, out, err);
		fclose(rs.xml);
		if (r) {
			char why[sizeof(err->msg)];

			snprintf(why, sizeof(why), "%s", err->msg);
			pool_fail(err, r, "--dump %s=%s: %s", s->dumps[i].pool, s->dumps[i].path,
				  why);
		}
	}
	for (size_t i = 0; i < l->img.nr_volumes && !r; i++)
		if (is_thin(&l->img.volumes[i]) && dumped(s, l, l->img.volumes[i].id) &&
		    pool_volume_by_name(p, l->img.volumes[i].name))
			r = settle_thin(p, l, &l->img.volumes[i], err);
	if (p)
		pool_close(p);
	return r;
}

/*
 * A readable pool.db holds the maps of the layout's thin volumes: rebuilt
 * without a dump of their pool, they would be lost, and their blocks
 * handed out again.  Refused, --force or not.
 */
static int keeps_thin_maps(const struct pool_recover_spec *s, const struct layout *l,
			   struct pool_error *err)
{
	for (size_t i = 0; i < l->img.nr_volumes; i++)
		if (is_thin(&l->img.volumes[i]) && !dumped(s, l, l->img.volumes[i].id))
			return pool_fail(err, -EEXIST, "pool.db is readable and holds the map of "
					 "thin volume '%s': dump its thin pool first ('mapperctl "
					 "dump') and give it with --dump", l->img.volumes[i].name);
	return 0;
}

static void report_recovered(const struct pool_recover_spec *s, const struct layout *l,
			     FILE *out)
{
	const struct pool_meta_image *m = &l->img;
	size_t lost = 0;

	for (size_t i = 0; i < m->nr_volumes; i++)
		if (!is_thin(&m->volumes[i]))
			fprintf(out, "recovered %s '%s'\n", m->volumes[i].kind, m->volumes[i].name);
	for (size_t i = 0; i < m->nr_volumes; i++) {
		if (!is_thin(&m->volumes[i]) || dumped(s, l, m->volumes[i].id))
			continue;
		fprintf(out, "lost thin volume '%s': its map was in the database\n",
			m->volumes[i].name);
		lost++;
	}
	if (lost)
		fprintf(out, "bring the thin volumes back from a dump: mapperctl restore POOL "
			"--from DUMP\n");
}

static void release_devices(struct found *f, size_t nr)
{
	for (size_t i = 0; f && i < nr; i++) {
		layout_area_release(&f[i].area);
		device_close(f[i].dev);
	}
	free(f);
}

int pool_recover(const struct pool_recover_spec *s, pool_meta_open_fn *open_meta,
		 FILE *out, struct pool_error *err)
{
	const struct layout_slot *best;
	struct found *f = NULL;
	struct layout l = { 0 };
	char db[PATH_MAX], why[256], aside[PATH_MAX + 40] = "";
	bool loads = false;
	struct stat st;
	int lock, r;

	if (snprintf(db, sizeof(db), "%s/pool.db", s->dir) >= (int)sizeof(db))
		return pool_fail(err, -ENAMETOOLONG, "pool path '%s' is too long", s->dir);
	if (!s->nr_paths)
		return pool_fail(err, -EINVAL, "no devices given");
	r = pool_dir_make(s->dir, err);		/* the whole directory may be lost */
	if (r)
		return r;
	lock = lock_pool(s->dir, "'recover'", err);
	if (lock < 0)
		return lock;
	f = calloc(s->nr_paths, sizeof(*f));
	r = f ? read_devices(s, f, err) : pool_fail(err, -ENOMEM, "out of memory");
	if (r)
		goto out;
	best = newest_copy(f, s->nr_paths);
	r = check_stale(s, f, best, out, err);
	if (r)
		goto out;
	report_copies(f, s->nr_paths, best->seq, out);
	r = layout_parse(best->text, best->len, &l, why, sizeof(why));
	if (r) {
		pool_fail(err, r, "layout copy %" PRIu64 " cannot be read: %s", best->seq, why);
		goto out;
	}
	fprintf(out, "using layout copy %" PRIu64 " of pool ", best->seq);
	{
		char uuid[UUID_STR_LEN];

		uuid_format(&l.img.uuid, uuid);
		fprintf(out, "%s\n", uuid);
	}
	r = check_dumps(s, &l, err);
	if (!r)
		r = place_devices(&l, f, s->nr_paths, s->force, out, err);
	if (r)
		goto out;
	if (!stat(db, &st)) {
		loads = !db_loads(db, open_meta);
		if (loads && !s->force) {
			r = pool_fail(err, -EEXIST, "'%s' is readable: nothing to recover "
				      "(restore-layout puts back an older layout; --force rebuilds it "
				      "all the same)", db);
			goto out;
		}
		r = loads ? keeps_thin_maps(s, &l, err) : 0;
		if (r)
			goto out;
		snprintf(aside, sizeof(aside), "%s.%s-%ld", db, loads ? "replaced" : "damaged",
			 (long)time(NULL));
		r = move_db(db, aside, false, err);
		if (r)
			goto out;
	}
	release_devices(f, s->nr_paths);	/* the pool opens them for the dumps */
	f = NULL;
	r = record_recovered(db, open_meta, &l, err);
	if (!r && s->nr_dumps) {
		r = restore_dumps(s, open_meta, &l, out, err);
		if (r)
			remove_db(db);
	}
	if (r && aside[0]) {
		struct pool_error back;		/* err says why it failed */

		if (move_db(db, aside, true, &back))
			log_warn("%s", back.msg);
	}
	if (!r && aside[0])
		fprintf(out, "moved the %s database aside to '%s'\n",
			loads ? "previous" : "damaged", aside);
	if (!r)
		report_recovered(s, &l, out);
out:
	layout_release(&l);
	release_devices(f, s->nr_paths);
	close(lock);
	return r;
}

/* ---- restore-layout --------------------------------------------------- */

static bool take_linear_switch(const struct volume_rec *v)
{
	return v && (!strcmp(v->kind, "linear") || !strcmp(v->kind, "switch"));
}

static bool same_extents(const struct pool_meta_image *a, const struct pool_meta_image *b,
			 int64_t volume)
{
	size_t ia = 0, ib = 0;

	for (;;) {
		while (ia < a->nr_extents && a->extents[ia].volume != volume)
			ia++;
		while (ib < b->nr_extents && b->extents[ib].volume != volume)
			ib++;
		if (ia == a->nr_extents || ib == b->nr_extents)
			return ia == a->nr_extents && ib == b->nr_extents;
		if (a->extents[ia].device != b->extents[ib].device ||
		    a->extents[ia].dev_offset != b->extents[ib].dev_offset ||
		    a->extents[ia].length != b->extents[ib].length)
			return false;
		ia++;
		ib++;
	}
}

/* The file's layout @want against the pool's @now: what cannot be restored. */
static int restore_check(const struct layout *want, const struct layout *now, bool force,
			 FILE *out, struct pool_error *err)
{
	const struct pool_meta_image *w = &want->img, *n = &now->img;
	size_t lost = 0;

	if (!uuid_equal(&w->uuid, &n->uuid))
		return pool_fail(err, -EINVAL, "the layout is of another pool");
	for (size_t i = 0; i < w->nr_devices; i++) {
		size_t k = 0;

		while (k < n->nr_devices && (n->devices[k].id != w->devices[i].id ||
					     !uuid_equal(&n->devices[k].uuid, &w->devices[i].uuid)))
			k++;
		if (k == n->nr_devices)
			return pool_fail(err, -ENODEV, "device '%s' (id %" PRId64 ", uuid as in the "
					 "layout) is not in the pool: the layout is of its devices "
					 "as they were", w->devices[i].name, w->devices[i].id);
	}
	if (n->nr_devices != w->nr_devices)
		for (size_t k = 0; k < n->nr_devices; k++) {
			size_t i = 0;

			while (i < w->nr_devices && w->devices[i].id != n->devices[k].id)
				i++;
			if (i == w->nr_devices)
				return pool_fail(err, -EINVAL, "device '%s' is not in the layout: "
						 "remove it first", n->devices[k].name);
		}
	for (size_t i = 0; i < n->nr_volumes; i++) {
		const struct volume_rec *v = &n->volumes[i], *wv = layout_volume(w, v->id);

		if (is_thin_pool(v) && (!wv || !same_extents(w, n, v->id)))
			return pool_fail(err, -EINVAL, "thin pool '%s' is %s the layout: its maps "
					 "are only in the pool database", v->name,
					 wv ? "placed otherwise in" : "not in");
		if (is_thin(v) && wv && !is_thin(wv))
			return pool_fail(err, -EINVAL, "volume id %" PRId64 " is thin volume '%s' "
					 "now, a %s in the layout", v->id, v->name, wv->kind);
	}
	for (size_t i = 0; i < w->nr_volumes; i++) {
		const struct volume_rec *v = &w->volumes[i], *nv = layout_volume(n, v->id);

		if (is_thin_pool(v) && !nv)
			return pool_fail(err, -EINVAL, "thin pool '%s' of the layout is gone: its "
					 "maps cannot be restored from a layout", v->name);
		if (is_thin(v) && !nv) {
			fprintf(out, "thin volume '%s' cannot be restored: its map is gone\n",
				v->name);
			lost++;
		}
		/* a name the restore frees is fine; one a kept thin volume holds is not */
		for (size_t k = 0; k < n->nr_volumes && take_linear_switch(v); k++)
			if (!strcmp(n->volumes[k].name, v->name) && is_thin(&n->volumes[k]) &&
			    n->volumes[k].id != v->id)
				return pool_fail(err, -EEXIST, "volume '%s' of the layout: thin volume "
						 "'%s' has the name now: rename it first", v->name,
						 v->name);
	}
	if (lost && !force)
		return pool_fail(err, -EINVAL, "%zu thin volume%s of the layout cannot be restored "
				 "(use --force to restore the rest)", lost, lost == 1 ? "" : "s");
	return 0;
}

/* What the restore changes: volumes that come back, go, or change. */
static void restore_report(const struct layout *want, const struct layout *now, FILE *out)
{
	const struct pool_meta_image *w = &want->img, *n = &now->img;

	for (size_t i = 0; i < w->nr_volumes; i++) {
		const struct volume_rec *v = &w->volumes[i], *nv = layout_volume(n, v->id);

		if (!take_linear_switch(v))
			continue;
		if (!nv)
			fprintf(out, "restores %s '%s'\n", v->kind, v->name);
		else if (strcmp(nv->name, v->name) || nv->size != v->size ||
			 !same_extents(w, n, v->id))
			fprintf(out, "puts back %s '%s' as it was\n", v->kind, v->name);
	}
	for (size_t i = 0; i < n->nr_volumes; i++)
		if (take_linear_switch(&n->volumes[i]) && !layout_volume(w, n->volumes[i].id))
			fprintf(out, "removes %s '%s' (not in the layout)\n", n->volumes[i].kind,
				n->volumes[i].name);
}

/* Replaces the store's linear and switch volumes with @want's. */
static int record_restore(struct pool_meta *m, const struct layout *want,
			  const struct layout *now)
{
	int r = m->ops->begin(m);

	for (size_t i = 0; i < now->img.nr_volumes && !r; i++)
		if (take_linear_switch(&now->img.volumes[i]))
			r = m->ops->volume_delete(m, now->img.volumes[i].id);
	if (!r)
		r = record_volumes(m, want, take_linear_switch);
	if (!r)
		r = m->ops->commit(m);
	if (r)
		m->ops->rollback(m);
	return r;
}

int pool_restore_layout(const struct pool_restore_layout_spec *s,
			pool_meta_open_fn *open_meta, FILE *out, struct pool_error *err)
{
	struct layout want = { 0 }, now = { 0 };
	struct pool_meta *m = NULL;
	char db[PATH_MAX], why[256];
	int lock, r;

	r = layout_parse(s->text, s->len, &want, why, sizeof(why));
	if (r)
		return pool_fail(err, r, "'%s' is not a layout: %s", s->file, why);
	if (snprintf(db, sizeof(db), "%s/pool.db", s->dir) >= (int)sizeof(db)) {
		layout_release(&want);
		return pool_fail(err, -ENAMETOOLONG, "pool path '%s' is too long", s->dir);
	}
	lock = lock_pool(s->dir, "'restore-layout'", err);
	if (lock < 0) {
		layout_release(&want);
		return lock;
	}
	r = open_meta(db, false, &m);
	if (r) {
		pool_fail(err, r, "cannot open '%s': %s (recover rebuilds it from the devices)",
			  db, strerror(-r));
		m = NULL;
		goto out;
	}
	r = pool_layout_load(m, &now);
	if (r) {
		pool_fail(err, r, "cannot read '%s': %s", db, strerror(-r));
		goto out;
	}
	r = restore_check(&want, &now, s->force, out, err);
	if (r)
		goto out;
	restore_report(&want, &now, out);
	if (s->dry_run)
		goto out;
	{
		char *text;
		size_t len;

		now.seq = now.img.layout_seq;
		now.time = (int64_t)time(NULL);
		if (asprintf(&now.command, "mapperctl restore-layout %s", s->file) < 0)
			now.command = NULL;
		r = pool_layout_text(&now, &text, &len);
		if (!r) {
			r = pool_archive_write(s->dir, now.seq, text, len);
			free(text);
		}
		if (r) {
			pool_fail(err, r, "cannot archive the layout before the restore: %s",
				  strerror(-r));
			goto out;
		}
	}
	r = record_restore(m, &want, &now);
	if (r)
		pool_store_fail(err, r, "record the restored layout");
out:
	if (m)
		m->ops->close(m);
	layout_release(&want);
	layout_release(&now);
	close(lock);
	return r;
}
