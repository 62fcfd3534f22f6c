/*
 * core/pool/pool_switch.c: switch volumes in the pool service.
 *
 * A switch volume's regions are spread over 2 to 256 paths by a region
 * table, as dm-switch does.  Each path reaches the whole volume (byte x
 * of the volume is byte OFFSET + x of its path), so a path is either a
 * range of SIZE bytes carved from a device's free space, which the volume
 * then owns as an extent, or DEVICE:OFFSET, a place the caller chose,
 * which is no extent and may be shared by other paths of the volume
 * (multipath).  In dm-switch a path is a whole device, nobody else's: so
 * a placed path must lie in free space, and then keeps it (the placed
 * hook: nothing is allocated or placed over it, and check finds what
 * overlaps it).  A new table maps region r to path r % N.
 *
 * Extending grows every path in place by whole regions: the bytes after
 * each path's end, on its device, must be free (or the device must have
 * them: a path placed by hand), since byte x of the volume is byte
 * OFFSET + x of every path; the new regions go to the paths round-robin,
 * r % N as at create.  An owned path's extent grows with it.  Extend
 * does not move a path: one without room is refused, naming its device.
 *
 * Move (pool_move.c) carries owned paths off a device, each whole to one
 * free range elsewhere (the kind moves_whole), on a mirror of two switch
 * targets: the paths as they are and as they will be (build_over: an
 * owned path at the place of the extent in its extent's position, a
 * placed one where it is).  Both legs load the table as stored, and
 * switch-map and extend are refused while the move runs rather than
 * sharing one live table: the mirror maps a write on each leg in turn, so
 * a table changed between the two would send it to one path in one leg
 * and another in the other; and the copy carries the volume as its table
 * routes it, so a region routed to a moved path after the copy passed it
 * would read bytes the copy never wrote.  For the same reason what a move
 * carries of a path is the regions the table gives it: its bytes in
 * regions routed elsewhere are no part of the volume and stay behind.
 * The finishing transaction rewrites the moved paths' rows with the
 * extents (record_moved), since a row holds its device and offset.  A
 * placed path is not moved (pool_move.c says why).
 *
 * switch-map stages the whole message on a private copy of the live
 * table (switch_msg.h); only if every argument was good is the copy
 * recorded, in one transaction, and then published word by word into the
 * live table, while I/O goes on.  So a message is all or nothing, and the
 * first bad argument is named.
 */
#include "pool_int.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "label.h"
#include "json.h"
#include "log.h"
#include "mirror.h"
#include "size.h"
#include "switch.h"
#include "switch_msg.h"
#include "switch_table.h"
#include "volume.h"

#define VOLUME_ALIGN	4096u

static int switch_attach(struct pool_volume *v, const struct pool_meta_image *img)
{
	size_t n = 0;

	for (size_t i = 0; i < img->nr_switches; i++)
		if (img->switches[i].volume == v->rec.id)
			v->sw.rec = img->switches[i];
	for (size_t i = 0; i < img->nr_switch_paths; i++)
		n += img->switch_paths[i].volume == v->rec.id;
	v->sw.paths = calloc(n + 1, sizeof(*v->sw.paths));
	if (!v->sw.paths)
		return -ENOMEM;
	n = 0;
	for (size_t i = 0; i < img->nr_switch_paths; i++)
		if (img->switch_paths[i].volume == v->rec.id)
			v->sw.paths[n++] = img->switch_paths[i];
	if (!v->sw.rec.volume || n != v->sw.rec.nr_paths) {
		pool_volume_broken(v, "its switch rows are missing or do not match its paths");
		v->sw.rec.nr_paths = (uint32_t)n;	/* what every loop over paths may read */
	}
	return 0;
}

/* The paths @recs[0..nr) on the open devices. */
static int live_paths(struct pool *p, const struct switch_path_rec *recs, uint32_t nr,
		      struct switch_path *out, struct pool_error *err)
{
	for (uint32_t i = 0; i < nr; i++) {
		struct pool_device *d = pool_device_by_id(p, recs[i].device);

		if (!d)
			return pool_fail(err, -EUCLEAN, "path %u uses device %lld, which the pool does not have",
					 i, (long long)recs[i].device);
		if (!d->dev)
			return pool_fail(err, -ENODEV, "path %u's device '%s' is failed: %s", i,
					 d->rec.name, d->failure);
		out[i] = (struct switch_path){ d->dev, recs[i].dev_offset };
	}
	return 0;
}

/* A switch target of @v over the paths @recs, with the table @tb (taken). */
static int switch_over(struct pool *p, struct pool_volume *v, const struct switch_path_rec *recs,
		       struct switch_table *tb, struct target **out, struct pool_error *err)
{
	struct switch_path paths[SWITCH_PATHS_MAX];
	int r;

	r = live_paths(p, recs, v->sw.rec.nr_paths, paths, err);
	if (r) {
		switch_table_destroy(tb);
		return r;
	}
	r = switch_create(paths, v->sw.rec.nr_paths, v->sw.rec.region_size, tb, out);
	return r ? pool_fail(err, r, "cannot build its target: %s", strerror(-r)) : 0;
}

static int serve_switch(struct pool *p, struct pool_volume *v,
			struct switch_table *tb, struct pool_error *err)
{
	struct target *t;
	int r;

	r = switch_over(p, v, v->sw.paths, tb, &t, err);
	if (!r && (r = pool_volume_serve(v, t)))
		r = pool_fail(err, r, "out of memory");
	return r;
}

/* @v's region table as stored, in *out. */
static int load_table(struct pool *p, struct pool_volume *v, struct switch_table **out,
		      struct pool_error *err)
{
	void *blob = NULL;
	size_t len = 0;
	int r;

	if (!v->sw.rec.region_size || v->sw.rec.nr_paths > SWITCH_PATHS_MAX ||
	    v->sw.rec.nr_regions != switch_nr_regions(v->rec.size, v->sw.rec.region_size))
		return pool_fail(err, -EUCLEAN, "its region count does not match its size");
	r = p->meta->ops->switch_table(p->meta, v->rec.id, &blob, &len);
	if (r)
		return pool_fail(err, r, "cannot read its region table: %s", strerror(-r));
	r = switch_table_create(v->sw.rec.nr_regions, v->sw.rec.nr_paths, out);
	if (!r && (r = switch_table_import(*out, blob, len)))
		switch_table_destroy(*out);
	free(blob);
	if (r == -EUCLEAN)
		return pool_fail(err, r, "its stored region table is corrupt");
	if (r)
		return pool_fail(err, r, "cannot load its region table: %s", strerror(-r));
	return 0;
}

/* Being moved (pool_move.c), it is served as the mirror that carries the move. */
static int switch_build(struct pool *p, struct pool_volume *v, struct pool_error *err)
{
	struct switch_table *tb;
	int r;

	if (pool_move_source_of(p, v) >= 0)
		return pool_move_serve(p, v, err);
	r = load_table(p, v, &tb, err);
	return r ? r : serve_switch(p, v, tb, err);
}

/* ---- moves (pool_move.c) ---------------------------------------------------- */

/* The position of path @sp's extent among @v's own (not a move's pieces), or -1: placed. */
static ssize_t owned_position(struct pool *p, const struct pool_volume *v,
			      const struct switch_path_rec *sp, size_t *nr_owned)
{
	size_t n, k = 0;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);
	ssize_t at = -1;

	for (size_t i = 0; i < n; i++) {
		if (e[i].seq >= POOL_MOVE_SEQ)
			continue;
		if (e[i].device == sp->device && e[i].dev_offset == sp->dev_offset && at < 0)
			at = (ssize_t)k;
		k++;
	}
	*nr_owned = k;
	return at;
}

/*
 * @v's paths over the extents @e[0..n) (in the order of its own, as
 * build_over takes them) in @out: an owned path at the place of the
 * extent in its own extent's position, a path placed by hand where it is.
 */
static int paths_over(struct pool *p, struct pool_volume *v, const struct extent_rec *e,
		      size_t n, struct switch_path_rec *out, struct pool_error *err)
{
	for (uint32_t i = 0; i < v->sw.rec.nr_paths; i++) {
		size_t nr_owned;
		ssize_t k = owned_position(p, v, &v->sw.paths[i], &nr_owned);

		out[i] = v->sw.paths[i];
		if (k < 0)
			continue;
		if (n != nr_owned || e[k].length != v->rec.size)
			return pool_fail(err, -EUCLEAN, "the extents of its move do not match its "
					 "paths: %zu of %zu, path %u", n, nr_owned, i);
		out[i].device = e[k].device;
		out[i].dev_offset = e[k].dev_offset;
	}
	return 0;
}

/*
 * Both legs of a move's mirror are switch targets over the table as
 * stored, which switch-map leaves alone meanwhile (switch_map), so they
 * route alike.
 */
static int switch_build_over(struct pool *p, struct pool_volume *v, const struct extent_rec *e,
			     size_t n, struct target **out, struct pool_error *err)
{
	struct switch_path_rec recs[SWITCH_PATHS_MAX];
	struct switch_table *tb;
	int r;

	r = paths_over(p, v, e, n, recs, err);
	if (!r)
		r = load_table(p, v, &tb, err);
	return r ? r : switch_over(p, v, recs, tb, out, err);
}

/* The finishing transaction of a move: the moved paths' rows at their new places. */
static int switch_record_moved(struct pool *p, struct pool_volume *v, const struct extent_rec *e,
			       size_t n)
{
	struct switch_path_rec recs[SWITCH_PATHS_MAX];
	struct pool_error err;
	int r;

	r = paths_over(p, v, e, n, recs, &err);
	for (uint32_t i = 0; !r && i < v->sw.rec.nr_paths; i++)
		if (recs[i].device != v->sw.paths[i].device ||
		    recs[i].dev_offset != v->sw.paths[i].dev_offset)
			r = p->meta->ops->switch_path_set(p->meta, v->rec.id, i, recs[i].device,
							  recs[i].dev_offset);
	return r;
}

/* The same in memory: paths_over cannot fail on what switch_record_moved recorded. */
static void switch_publish_moved(struct pool *p, struct pool_volume *v, const struct extent_rec *e,
				 size_t n)
{
	struct switch_path_rec recs[SWITCH_PATHS_MAX];
	struct pool_error err;

	if (!paths_over(p, v, e, n, recs, &err))
		memcpy(v->sw.paths, recs, v->sw.rec.nr_paths * sizeof(*recs));
}

/* The switch target @v is served by: its own, or while it moves the one it is moved from. */
static struct target *switch_target(const struct pool_volume *v)
{
	struct target *t = v->served->target;

	return mirror_is(t) ? mirror_leg(t, 0) : t;
}

/* -EBUSY while @v is being moved: both legs of its move route by one table. */
static int refuse_moving(struct pool *p, struct pool_volume *v, const char *what,
			 struct pool_error *err)
{
	struct pool_device *from;

	if (pool_move_source_of(p, v) < 0)
		return 0;
	from = pool_device_by_id(p, pool_move_source_of(p, v));
	return pool_fail(err, -EBUSY, "switch volume '%s' is being moved off '%s': %s once the "
			 "move is done (its old and new places route by one table meanwhile), or "
			 "after 'mapperctl move %s --abort'", v->rec.name, from ? from->rec.name : "?",
			 what, from ? from->rec.name : "DEVICE");
}

static void switch_release(struct pool *p, struct pool_volume *v)
{
	(void)p;
	free(v->sw.paths);
}

/* ---- create --------------------------------------------------------------- */

/*
 * A path that owns its storage needs @size contiguous bytes: the first
 * free range of its device that holds them, from a SPACE_ALIGN boundary.
 * The extents planned so far (@plan) count as used.
 */
static int allocate_path(struct pool *p, const struct pool_switch_path *sp,
			 const struct pool_device *d, uint64_t size,
			 const struct extent_rec *plan, size_t nr_plan,
			 uint64_t *offset, struct pool_error *err)
{
	char want[SIZE_STR_LEN];
	int r = pool_find_whole(p, d, size, plan, nr_plan, offset);

	if (r == -ENOSPC)
		return pool_fail(err, r, "path '%s': device '%s' has no %s free in one piece",
				 sp->arg, d->rec.name, format_size(size, want));
	return r ? pool_fail(err, r, "out of memory") : 0;
}

struct new_switch {
	struct volume_rec rec;
	struct switch_rec sw;
	struct switch_path_rec *paths;
	struct extent_rec *ext;		/* the owned paths' */
	size_t nr_ext;
	uint8_t *blob;
	size_t blob_len;
};

/*
 * A path placed by hand at [off, off + size) of @d must lie where no
 * other volume keeps anything (an extent, a placed path: pool_used()):
 * dm-switch's paths are whole devices, and a path over another volume's
 * bytes would write over them.  Paths of the new volume may share a range
 * (multipath).
 */
static int check_placed(struct pool *p, const struct pool_switch_path *sp,
			const struct pool_device *d, uint64_t off, uint64_t size,
			struct pool_error *err)
{
	struct pool_volume *other = NULL;
	struct extent_rec *used;
	size_t nr;

	if (pool_used(p, NULL, 0, &used, &nr))
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < nr && !other; i++)
		if (used[i].device == d->rec.id && used[i].dev_offset < off + size &&
		    off < used[i].dev_offset + used[i].length)
			other = pool_volume_by_id(p, used[i].volume);
	free(used);
	if (other)
		return pool_fail(err, -EEXIST, "path '%s' overlaps %s '%s' on device '%s': a path placed by hand must lie in free space",
				 sp->arg, other->type->noun,
				 other->rec.name, d->rec.name);
	return 0;
}

/*
 * Places path @i of @s: carves an owned one from free space around what
 * the new volume has taken so far (@taken), or checks a placed one; adds
 * it to @taken, and an owned one to n->ext.
 */
static int place_path(struct pool *p, const struct pool_switch_spec *s, size_t i,
		      struct new_switch *n, struct extent_rec *taken, size_t *nr_taken,
		      struct pool_error *err)
{
	const struct pool_switch_path *sp = &s->paths[i];
	struct pool_device *d = pool_device_by_name(p, sp->device);
	uint64_t off = sp->offset + DEVICE_DATA_OFFSET;
	int r;

	if (!d)
		return pool_fail(err, -ENOENT, "path '%s': no device '%s'", sp->arg, sp->device);
	if (!d->dev)
		return pool_fail(err, -ENODEV, "path '%s': device '%s' is failed: %s",
				 sp->arg, sp->device, d->failure);
	if (sp->owned) {
		r = allocate_path(p, sp, d, s->size, taken, *nr_taken, &off, err);
		if (r)
			return r;
		n->ext[n->nr_ext] = (struct extent_rec){ 0, (uint32_t)n->nr_ext, d->rec.id, off,
							 s->size };
		n->nr_ext++;
	} else if (sp->offset % VOLUME_ALIGN) {
		return pool_fail(err, -EINVAL, "path '%s': offset is not a multiple of 4 KiB",
				 sp->arg);
	} else if (sp->offset > d->rec.size || off > d->rec.size ||
		   s->size > d->rec.size - off) {
		return pool_fail(err, -ERANGE, "path '%s' runs past the end of device '%s'",
				 sp->arg, d->rec.name);
	} else {
		r = check_placed(p, sp, d, off, s->size, err);
		if (r)
			return r;
	}
	taken[(*nr_taken)++] = (struct extent_rec){ 0, (uint32_t)i, d->rec.id, off, s->size };
	n->paths[i] = (struct switch_path_rec){ 0, (uint32_t)i, d->rec.id, off };
	return 0;
}

/*
 * Places every path: the placed ones first, so that the owned ones are
 * carved around them as well as around everything else.
 */
static int place_paths(struct pool *p, const struct pool_switch_spec *s,
		       struct new_switch *n, struct pool_error *err)
{
	struct extent_rec *taken = calloc(s->nr_paths + 1, sizeof(*taken));
	size_t nr_taken = 0;
	int r = taken ? 0 : pool_fail(err, -ENOMEM, "out of memory");

	for (int owned = 0; !r && owned < 2; owned++)
		for (size_t i = 0; !r && i < s->nr_paths; i++)
			if (s->paths[i].owned == (owned == 1))
				r = place_path(p, s, i, n, taken, &nr_taken, err);
	free(taken);
	return r;
}

static int check_sizes(const struct pool_switch_spec *s, struct switch_rec *sw,
		       struct pool_error *err)
{
	if (!s->size || s->size % VOLUME_ALIGN)
		return pool_fail(err, -EINVAL, "the size must be a positive multiple of 4 KiB");
	if (!s->region_size || s->region_size % VOLUME_ALIGN)
		return pool_fail(err, -EINVAL, "the region size must be a positive multiple of 4 KiB");
	if (s->region_size > s->size)
		return pool_fail(err, -EINVAL, "the region size is larger than the volume");
	if (s->nr_paths < 2 || s->nr_paths > SWITCH_PATHS_MAX)
		return pool_fail(err, -EINVAL, "a switch volume has 2 to %d paths, not %zu",
				 SWITCH_PATHS_MAX, s->nr_paths);
	sw->region_size = s->region_size;
	sw->nr_regions = switch_nr_regions(s->size, s->region_size);
	sw->nr_paths = (uint32_t)s->nr_paths;
	if (sw->nr_regions > SWITCH_REGIONS_MAX)
		return pool_fail(err, -E2BIG, "%llu regions are too many (at most %llu): use larger regions",
				 (unsigned long long)sw->nr_regions,
				 (unsigned long long)SWITCH_REGIONS_MAX);
	return 0;
}

static int record_new_switch(struct pool *p, void *arg)
{
	struct new_switch *n = arg;
	const struct pool_meta_ops *m = p->meta->ops;
	int r;

	r = m->volume_insert(p->meta, &n->rec);
	for (size_t i = 0; !r && i < n->nr_ext; i++) {
		n->ext[i].volume = n->rec.id;
		r = m->extent_insert(p->meta, &n->ext[i]);
	}
	if (r)
		return r;
	n->sw.volume = n->rec.id;
	for (size_t i = 0; i < n->sw.nr_paths; i++)
		n->paths[i].volume = n->rec.id;
	return m->switch_insert(p->meta, &n->sw, n->paths, n->blob, n->blob_len);
}

int pool_create_switch(struct pool *p, const struct pool_switch_spec *s,
		       struct volume_rec *out, struct pool_error *err)
{
	struct new_switch n = { 0 };
	struct pool_volume *v = NULL;
	struct switch_table *tb = NULL;
	int r;

	pool_admin_lock(p);
	r = pool_check_new_name(p, s->name, err);
	if (!r)
		r = check_sizes(s, &n.sw, err);
	if (r)
		goto out;
	n.paths = calloc(s->nr_paths, sizeof(*n.paths));
	n.ext = calloc(s->nr_paths, sizeof(*n.ext));
	if (!n.paths || !n.ext || switch_table_create(n.sw.nr_regions, n.sw.nr_paths, &tb)) {
		r = pool_fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	r = place_paths(p, s, &n, err);
	if (r)
		goto out;
	switch_table_round_robin(tb);
	n.sw.entry_bits = tb->bits;
	n.blob_len = tb->nr_words * 8;
	n.blob = malloc(n.blob_len);
	snprintf(n.rec.name, sizeof(n.rec.name), "%s", s->name);
	snprintf(n.rec.kind, sizeof(n.rec.kind), "%s", switch_type.name);
	n.rec.read_only = s->read_only;
	n.rec.size = s->size;
	v = pool_volume_new(&n.rec, &switch_type);
	if (!n.blob || !v || pool_reserve(p, 1, n.nr_ext)) {
		r = pool_fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	switch_table_export(tb, n.blob);
	v->sw.rec = n.sw;
	v->sw.paths = n.paths;
	n.paths = NULL;
	r = serve_switch(p, v, tb, err);
	tb = NULL;
	if (r)
		goto out;
	n.paths = v->sw.paths;		/* the record call fills in the volume id */
	r = pool_record(p, "record the volume", record_new_switch, &n, err);
	n.paths = NULL;
	if (r)
		goto out;
	pool_volume_recorded(v, &n.rec);
	v->sw.rec.volume = n.rec.id;
	pool_extents_publish(p, n.ext, n.nr_ext);
	pool_volume_publish(p, v);
	if (out)
		*out = v->rec;
	log_info("created switch volume '%s'", v->rec.name);
	v = NULL;
out:
	switch_table_destroy(tb);
	pool_volume_free(p, v);
	free(n.paths);
	free(n.ext);
	free(n.blob);
	pool_admin_unlock(p);
	return r;
}

/* ---- switch-map ----------------------------------------------------------- */

static uint64_t regions_changed(const struct switch_table *a, const struct switch_table *b)
{
	uint64_t n = 0;

	for (uint64_t r = 0; r < a->nr_regions; r++)
		n += switch_table_get(a, r) != switch_table_get(b, r);
	return n;
}

struct table_change {
	int64_t volume;
	uint8_t *blob;
	size_t len;
};

static int record_table(struct pool *p, void *arg)
{
	struct table_change *c = arg;

	return p->meta->ops->switch_table_set(p->meta, c->volume, c->blob, c->len);
}

int pool_switch_map(struct pool *p, const char *name, size_t argc,
		    char *const *argv, uint64_t *changed, uint64_t *nr_regions,
		    struct pool_error *err)
{
	const struct switch_table *live;
	struct switch_table *next = NULL;
	struct table_change c = { 0 };
	struct pool_volume *v;
	char why[256];
	int r;

	pool_admin_lock(p);
	r = pool_volume_get(p, name, &switch_type, false, &v, err);
	if (!r)
		r = refuse_moving(p, v, "change its region table", err);
	if (r)
		goto out;
	live = switch_table_of(v->served->target);
	if (switch_table_clone(live, &next)) {
		r = pool_fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	if (switch_msg_apply(next, argc, argv, why, sizeof(why))) {
		r = pool_fail(err, -EINVAL, "%s; the table of '%s' is unchanged", why, name);
		goto out;
	}
	c.volume = v->rec.id;
	c.len = next->nr_words * 8;
	c.blob = malloc(c.len);
	if (!c.blob) {
		r = pool_fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	switch_table_export(next, c.blob);
	*changed = regions_changed(live, next);
	*nr_regions = next->nr_regions;
	r = pool_record(p, "record the region table", record_table, &c, err);
	if (!r) {
		switch_set_table(v->served->target, next);	/* same shape: cannot fail */
		pool_stale_file(p, v->rec.id);
	}
out:
	free(c.blob);
	switch_table_destroy(next);
	pool_admin_unlock(p);
	return r;
}

int pool_switch_dump(struct pool *p, const char *name, FILE *f,
		     struct pool_error *err)
{
	struct pool_volume *v;
	int r;

	pool_admin_lock(p);
	r = pool_volume_get(p, name, &switch_type, false, &v, err);
	if (!r) {
		r = switch_msg_dump(switch_table_of(switch_target(v)), f);
		if (r)
			pool_fail(err, r, "cannot write the table: %s", strerror(-r));
	}
	pool_admin_unlock(p);
	return r;
}

/* ---- extend --------------------------------------------------------------- */

/*
 * The owner of what lies in [off, off + len) of device @dev among @used
 * and @planned, or NULL; a planned range at the same place (another path
 * over the same bytes: multipath) is no obstacle.
 */
static struct pool_volume *in_the_way(struct pool *p, const struct extent_rec *used, size_t nr,
				      int64_t dev, uint64_t off, uint64_t len)
{
	for (size_t i = 0; i < nr; i++)
		if (used[i].device == dev && used[i].dev_offset < off + len &&
		    off < used[i].dev_offset + used[i].length &&
		    !(used[i].volume == 0 && used[i].dev_offset == off))
			return pool_volume_by_id(p, used[i].volume);
	return NULL;
}

/* The extent that path @sp owns, or NULL (placed by hand). */
static const struct extent_rec *owned_extent(struct pool *p, const struct pool_volume *v,
					     const struct switch_path_rec *sp)
{
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);

	for (size_t k = 0; k < n; k++)
		if (e[k].device == sp->device && e[k].dev_offset == sp->dev_offset)
			return &e[k];
	return NULL;
}

/* Plans extent @e's new @length in @grow.  0 or -ENOMEM. */
static int grow_push(struct extent_cut *grow, const struct extent_rec *e, uint64_t length)
{
	struct extent_rec *v = realloc(grow->v, (grow->nr + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	v[grow->nr] = *e;
	v[grow->nr++].length = length;
	grow->v = v;
	return 0;
}

/*
 * Checks that every path can grow from @v's size to @size on its device,
 * and plans the owned paths' new lengths in @grow.
 */
static int plan_paths(struct pool *p, struct pool_volume *v, uint64_t size,
		      struct extent_cut *grow, struct pool_error *err)
{
	uint32_t nr_paths = v->sw.rec.nr_paths;
	uint64_t more = size - v->rec.size;
	struct extent_rec *used, *all;
	char want[SIZE_STR_LEN];
	size_t nr;
	int r = 0;

	if (pool_used(p, NULL, 0, &used, &nr))
		return pool_fail(err, -ENOMEM, "out of memory");
	all = realloc(used, (nr + nr_paths + 1) * sizeof(*all));
	if (!all) {
		free(used);
		return pool_fail(err, -ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; !r && i < nr_paths; i++) {
		const struct switch_path_rec *sp = &v->sw.paths[i];
		struct pool_device *d = pool_device_by_id(p, sp->device);
		uint64_t off = sp->dev_offset + v->rec.size;
		const struct extent_rec *own = owned_extent(p, v, sp);
		struct pool_volume *other;

		format_size(more, want);
		if (!d || !d->dev)
			r = pool_fail(err, -ENODEV, "path %u's device is failed or missing", i);
		else if (off > d->rec.size || more > d->rec.size - off)
			r = pool_fail(err, -ENOSPC, "path %u of '%s' cannot grow by %s: device '%s' ends before",
				      i, v->rec.name, want, d->rec.name);
		else if ((other = in_the_way(p, all, nr, d->rec.id, off, more)))
			r = pool_fail(err, -ENOSPC, "path %u of '%s' cannot grow by %s: on device '%s' %s '%s' lies right after it",
				      i, v->rec.name, want, d->rec.name, other->type->noun,
				      other->rec.name);
		else if (own && grow_push(grow, own, size))
			r = pool_fail(err, -ENOMEM, "out of memory");
		all[nr++] = (struct extent_rec){ 0, i, sp->device, off, more };
	}
	free(all);
	return r;
}

/* @live grown to @nr_regions: the old regions as they are, new ones round-robin. */
static int grown_table(const struct switch_table *live, uint64_t nr_regions,
		       struct switch_table **out)
{
	int r = switch_table_create(nr_regions, live->nr_paths, out);

	if (r)
		return r;
	for (uint64_t i = 0; i < nr_regions; i++)
		switch_table_set(*out, i, i < live->nr_regions ? switch_table_get(live, i)
							       : (unsigned int)(i % live->nr_paths));
	return 0;
}

struct switch_growth {
	const struct pool_volume *v;
	uint64_t size, nr_regions;
	const struct extent_cut *grow;
	uint8_t *blob;
	size_t len;
};

static int record_switch_growth(struct pool *p, void *arg)
{
	const struct switch_growth *g = arg;
	const struct pool_meta_ops *m = p->meta->ops;
	int r = 0;

	for (size_t i = 0; !r && i < g->grow->nr; i++)
		r = m->extent_set_length(p->meta, g->grow->v[i].volume, g->grow->v[i].seq,
					 g->grow->v[i].length);
	if (!r)
		r = m->switch_resize(p->meta, g->v->rec.id, g->nr_regions, g->blob, g->len);
	return r ? r : m->volume_set_size(p->meta, g->v->rec.id, g->size);
}

static int switch_extend(struct pool *p, struct pool_volume *v, uint64_t size,
			 char *const *on, size_t nr_on, struct pool_error *err)
{
	uint64_t rs = v->sw.rec.region_size;
	struct switch_growth g = { .v = v };
	struct extent_cut grow = { 0 };
	struct switch_table *next = NULL;
	int r;

	(void)on;
	r = refuse_moving(p, v, "extend it", err);
	if (r)
		return r;
	if (nr_on)
		return pool_fail(err, -EINVAL, "--on does not apply to switch volume '%s': its paths grow where they are",
				 v->rec.name);
	if (size > (uint64_t)INT64_MAX - rs)
		return pool_fail(err, -ERANGE, "the size is too large");
	g.size = (size + rs - 1) / rs * rs;	/* by whole regions */
	g.nr_regions = g.size / rs;
	g.grow = &grow;
	if (g.nr_regions > SWITCH_REGIONS_MAX)
		return pool_fail(err, -E2BIG, "%llu regions are too many (at most %llu)",
				 (unsigned long long)g.nr_regions,
				 (unsigned long long)SWITCH_REGIONS_MAX);
	r = plan_paths(p, v, g.size, &grow, err);
	if (!r && grown_table(switch_table_of(v->served->target), g.nr_regions, &next))
		r = pool_fail(err, -ENOMEM, "out of memory");
	if (!r) {
		g.len = next->nr_words * 8;
		g.blob = malloc(g.len);
		if (!g.blob)
			r = pool_fail(err, -ENOMEM, "out of memory");
		else
			switch_table_export(next, g.blob);
	}
	if (!r)
		r = pool_record(p, "record the new size", record_switch_growth, &g, err);
	if (!r) {
		/* The table covers the new size before the size shows. */
		if (switch_set_table(v->served->target, next))
			pool_volume_failed(v, "out of memory while growing its region table");
		else
			atomic_store(&v->served->size, g.size);
		v->sw.rec.nr_regions = g.nr_regions;
		v->rec.size = g.size;
		pool_cut_publish(p, &grow);	/* the owned paths' new lengths */
		pool_stale_file(p, v->rec.id);
	}
	switch_table_destroy(next);
	free(g.blob);
	free(grow.v);
	return r;
}

/* ---- status --------------------------------------------------------------- */

static void switch_status(struct pool *p, struct pool_volume *v, struct json *j)
{
	uint64_t regions[SWITCH_PATHS_MAX] = { 0 };

	if (v->served)
		switch_table_count(switch_table_of(switch_target(v)), regions);
	json_size(j, "region_size", v->sw.rec.region_size);
	json_u64(j, "region_count", v->sw.rec.nr_regions);
	json_array_begin(j, "paths");
	for (uint32_t i = 0; i < v->sw.rec.nr_paths; i++) {
		const struct switch_path_rec *sp = &v->sw.paths[i];
		struct pool_device *d = pool_device_by_id(p, sp->device);

		json_object_begin(j, NULL);
		json_u64(j, "index", sp->idx);
		json_string(j, "device", d ? d->rec.name : "?");
		json_size(j, "offset", sp->dev_offset - DEVICE_DATA_OFFSET);
		if (v->served) {
			const struct switch_path_stats *st = switch_path_stats(switch_target(v), i);

			json_u64(j, "regions", regions[i]);
			json_u64(j, "reads", atomic_load_explicit(&st->reads, memory_order_relaxed));
			json_u64(j, "writes", atomic_load_explicit(&st->writes, memory_order_relaxed));
			json_size(j, "read_bytes",
				 atomic_load_explicit(&st->read_bytes, memory_order_relaxed));
			json_size(j, "write_bytes",
				 atomic_load_explicit(&st->write_bytes, memory_order_relaxed));
		}
		json_object_end(j);
	}
	json_array_end(j);
	if (pool_move_source_of(p, v) >= 0)
		pool_move_status(p, v, j);
}

static void switch_info(struct pool *p, struct pool_volume *v, struct pool_volume_info *out)
{
	if (pool_move_source_of(p, v) >= 0)
		pool_move_info(v, out);
}

/* The daemon's monitor copies a move and finishes it (pool_move.c). */
static void switch_watch(struct pool *p, struct pool_volume *v)
{
	if (pool_move_source_of(p, v) >= 0)
		pool_move_watch(p, v);
}

/* The paths placed by hand: those that are not one of @v's extents. */
static void switch_placed(struct pool *p, struct pool_volume *v,
			  void (*fn)(void *arg, const struct extent_rec *range), void *arg)
{
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);

	for (uint32_t i = 0; i < v->sw.rec.nr_paths && v->sw.paths; i++) {
		const struct switch_path_rec *sp = &v->sw.paths[i];
		bool owned = false;

		for (size_t k = 0; k < n; k++)
			owned |= e[k].device == sp->device && e[k].dev_offset == sp->dev_offset;
		if (!owned)
			fn(arg, &(struct extent_rec){ v->rec.id, POOL_PLACED_SEQ + i, sp->device,
						      sp->dev_offset, v->rec.size });
	}
}

/*
 * Every path reaches the whole volume; owned ones own exactly that, and a
 * move in flight has one piece for each of them on the device it leaves.
 */
static int switch_check(struct pool *p, struct pool_volume *v, struct pool_check *c,
			struct pool_error *err)
{
	size_t n, pieces = 0, moved = 0;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);
	int64_t from = pool_move_source_of(p, v);

	(void)err;
	if (!v->sw.rec.region_size)
		pool_breach(c, v, "its region size is 0");
	else if (v->sw.rec.nr_regions != switch_nr_regions(v->rec.size, v->sw.rec.region_size))
		pool_breach(c, v, "%llu regions of %llu bytes do not cover its size",
			    (unsigned long long)v->sw.rec.nr_regions,
			    (unsigned long long)v->sw.rec.region_size);
	for (uint32_t i = 0; i < v->sw.rec.nr_paths && v->sw.paths; i++) {
		const struct switch_path_rec *sp = &v->sw.paths[i];
		struct pool_device *d = pool_device_by_id(p, sp->device);

		if (!d)
			pool_breach(c, v, "path %u names device %lld, which the pool does not have",
				    i, (long long)sp->device);
		else if (sp->dev_offset < DEVICE_DATA_OFFSET || sp->dev_offset > d->rec.size ||
			 v->rec.size > d->rec.size - sp->dev_offset)
			pool_breach(c, v, "path %u runs past the end of device '%s'", i, d->rec.name);
	}
	for (size_t i = 0; i < n; i++) {
		if (e[i].length != v->rec.size)
			pool_breach(c, v, "the extent of path %u is %llu bytes, not its size",
				    e[i].seq, (unsigned long long)e[i].length);
		if (e[i].seq >= POOL_MOVE_SEQ)
			pieces++;
		else
			moved += e[i].device == from;
	}
	if (pieces != moved)
		pool_breach(c, v, "a move in flight has %zu places to go to for %zu paths it moves",
			    pieces, moved);
	pool_move_check(p, v, c);
	return 0;
}

struct target_type switch_type = {
	.name = "switch",
	.served = true,
	.build_order = 1,
	.attach = switch_attach,
	.moves_whole = true,
	.build = switch_build,
	.build_over = switch_build_over,
	.record_moved = switch_record_moved,
	.publish_moved = switch_publish_moved,
	.extend = switch_extend,
	.remove = pool_remove_with_logs,
	.check = switch_check,
	.placed = switch_placed,
	.status = switch_status,
	.info = switch_info,
	.watch = switch_watch,
	.release = switch_release,
};
