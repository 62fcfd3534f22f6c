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

static int build_volume(struct daemon *d, const struct volume_rec *rec)
{
	struct target *t;
	struct volume *v;
	int r;

	if (!strcmp(rec->kind, "linear")) {
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
	r = volume_create(rec->id, rec->name, rec->size, t, &v);
	if (r)
		return r;
	r = volset_add(&d->vols, v);
	if (r)
		volume_destroy(v);
	return r;
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
	for (size_t i = 0; i < nr && !r; i++) {
		if (!is_served(&recs[i]))
			continue;
		r = build_volume(d, &recs[i]);
		if (r)
			log_error("cannot load volume '%s': %s", recs[i].name, strerror(-r));
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

int daemon_volume_changed(struct daemon *d, int64_t id)
{
	struct volume *v = served(d, id);
	struct volume_rec rec;
	int r;

	r = store_volume_get_by_id(d->store, id, &rec);
	if (r == -ENOENT) {
		if (v) {
			volset_remove(&d->vols, v);
			volume_destroy(v);
		}
		r = 0;
	} else if (!r && is_served(&rec)) {
		if (!v) {
			r = build_volume(d, &rec);
		} else {
			atomic_store(&v->retired, false);
			if (!strcmp(rec.kind, "linear"))
				r = retable_linear(d, v);
			else if (!strcmp(rec.kind, "switch"))
				r = retable_switch(d, v);
			/* The table covers the new size before the size shows. */
			atomic_store(&v->size, rec.size);
			forget_kernel_attrs(d, id);
		}
	}
	daemon_update_space(d);
	return r;
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
