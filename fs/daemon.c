/*
 * fs/daemon.c: builds the served state from the store, and keeps it in
 * step with the store after every admin change.
 *
 * This is the one place that knows both sides: it reads records with
 * meta/ and turns them into core objects (devices, targets, volumes).
 * Every function here runs on the control thread, or at start-up before
 * any other thread exists.
 */
#include "daemon.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "label.h"
#include "linear.h"
#include "log.h"
#include "rcu.h"
#include "space.h"
#include "store.h"
#include "store_switch.h"
#include "switch.h"
#include "switch_table.h"
#include "thin.h"
#include "thin_pool.h"
#include "thin_port.h"
#include "thin_store.h"
#include "thin_walk.h"
#include "volume.h"

struct device *daemon_device(struct daemon *d, int64_t id)
{
	for (size_t i = 0; i < d->nr_devs; i++)
		if (d->devs[i]->id == id)
			return d->devs[i];
	return NULL;
}

static int open_device(struct daemon *d, const struct device_rec *rec)
{
	struct device_label expect = { .pool = d->pool_uuid, .device = rec->uuid,
				       .size = rec->size };
	struct device **devs;
	struct device *dev;
	char why[160];
	int r;

	r = device_open(rec->path, rec->id, &dev);
	if (r) {
		log_error("raw device '%s' at '%s' cannot be opened: %s",
			  rec->name, rec->path, strerror(-r));
		return -EINVAL;
	}
	r = device_verify(dev, &expect, why, sizeof(why));
	if (r) {
		log_error("raw device '%s' at '%s' %s; refusing to use it",
			  rec->name, rec->path, why);
		device_close(dev);
		return r;
	}
	devs = realloc(d->devs, (d->nr_devs + 1) * sizeof(*devs));
	if (!devs) {
		device_close(dev);
		return -ENOMEM;
	}
	d->devs = devs;
	d->devs[d->nr_devs++] = dev;
	return 0;
}

int daemon_open_devices(struct daemon *d)
{
	struct device_rec *recs;
	size_t nr;
	int r;

	r = store_device_list(d->store, &recs, &nr);
	if (r)
		return r;
	for (size_t i = 0; i < nr && !r; i++)
		r = open_device(d, &recs[i]);
	free(recs);
	return r;
}

int daemon_device_changed(struct daemon *d, int64_t id)
{
	struct device *dev = daemon_device(d, id);
	struct device_rec rec;
	int r;

	r = store_device_get_by_id(d->store, id, &rec);
	if (r == -ENOENT && dev) {
		/* The store refused this while an extent used the device. */
		size_t i = 0;

		while (d->devs[i] != dev)
			i++;
		d->devs[i] = d->devs[--d->nr_devs];
		device_close(dev);
		r = 0;
	} else if (!r && !dev) {
		r = open_device(d, &rec);
	}
	daemon_update_space(d);
	return r == -ENOENT ? 0 : r;
}

void daemon_close_devices(struct daemon *d)
{
	for (size_t i = 0; i < d->nr_devs; i++)
		device_close(d->devs[i]);
	free(d->devs);
	d->devs = NULL;
	d->nr_devs = 0;
}

/* The linear table of volume @id, from its extents.  *segs malloc'ed. */
static int linear_segs(struct daemon *d, int64_t id, struct linear_seg **segs,
		       unsigned int *nr)
{
	struct extent_rec *ext;
	size_t n;
	int r;

	r = store_extents_of_volume(d->store, id, &ext, &n);
	if (r)
		return r;
	*segs = calloc(n ? n : 1, sizeof(**segs));
	if (!*segs) {
		free(ext);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct device *dev = daemon_device(d, ext[i].device);

		if (!dev) {
			log_error("volume %lld uses unknown device %lld",
				  (long long)id, (long long)ext[i].device);
			r = -EUCLEAN;
			break;
		}
		(*segs)[i] = (struct linear_seg){ dev, ext[i].dev_offset, ext[i].length };
	}
	*nr = (unsigned int)n;
	free(ext);
	if (r)
		free(*segs);
	return r;
}

static int build_linear(struct daemon *d, const struct volume_rec *rec,
			struct target **out)
{
	struct linear_seg *segs;
	unsigned int nr;
	int r;

	r = linear_segs(d, rec->id, &segs, &nr);
	if (r)
		return r;
	r = linear_create(segs, nr, out);
	free(segs);
	return r;
}

static int retable_linear(struct daemon *d, struct volume *v)
{
	struct linear_seg *segs;
	unsigned int nr;
	int r;

	r = linear_segs(d, v->id, &segs, &nr);
	if (r)
		return r;
	r = linear_replace(v->target, segs, nr);
	free(segs);
	return r;
}

/* The region table of switch volume @id, as stored.  -EUCLEAN if bad. */
static int switch_table_load(struct daemon *d, const struct switch_rec *sw,
			     struct switch_table **out)
{
	void *blob;
	size_t len;
	int r;

	r = store_switch_table_get(d->store, sw->volume, &blob, &len);
	if (r)
		return r;
	r = switch_table_create(sw->nr_regions, sw->nr_paths, out);
	if (!r) {
		r = switch_table_import(*out, blob, len);
		if (r) {
			log_error("switch volume %lld: its stored region table is corrupt",
				  (long long)sw->volume);
			switch_table_destroy(*out);
		}
	}
	free(blob);
	return r;
}

/* The paths of switch volume @sw->volume on the open devices. */
static int switch_paths(struct daemon *d, const struct switch_rec *sw,
			struct switch_path *paths)
{
	struct switch_path_rec *recs;
	size_t nr;
	int r;

	r = store_switch_paths(d->store, sw->volume, &recs, &nr);
	if (r)
		return r;
	if (nr != sw->nr_paths)
		r = -EUCLEAN;
	for (size_t i = 0; i < nr && !r; i++) {
		paths[i].dev = daemon_device(d, recs[i].device);
		paths[i].dev_off = recs[i].dev_offset;
		if (!paths[i].dev)
			r = -EUCLEAN;
	}
	if (r)
		log_error("switch volume %lld: its paths do not match the pool's devices",
			  (long long)sw->volume);
	free(recs);
	return r;
}

static int build_switch(struct daemon *d, const struct volume_rec *rec,
			struct target **out)
{
	struct switch_path paths[SWITCH_PATHS_MAX];
	struct switch_table *tb;
	struct switch_rec sw;
	int r;

	r = store_switch_get(d->store, rec->id, &sw);
	if (!r && (sw.nr_paths > SWITCH_PATHS_MAX ||
		   sw.nr_regions != switch_nr_regions(rec->size, sw.region_size)))
		r = -EUCLEAN;
	if (!r)
		r = switch_paths(d, &sw, paths);
	if (!r)
		r = switch_table_load(d, &sw, &tb);
	if (r)
		return r;
	return switch_create(paths, sw.nr_paths, sw.region_size, tb, out);
}

/*
 * Publishes the stored table into the live one: after switch-map, only
 * the words that changed are stored, and I/O goes on meanwhile.
 */
static int retable_switch(struct daemon *d, struct volume *v)
{
	struct switch_table *tb;
	struct switch_rec sw;
	int r;

	r = store_switch_get(d->store, v->id, &sw);
	if (!r)
		r = switch_table_load(d, &sw, &tb);
	if (r)
		return r;
	r = switch_set_table(v->target, tb);
	switch_table_destroy(tb);
	return r;
}

struct thin_pool *daemon_pool(struct daemon *d, int64_t id)
{
	for (size_t i = 0; i < DAEMON_POOLS_MAX; i++)
		if (d->pools[i].id == id)
			return atomic_load(&d->pools[i].pool);
	return NULL;
}

static struct daemon_pool *pool_slot(struct daemon *d, int64_t id)
{
	for (size_t i = 0; i < DAEMON_POOLS_MAX; i++)
		if (d->pools[i].id == id)
			return &d->pools[i];
	return NULL;
}

/* The pool's data area, from its extents.  *areas malloc'ed. */
static int pool_areas(struct daemon *d, int64_t id, struct thin_area **areas,
		      unsigned int *nr)
{
	struct linear_seg *segs;
	int r;

	r = linear_segs(d, id, &segs, nr);
	if (r)
		return r;
	*areas = calloc(*nr ? *nr : 1, sizeof(**areas));
	if (!*areas) {
		free(segs);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < *nr; i++)
		(*areas)[i] = (struct thin_area){ segs[i].dev, segs[i].dev_off, segs[i].len };
	free(segs);
	return 0;
}

/*
 * Removing a large volume drops its leaves over several commits; a crash
 * in between leaves leaf rows nothing reaches.  They hold no blocks (counts
 * derive from reachable pages), but they are garbage: delete them before
 * the pool loads.  Costs one walk of the pool's pages.
 */
static int collect_garbage(struct daemon *d, const struct volume_rec *rec)
{
	struct thin_walk w;
	size_t n;
	int r;

	r = thin_walk_load(d->store, rec->id, &w);
	if (r)
		return r;
	n = thin_walk_unreached(&w);
	if (n) {
		log_info("thin pool '%s': deleting %zu map pages no volume reaches",
			 rec->name, n);
		r = thin_walk_gc(d->store, &w);
	}
	thin_walk_release(&w);
	return r;
}

static int open_pool(struct daemon *d, const struct volume_rec *rec)
{
	struct daemon_pool *slot = pool_slot(d, 0);
	struct thin_pool_params params = { .id = rec->id, .name = rec->name };
	struct thin_pool_rec prec;
	struct thin_area *areas;
	struct thin_pool *pool;
	char path[PATH_MAX];
	unsigned int nr;
	int r;

	if (!slot) {
		log_error("cannot run thin pool '%s': %d pools at most", rec->name,
			  DAEMON_POOLS_MAX);
		return -ENOSPC;
	}
	r = store_thin_pool_get(d->store, rec->id, &prec);
	if (!r)
		r = collect_garbage(d, rec);
	if (r)
		return r;
	params.block_size = prec.block_size;
	params.zero = prec.zero;
	params.when_full = prec.wait ? THIN_FULL_WAIT : THIN_FULL_ERROR;
	params.wait_s = prec.wait_seconds;
	params.low_water_pct = prec.low_water;
	r = pool_areas(d, rec->id, &areas, &nr);
	if (r)
		return r;
	snprintf(path, sizeof(path), "%s/pool.db", d->pool_dir);
	r = thin_port_open(path, rec->id, &slot->port);
	if (!r) {
		r = thin_pool_open(&params, areas, nr, &thin_port_ops, slot->port, &pool);
		if (r)
			thin_port_close(slot->port);
	}
	free(areas);
	if (r) {
		log_error("cannot open thin pool '%s': %s", rec->name, strerror(-r));
		return r;
	}
	slot->id = rec->id;
	rcu_publish(slot->pool, pool);
	return 0;
}

static int grow_pool(struct daemon *d, int64_t id)
{
	struct thin_area *areas;
	unsigned int nr;
	int r;

	r = pool_areas(d, id, &areas, &nr);
	if (r)
		return r;
	r = thin_pool_grow(daemon_pool(d, id), areas, nr);
	free(areas);
	return r;
}

static void close_pool(struct daemon_pool *slot)
{
	struct thin_pool *pool = atomic_load(&slot->pool);

	rcu_publish(slot->pool, NULL);
	rcu_wait_readers();	/* statfs may be reading it */
	thin_pool_stop(pool);
	thin_pool_close(pool);
	thin_port_close(slot->port);
	slot->port = NULL;
	slot->id = 0;
}

void daemon_stop_pools(struct daemon *d)
{
	for (size_t i = 0; i < DAEMON_POOLS_MAX; i++)
		if (d->pools[i].id && thin_pool_stop(atomic_load(&d->pools[i].pool)))
			log_error("thin pool %lld: the last commit failed",
				  (long long)d->pools[i].id);
}

void daemon_close_pools(struct daemon *d)
{
	for (size_t i = 0; i < DAEMON_POOLS_MAX; i++) {
		if (!d->pools[i].id)
			continue;
		thin_pool_close(atomic_load(&d->pools[i].pool));
		thin_port_close(d->pools[i].port);
		memset(&d->pools[i], 0, sizeof(d->pools[i]));
	}
}

static struct volume *served(struct daemon *d, int64_t id);
static int attach_origin(struct daemon *d, int64_t id, struct target *t);

/*
 * A thin volume row without a thin row was being created when the daemon
 * died (the volume row commits first, the map with the pool's next
 * commit): the command never answered, so the row goes.
 */
static int build_thin(struct daemon *d, const struct volume_rec *rec,
		      struct target **out)
{
	struct thin_pool *pool;
	struct thin_rec t;
	int r;

	r = store_thin_get(d->store, rec->id, &t);
	if (r == -ENOENT) {
		log_warn("thin volume '%s' was never completed; deleting it", rec->name);
		r = store_volume_delete(d->store, rec->id);
		return r ? r : -ENOENT;
	}
	if (r)
		return r;
	pool = daemon_pool(d, t.pool);
	if (!pool) {
		log_error("thin volume '%s' is in pool %lld, which is not running",
			  rec->name, (long long)t.pool);
		return -EUCLEAN;
	}
	r = thin_create(pool, rec->id, rec->size, true, out);
	if (!r) {
		r = attach_origin(d, rec->id, *out);
		if (r)
			(*out)->ops->destroy(*out);
	}
	return r;
}

/*
 * Gives thin target @t the external origin its store row names, if any: a
 * served volume (which the store keeps from being removed first), or an
 * image file opened here and closed with @t.
 */
static int attach_origin(struct daemon *d, int64_t id, struct target *t)
{
	struct thin_origin_rec o;
	struct linear_seg seg;
	struct target *lt;
	struct volume *v;
	int r;

	r = store_thin_origin_get(d->store, id, &o);
	if (r)
		return r == -ENOENT ? 0 : r;
	if (o.origin_volume) {
		v = served(d, o.origin_volume);
		if (!v) {
			log_error("thin volume %lld: its origin volume %lld is not served",
				  (long long)id, (long long)o.origin_volume);
			return -ENOENT;
		}
		thin_set_origin(t, v->target, atomic_load(&v->size), false, NULL);
		return 0;
	}
	r = device_open(o.origin_path, 0, &seg.dev);
	if (r) {
		log_error("thin volume %lld: cannot open its origin '%s': %s",
			  (long long)id, o.origin_path, strerror(-r));
		return r;
	}
	seg.dev_off = 0;
	seg.len = seg.dev->size;
	r = seg.len ? linear_create(&seg, 1, &lt) : -EINVAL;
	if (r) {
		device_close(seg.dev);
		return r;
	}
	thin_set_origin(t, lt, seg.len, true, seg.dev);
	return 0;
}

static int serve_volume(struct daemon *d, const struct volume_rec *rec,
			struct target *t)
{
	struct volume *v;
	int r;

	r = volume_create(rec->id, rec->name, rec->size, t, &v);
	if (r)
		return r;
	r = volset_add(&d->vols, v);
	if (r)
		volume_destroy(v);
	return r;
}

static int build_volume(struct daemon *d, const struct volume_rec *rec)
{
	struct target *t;
	int r;

	if (!strcmp(rec->kind, "thin")) {
		r = build_thin(d, rec, &t);
		if (r == -ENOENT)
			return 0;
	} else if (!strcmp(rec->kind, "linear")) {
		r = build_linear(d, rec, &t);
	} else if (!strcmp(rec->kind, "switch")) {
		r = build_switch(d, rec, &t);
	} else {
		log_error("volume '%s' has kind '%s', which this build cannot serve",
			  rec->name, rec->kind);
		return -EPROTONOSUPPORT;
	}
	if (r)
		return r;
	return serve_volume(d, rec, t);
}

/* Kinds that are not files in the mount (a thin pool's data area). */
static int is_served(const struct volume_rec *rec)
{
	return strcmp(rec->kind, "thin-pool") != 0;
}

int daemon_load_volumes(struct daemon *d)
{
	struct volume_rec *recs;
	size_t nr;
	int r;

	r = store_volume_list(d->store, &recs, &nr);
	if (r)
		return r;
	for (size_t i = 0; i < nr && !r; i++)
		if (!is_served(&recs[i]))
			r = open_pool(d, &recs[i]);
	for (size_t i = 0; i < nr && !r; i++) {
		if (!is_served(&recs[i]))
			continue;
		r = build_volume(d, &recs[i]);
		if (r)
			log_error("cannot load volume '%s': %s", recs[i].name, strerror(-r));
	}
	for (size_t i = 0; i < DAEMON_POOLS_MAX && !r; i++) {
		if (!d->pools[i].id)
			continue;
		r = thin_pool_start(atomic_load(&d->pools[i].pool));
		if (r)
			log_error("cannot start thin pool %lld: %s",
				  (long long)d->pools[i].id, strerror(-r));
	}
	free(recs);
	daemon_update_space(d);
	return r;
}

static struct volume *served(struct daemon *d, int64_t id)
{
	struct volume *v;

	/* Only this thread changes the set, so @v outlives the section. */
	rcu_read_begin();
	v = volset_find_id(volset_read(&d->vols), id);
	rcu_read_end();
	return v;
}

static void forget_kernel_attrs(struct daemon *d, int64_t id)
{
	if (d->se)
		fuse_lowlevel_notify_inval_inode(d->se, (fuse_ino_t)id + 1, 0, 0);
}

/* The map covers the new size, and is committed, before the size shows. */
static int resize_thin(struct volume *v, uint64_t size)
{
	int r = thin_resize(v->target, size);

	return r ? r : thin_pool_commit(thin_pool_of(v->target));
}

int daemon_volume_changed(struct daemon *d, int64_t id)
{
	struct volume *v = served(d, id);
	struct daemon_pool *slot;
	struct volume_rec rec;
	int r;

	r = store_volume_get_by_id(d->store, id, &rec);
	if (r == -ENOENT) {
		if (v) {
			volset_remove(&d->vols, v);
			volume_destroy(v);
		}
		slot = pool_slot(d, id);
		if (slot)
			close_pool(slot);
		r = 0;
	} else if (!r && !is_served(&rec)) {
		if (!daemon_pool(d, id)) {
			r = open_pool(d, &rec);
			if (!r)
				r = thin_pool_start(daemon_pool(d, id));
		} else {
			r = grow_pool(d, id);
		}
	} else if (!r && is_served(&rec)) {
		if (!v) {
			r = build_volume(d, &rec);
		} else {
			atomic_store(&v->retired, false);
			if (!strcmp(rec.kind, "linear"))
				r = retable_linear(d, v);
			else if (!strcmp(rec.kind, "switch"))
				r = retable_switch(d, v);
			else if (!strcmp(rec.kind, "thin"))
				r = resize_thin(v, rec.size);
			/* The table covers the new size before the size shows. */
			atomic_store(&v->size, rec.size);
			forget_kernel_attrs(d, id);
		}
	}
	daemon_update_space(d);
	return r;
}

int daemon_thin_created(struct daemon *d, int64_t id, int64_t pool_id,
			int64_t origin)
{
	struct thin_pool *pool = daemon_pool(d, pool_id);
	struct volume *o = origin ? served(d, origin) : NULL;
	struct volume_rec rec;
	struct target *t;
	int r;

	if (!pool || (origin && (!o || !target_is_thin(o->target))))
		return -ENOENT;
	r = store_volume_get_by_id(d->store, id, &rec);
	if (r)
		return r;
	if (o)
		r = thin_snapshot(o->target, id, &t);
	else
		r = thin_create(pool, id, rec.size, false, &t);
	if (r)
		return r;
	r = attach_origin(d, id, t);
	if (r) {
		t->ops->destroy(t);
		return r;
	}
	r = thin_pool_commit(pool);
	if (r) {
		t->ops->destroy(t);
		return r;
	}
	return serve_volume(d, &rec, t);
}

int daemon_thin_rollback(struct daemon *d, int64_t id, int64_t snap)
{
	struct volume *v = served(d, id), *s = served(d, snap);
	int r;

	if (!v || !s || !target_is_thin(v->target) || !target_is_thin(s->target))
		return -ENOENT;
	r = volume_retire(v);		/* -EBUSY while open */
	if (r)
		return r;
	r = thin_rollback(v->target, s->target);
	if (!r)
		r = thin_pool_commit(thin_pool_of(v->target));
	atomic_store(&v->retired, false);
	forget_kernel_attrs(d, id);	/* and its cached pages */
	return r;
}

int daemon_volume_removing(struct daemon *d, int64_t id)
{
	struct volume *v = served(d, id);
	int r;

	if (!v)
		return 0;
	r = volume_retire(v);
	if (r || !target_is_thin(v->target))
		return r;
	r = thin_remove(v->target);
	return r ? r : thin_pool_commit(thin_pool_of(v->target));
}

void daemon_update_space(struct daemon *d)
{
	struct device_rec *recs;
	uint64_t total = 0, free_bytes = 0;
	size_t nr;

	if (store_device_list(d->store, &recs, &nr))
		return;
	for (size_t i = 0; i < nr; i++) {
		uint64_t f;

		if (recs[i].size > DEVICE_DATA_OFFSET)
			total += recs[i].size - DEVICE_DATA_OFFSET;
		if (!space_free_bytes(d->store, &recs[i], &f))
			free_bytes += f;
	}
	free(recs);
	atomic_store(&d->space_total, total);
	atomic_store(&d->space_free, free_bytes);
}
