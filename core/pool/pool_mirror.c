/*
 * core/pool/pool_mirror.c: mirrored linear volumes in the pool service
 * (lvcreate --type raid1 -m N, lvconvert --replace).
 *
 * A mirrored volume is a linear volume whose extents are numbered leg by
 * leg (pool_int.h: POOL_LEG_SEQ): the store needs nothing new, and the
 * layout archive, backup and recover carry the legs with the extents.
 * Each leg lies on devices no other leg of the volume uses, so that one
 * lost device costs one leg.  The target is core/target/mirror.h; its
 * write-intent log is POOL/mirrors/<volume id>.log (0600, opened without
 * following symlinks).
 *
 * A new mirror's legs hold whatever their devices held: its log starts
 * with every region dirty, and the mirror's thread copies the first leg
 * to the others in the background (reads meanwhile come from the first
 * leg), as md and LVM sync a new raid1.  The log of a volume not yet
 * recorded has a temporary name, renamed to its id once the volume is;
 * a log that is missing when the pool opens (a crash between the two, or
 * a lost file) is made anew with every region dirty: a full resync, never
 * a leg trusted unsynced.
 *
 * Replacing a leg: the new extents are carved on devices the other legs
 * do not use; the old leg is marked failed in the log first, so that a
 * crash after the store's commit finds it failed, never in sync; then the
 * store swaps the extents in one transaction, and the mirror publishes
 * the new leg and rebuilds it in the background.
 */
#include "pool_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device.h"
#include "json.h"
#include "label.h"
#include "linear.h"
#include "log.h"
#include "mirror.h"
#include "nbd_link.h"
#include "regfile.h"
#include "size.h"
#include "volume.h"

#define MIRROR_DIR	"mirrors"

static const char *const leg_states[] = {
	[MIRROR_LEG_IN_SYNC] = "in-sync",
	[MIRROR_LEG_FAILED] = "failed",
	[MIRROR_LEG_REBUILDING] = "rebuilding",
	[MIRROR_LEG_CATCHING_UP] = "catching-up",
};

/* ---- plan ------------------------------------------------------------------ */

int pool_mirror_plan(struct pool *p, uint64_t size, unsigned int legs, char *const *on,
		     size_t nr_on, struct extent_rec **out, size_t *nr, struct pool_error *err)
{
	struct pool_device **devs, **left;
	struct extent_rec *all = NULL;
	size_t nr_devs, nr_all = 0;
	int r;

	if (legs < 2 || legs > MIRROR_LEGS_MAX)
		return pool_fail(err, -EINVAL, "a mirror has 1 to %u extra copies",
				 MIRROR_LEGS_MAX - 1);
	r = pool_devices_named(p, on, nr_on, &devs, &nr_devs, err);
	if (r)
		return r;
	if (!nr_devs) {		/* all of them */
		free(devs);
		devs = calloc(p->nr_devs + 1, sizeof(*devs));
		if (!devs)
			return pool_fail(err, -ENOMEM, "out of memory");
		for (size_t i = 0; i < p->nr_devs; i++)
			if (p->devs[i]->dev)
				devs[nr_devs++] = p->devs[i];
	}
	left = devs;
	for (unsigned int leg = 0; !r && leg < legs; leg++) {
		struct extent_rec *ext, *grown;
		struct pool_error quiet;
		size_t n, used;

		if (!nr_devs) {
			r = pool_fail(err, -ENOSPC, "a mirror of %u legs needs a device for each leg "
				      "that no other leg uses: only %u found room", legs, leg);
			break;
		}
		/* Each leg on devices of its own: try the fewest devices first. */
		r = -ENOSPC;
		for (size_t take = 1; r == -ENOSPC && take <= nr_devs; take++) {
			r = pool_allocate(p, 0, leg * POOL_LEG_SEQ, size, left, take, &ext, &n,
					  &quiet);
		}
		if (r) {	/* the devices the other legs took are not this one's */
			r = pool_fail(err, r, "leg %u of %u, on devices no other leg uses: %s", leg + 1,
				      legs, quiet.msg);
			break;
		}
		for (used = 0; used < nr_devs; used++) {	/* drop what this leg took */
			bool taken = false;

			for (size_t k = 0; k < n; k++)
				taken |= ext[k].device == left[used]->rec.id;
			if (!taken)
				break;
		}
		left += used;
		nr_devs -= used;
		grown = realloc(all, (nr_all + n + 1) * sizeof(*all));
		if (!grown) {
			free(ext);
			r = pool_fail(err, -ENOMEM, "out of memory");
			break;
		}
		all = grown;
		memcpy(all + nr_all, ext, n * sizeof(*ext));
		nr_all += n;
		free(ext);
	}
	free(devs);
	if (r) {
		free(all);
		return r;
	}
	*out = all;
	*nr = nr_all;
	return 0;
}

/* ---- the log file ------------------------------------------------------------ */

static int log_dir(struct pool *p, char *path, size_t len)
{
	if (snprintf(path, len, "%s/" MIRROR_DIR, p->dir) >= (int)len)
		return -ENAMETOOLONG;
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

static int log_path(struct pool *p, int64_t id, char *path, size_t len)
{
	int r = log_dir(p, path, len);

	if (!r && snprintf(path, len, "%s/" MIRROR_DIR "/%" PRId64 ".log", p->dir, id) >= (int)len)
		r = -ENAMETOOLONG;
	return r;
}

/*
 * Opens @v's log, or makes one with every region dirty (a new volume, or
 * a log that was lost): its path in @path.
 */
static int log_open(struct pool *p, struct pool_volume *v, unsigned int legs,
		    uint64_t regions, char *path, size_t len, struct mirror_log **out,
		    struct pool_error *err)
{
	bool fresh = !v->rec.id;
	int stale;
	int fd, r;

	if (fresh) {
		r = log_dir(p, path, len);
		if (!r && snprintf(path, len, "%s/" MIRROR_DIR "/new-%d-%p.log", p->dir,
				   (int)getpid(), (void *)v) >= (int)len)
			r = -ENAMETOOLONG;
	} else {
		r = log_path(p, v->rec.id, path, len);
	}
	if (r)
		return pool_fail(err, r, "cannot make the directory of mirror logs: %s",
				 strerror(-r));
	if (!fresh) {
		r = regfile_open(path, O_RDWR | O_CLOEXEC, 0, &fd);
		if (!r) {
			r = mirror_log_open(fd, legs, regions, out);
			if (r != -EUCLEAN)
				return r ? pool_fail(err, r, "cannot read its mirror log %s: %s",
						     path, strerror(-r)) : 0;
			log_warn("volume '%s': its mirror log %s is damaged: made anew, every "
				 "region resynced from its first leg", v->rec.name, path);
		} else if (r == -ENOENT) {
			log_warn("volume '%s': its mirror log %s is missing: made anew, every "
				 "region resynced from its first leg", v->rec.name, path);
		} else {
			return pool_fail(err, r, "cannot open its mirror log %s: %s", path,
					 strerror(-r));
		}
	}
	r = regfile_open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600, &fd);
	if (!r)
		r = mirror_log_create(fd, legs, MIRROR_REGION_SIZE, regions, true, out);
	if (r)
		return pool_fail(err, r, "cannot make its mirror log %s: %s", path, strerror(-r));
	/* A lost log: the legs pool.db says were not in sync stay out, never the source. */
	stale = fresh ? 0 : v->rec.stale_legs & ((1 << legs) - 1);
	for (unsigned int leg = 0; stale && stale != (1 << legs) - 1 && leg < legs; leg++) {
		if (!(stale & (1 << leg)))
			continue;
		r = mirror_log_set_leg(*out, leg, MIRROR_LEG_FAILED, 0);
		if (r) {
			mirror_log_close(*out);
			return pool_fail(err, r, "cannot record leg %u as failed in its new mirror log: "
					 "%s", leg, strerror(-r));
		}
		log_warn("volume '%s': leg %u was not in sync when its log was lost (pool.db says "
			 "so): failed; 'mapperctl refresh %s' copies it whole", v->rec.name, leg,
			 v->rec.name);
	}
	return 0;
}

/* ---- serve ------------------------------------------------------------------- */

static const char *leg_device_name(struct pool *p, struct pool_volume *v, unsigned int leg,
				   const struct extent_rec *extra, size_t nr_extra)
{
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);

	for (size_t i = 0; i < n + nr_extra; i++) {
		const struct extent_rec *x = i < n ? &e[i] : &extra[i - n];
		struct pool_device *d;

		if (pool_extent_leg(x) == leg && (d = pool_device_by_id(p, x->device)))
			return d->rec.name;
	}
	return "?";
}

struct target *pool_volume_mirror(const struct pool_volume *v)
{
	struct target *t = v->type->runs_on(v);

	return t && mirror_is(t) ? t : NULL;
}

int pool_mirror_build(struct pool *p, struct pool_volume *v, unsigned int legs,
		      const struct extent_rec *extra, size_t nr_extra, struct target **out,
		      struct pool_error *err)
{
	struct target *leg_targets[MIRROR_LEGS_MAX] = { 0 };
	const char *names[MIRROR_LEGS_MAX];
	uint64_t size = v->rec.size;
	char path[PATH_MAX];
	struct mirror_log *log;
	int r = 0;

	for (unsigned int leg = 0; !r && leg < legs; leg++) {
		struct linear_seg *segs;
		struct pool_error why;
		unsigned int nr;

		names[leg] = leg_device_name(p, v, leg, extra, nr_extra);
		r = pool_leg_segs(p, v, leg, extra, nr_extra, &segs, &nr, &why);
		if (r == -ENODEV) {		/* served degraded */
			log_warn("volume '%s': leg %u unavailable: %s", v->rec.name, leg, why.msg);
			r = 0;
			continue;
		}
		if (r) {
			*err = why;
			break;
		}
		r = linear_create(segs, nr, &leg_targets[leg]);
		free(segs);
		if (r)
			r = pool_fail(err, r, "cannot build leg %u: %s", leg, strerror(-r));
	}
	if (!r)
		r = log_open(p, v, legs, (size + MIRROR_REGION_SIZE - 1) / MIRROR_REGION_SIZE, path,
			     sizeof(path), &log, err);
	if (!r && !v->rec.id) {		/* named by its id once recorded */
		free(v->mirror.new_log);
		v->mirror.new_log = strdup(path);
		if (!v->mirror.new_log) {
			mirror_log_close(log);
			unlink(path);
			r = pool_fail(err, -ENOMEM, "out of memory");
		}
	}
	if (r) {
		for (unsigned int leg = 0; leg < legs; leg++)
			if (leg_targets[leg])
				leg_targets[leg]->ops->destroy(leg_targets[leg]);
		return r;
	}
	r = mirror_create(v->rec.name, size, leg_targets, names, legs, log, p->sync_rate, out);
	if (r == -ENODEV)
		return pool_fail(err, r, "no leg of the mirror is in sync and available");
	if (r)
		return pool_fail(err, r, "cannot start its mirror: %s", strerror(-r));
	return 0;
}

int pool_mirror_serve(struct pool *p, struct pool_volume *v, unsigned int legs,
		      const struct extent_rec *extra, size_t nr_extra, struct pool_error *err)
{
	struct target *t;
	int r = pool_mirror_build(p, v, legs, extra, nr_extra, &t, err);

	if (r)
		return r;
	r = pool_volume_serve(v, t);
	return r ? pool_fail(err, r, "out of memory") : 0;
}

void pool_mirror_recorded(struct pool *p, struct pool_volume *v)
{
	char path[PATH_MAX];

	if (!v->mirror.new_log)
		return;
	if (log_path(p, v->rec.id, path, sizeof(path)) || rename(v->mirror.new_log, path))
		log_warn("volume '%s': cannot name its mirror log %s: %s (the next start "
			 "resyncs it whole)", v->rec.name, path, strerror(errno));
	free(v->mirror.new_log);
	v->mirror.new_log = NULL;
}

void pool_mirror_release(struct pool_volume *v)
{
	if (v->mirror.new_log)
		unlink(v->mirror.new_log);	/* never recorded */
	free(v->mirror.new_log);
	v->mirror.new_log = NULL;
}

void pool_mirror_forget_log(struct pool *p, int64_t id)
{
	char path[PATH_MAX];

	if (!log_path(p, id, path, sizeof(path)) && unlink(path) && errno != ENOENT)
		log_warn("cannot delete mirror log %s: %s", path, strerror(errno));
	if (snprintf(path, sizeof(path), "%s/" MIRROR_DIR "/%" PRId64 ".move.log", p->dir, id) <
	    (int)sizeof(path))
		unlink(path);
}

void pool_set_sync_rate(struct pool *p, uint64_t bytes_per_s)
{
	pool_admin_lock(p);
	p->sync_rate = bytes_per_s;
	for (size_t i = 0; i < p->nr_vols; i++) {
		struct pool_volume *v = p->vols[i];

		if (pool_volume_mirror(v))
			mirror_set_rate(pool_volume_mirror(v), bytes_per_s);
	}
	pool_admin_unlock(p);
}

/* ---- extend ------------------------------------------------------------------- */

struct mirror_growth {
	int64_t volume;
	uint64_t size;
	struct extent_rec *ext;
	size_t nr;
};

static int record_mirror_growth(struct pool *p, void *arg)
{
	const struct mirror_growth *g = arg;
	int r = 0;

	for (size_t i = 0; !r && i < g->nr; i++)
		r = p->meta->ops->extent_insert(p->meta, &g->ext[i]);
	return r ? r : p->meta->ops->volume_set_size(p->meta, g->volume, g->size);
}

int pool_mirror_extend(struct pool *p, struct pool_volume *v, unsigned int legs,
		       uint64_t size, struct pool_error *err)
{
	struct linear_table *tb[MIRROR_LEGS_MAX] = { 0 };
	struct mirror_growth g = { v->rec.id, size, NULL, 0 };
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);
	int r = 0;

	for (unsigned int leg = 0; !r && leg < legs; leg++) {
		struct pool_device *devs[MIRROR_LEGS_MAX * 8];
		struct extent_rec *ext, *grown;
		size_t nr_devs = 0, nr;
		uint32_t seq = leg * POOL_LEG_SEQ;
		uint64_t prefer = UINT64_MAX;

		/* on the devices the leg uses already, last one first */
		for (size_t i = n; i-- > 0;) {
			struct pool_device *d = pool_device_by_id(p, e[i].device);
			bool seen = false;

			if (pool_extent_leg(&e[i]) != leg || !d)
				continue;
			if (seq == leg * POOL_LEG_SEQ) {
				seq = e[i].seq + 1;
				prefer = e[i].dev_offset + e[i].length;
			}
			for (size_t k = 0; k < nr_devs; k++)
				seen |= devs[k] == d;
			if (!seen && nr_devs < sizeof(devs) / sizeof(devs[0]))
				devs[nr_devs++] = d;
		}
		r = pool_allocate_after(p, v->rec.id, seq, size - v->rec.size, devs, nr_devs,
					prefer, 1, &ext, &nr, err);
		if (r) {
			char msg[POOL_ERROR_LEN];

			snprintf(msg, sizeof(msg), "%s", err->msg);
			r = pool_fail(err, r, "leg %u grows on its own devices only: %s", leg, msg);
			break;
		}
		grown = realloc(g.ext, (g.nr + nr + 1) * sizeof(*g.ext));
		if (!grown) {
			free(ext);
			r = pool_fail(err, -ENOMEM, "out of memory");
			break;
		}
		g.ext = grown;
		memcpy(g.ext + g.nr, ext, nr * sizeof(*ext));
		g.nr += nr;
		free(ext);
	}
	for (unsigned int leg = 0; !r && leg < legs; leg++) {
		struct linear_seg *segs;
		unsigned int nr;

		if (!mirror_leg(pool_volume_mirror(v), leg))
			continue;		/* missing: nothing to publish into */
		r = pool_leg_segs(p, v, leg, g.ext, g.nr, &segs, &nr, err);
		if (!r) {
			r = linear_table_new(segs, nr, &tb[leg]);
			free(segs);
			if (r)
				r = pool_fail(err, r, "out of memory");
		}
	}
	if (!r && pool_reserve(p, 0, g.nr))
		r = pool_fail(err, -ENOMEM, "out of memory");
	if (!r)
		r = pool_record(p, "record the new size", record_mirror_growth, &g, err);
	if (r) {
		for (unsigned int leg = 0; leg < legs; leg++)
			linear_table_free(tb[leg]);
		free(g.ext);
		return r;
	}
	/* Every leg's table, then the log, cover the new size before the size shows. */
	for (unsigned int leg = 0; leg < legs; leg++)
		if (tb[leg])
			linear_publish(mirror_leg(pool_volume_mirror(v), leg), tb[leg]);
	r = mirror_grow(pool_volume_mirror(v), size);
	if (r)
		log_error("volume '%s': its mirror log cannot grow: %s; writes past %llu bytes fail",
			  v->rec.name, strerror(-r), (unsigned long long)v->rec.size);
	else if (v->served)
		atomic_store(&v->served->size, size);
	pool_stale_file(p, v->rec.id);
	pool_extents_publish(p, g.ext, g.nr);
	if (!r)
		v->rec.size = size;
	free(g.ext);
	return 0;
}

/* ---- replace ------------------------------------------------------------------- */

struct leg_swap {
	int64_t volume;
	unsigned int leg;
	struct extent_rec *ext;
	size_t nr;
};

static int record_leg_swap(struct pool *p, void *arg)
{
	const struct leg_swap *s = arg;
	int r = p->meta->ops->extent_delete(p->meta, s->volume, s->leg * POOL_LEG_SEQ,
					    (s->leg + 1) * POOL_LEG_SEQ - 1);

	for (size_t i = 0; !r && i < s->nr; i++)
		r = p->meta->ops->extent_insert(p->meta, &s->ext[i]);
	return r;
}

/* The leg of @v that uses device @d, or -1. */
static int leg_on(struct pool *p, struct pool_volume *v, const struct pool_device *d)
{
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);

	for (size_t i = 0; i < n; i++)
		if (e[i].device == d->rec.id)
			return (int)pool_extent_leg(&e[i]);
	return -1;
}

int pool_replace_leg_locked(struct pool *p, struct pool_volume *v, struct pool_device *from,
			    struct pool_device *to, struct pool_error *err)
{
	struct pool_device **devs = calloc(p->nr_devs + 1, sizeof(*devs));
	struct leg_swap s = { 0 };
	struct target *leg_target = NULL;
	struct linear_seg *segs = NULL;
	size_t nr_devs = 0;
	int leg = leg_on(p, v, from), r = 0;

	if (!devs)
		return pool_fail(err, -ENOMEM, "out of memory");
	if (pool_volume_legs(p, v) < 2 || !pool_volume_mirror(v))
		r = pool_fail(err, -EINVAL, "volume '%s' is not a served mirror%s", v->rec.name,
			      v->failure ? " (it is failed: see 'mapperctl status')" : "");
	else if (leg < 0)
		r = pool_fail(err, -EINVAL, "no leg of volume '%s' is on device '%s'", v->rec.name,
			      from->rec.name);
	else if (to == from)
		r = pool_fail(err, -EINVAL, "leg %d of '%s' is on '%s' already: replace it onto "
			      "another device, or 'mapperctl refresh %s' if its device answers again",
			      leg, v->rec.name, from->rec.name, v->rec.name);
	else if (to && leg_on(p, v, to) >= 0 && leg_on(p, v, to) != leg)
		r = pool_fail(err, -EINVAL, "device '%s' holds another leg of volume '%s': "
			      "a leg goes on devices no other leg uses", to->rec.name, v->rec.name);
	/* The new leg: on @to, or on devices no leg uses (the old one's excepted). */
	for (size_t i = 0; !r && i < p->nr_devs; i++) {
		struct pool_device *d = p->devs[i];

		if (to ? d == to : d != from && d->dev && leg_on(p, v, d) < 0)
			devs[nr_devs++] = d;
	}
	if (!r && !nr_devs)
		r = pool_fail(err, -ENOSPC, "no device that no other leg of '%s' uses to put "
			      "leg %d on", v->rec.name, leg);
	s.volume = v->rec.id;
	s.leg = (unsigned int)leg;
	if (!r)
		r = pool_allocate(p, v->rec.id, s.leg * POOL_LEG_SEQ, v->rec.size, devs, nr_devs,
				  &s.ext, &s.nr, err);
	free(devs);
	if (!r)
		r = pool_reserve(p, 0, s.nr) ? pool_fail(err, -ENOMEM, "out of memory") : 0;
	if (!r) {
		segs = calloc(s.nr + 1, sizeof(*segs));
		if (!segs)
			r = pool_fail(err, -ENOMEM, "out of memory");
		for (size_t i = 0; !r && i < s.nr; i++) {
			struct pool_device *d = pool_device_by_id(p, s.ext[i].device);

			segs[i] = (struct linear_seg){ d->dev, s.ext[i].dev_offset, s.ext[i].length };
		}
		if (!r && (r = linear_create(segs, (unsigned int)s.nr, &leg_target)))
			r = pool_fail(err, r, "cannot build the new leg: %s", strerror(-r));
	}
	/* The old leg is failed in the log before the store forgets it. */
	if (!r && (r = mirror_retire_leg(pool_volume_mirror(v), s.leg, "being replaced")))
		r = pool_fail(err, r, r == -EBUSY ?
			      "leg %u on '%s' is the only one in sync: replace another" :
			      "cannot record leg %u as failed in the mirror log", s.leg,
			      from->rec.name);
	if (!r)
		r = pool_record(p, "record the new leg", record_leg_swap, &s, err);
	if (r) {
		if (leg_target)
			leg_target->ops->destroy(leg_target);
		goto out;
	}
	pool_extents_unpublish(p, v->rec.id, s.leg * POOL_LEG_SEQ, (s.leg + 1) * POOL_LEG_SEQ - 1);
	pool_extents_publish(p, s.ext, s.nr);
	{
		struct pool_device *d = pool_device_by_id(p, s.ext[0].device);

		r = mirror_replace_leg(pool_volume_mirror(v), s.leg, leg_target, d ? d->rec.name : "?");
		if (r)
			r = pool_fail(err, r, "the new leg is recorded but its rebuild could not be "
				      "recorded in the mirror log: %s", strerror(-r));
		else
			log_info("volume '%s': leg %d moved from '%s' to '%s', rebuilding",
				 v->rec.name, leg, from->rec.name, d ? d->rec.name : "?");
	}
out:
	free(segs);
	free(s.ext);
	return r;
}

int pool_replace_leg(struct pool *p, const char *name, const char *leg_device,
		     const char *to_device, struct pool_error *err)
{
	struct pool_volume *v;
	struct pool_device *from, *to;
	int r;

	pool_admin_lock(p);
	v = pool_volume_by_name(p, name);
	from = pool_device_by_name(p, leg_device);
	to = pool_device_by_name(p, to_device);
	if (!v)
		r = pool_fail(err, -ENOENT, "no volume '%s'", name);
	else if (!from || !to)
		r = pool_fail(err, -ENOENT, "no device '%s'", from ? to_device : leg_device);
	else
		r = pool_replace_leg_locked(p, v, from, to, err);
	pool_admin_unlock(p);
	return r;
}

/* ---- stale legs, kept in pool.db too ------------------------------------------------ */

static int record_stale_legs(struct pool *p, void *arg)
{
	return p->meta->ops->volume_update(p->meta, arg);
}

static struct log_limit stale_unrecorded;

void pool_mirror_note_stale(struct pool *p, struct pool_volume *v)
{
	struct target *m = pool_volume_mirror(v);
	unsigned int legs = pool_volume_legs(p, v);
	struct mirror_status s;
	struct volume_rec row;
	struct pool_error err;
	char list[MIRROR_LEGS_MAX * 2 + 1];
	uint8_t stale = 0;
	size_t len = 0;

	if (!m || legs < 2)
		return;
	mirror_status(m, &s);
	for (unsigned int leg = 0; leg < s.nr_legs; leg++)
		if (s.leg_state[leg] != MIRROR_LEG_IN_SYNC)
			stale |= (uint8_t)(1u << leg);
	if (stale == v->rec.stale_legs)
		return;
	row = v->rec;
	row.stale_legs = stale;
	if (pool_record(p, "record which legs are not in sync", record_stale_legs, &row, &err)) {
		log_error_limited(&stale_unrecorded, "volume '%s': %s (tried again in a moment)",
				 v->rec.name, err.msg);
		return;
	}
	v->rec.stale_legs = stale;
	for (unsigned int leg = 0; leg < s.nr_legs; leg++)
		if (stale & (1u << leg))
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%u", len ? " " : "",
						leg);
	log_info("volume '%s': legs not in sync as pool.db records them: %s", v->rec.name,
		 len ? list : "none");
}

/* ---- check ---------------------------------------------------------------------- */

/* A mirror's legs share no device: one lost device costs one leg. */
static void check_legs_apart(struct pool *p, struct pool_volume *v, struct pool_check *c)
{
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);

	for (size_t i = 0; i < n; i++)
		for (size_t k = i + 1; k < n; k++)
			if (e[i].device == e[k].device &&
			    pool_extent_leg(&e[i]) != pool_extent_leg(&e[k]) &&
			    pool_extent_leg(&e[i]) != POOL_LEG_MOVE &&
			    pool_extent_leg(&e[k]) != POOL_LEG_MOVE) {
				struct pool_device *d = pool_device_by_id(p, e[i].device);

				pool_breach(c, v, "its legs %u and %u share device '%s'",
					    pool_extent_leg(&e[i]), pool_extent_leg(&e[k]),
					    d ? d->rec.name : "?");
				return;
			}
}

void pool_mirror_check(struct pool *p, struct pool_volume *v, unsigned int legs,
		       struct pool_check *c)
{
	char path[PATH_MAX];
	uint64_t dirty;
	int fd, r;

	check_legs_apart(p, v, c);
	if (pool_volume_mirror(v)) {
		struct mirror_status s;

		mirror_status(pool_volume_mirror(v), &s);
		for (unsigned int leg = 0; leg < legs; leg++)
			if (s.leg_state[leg] != MIRROR_LEG_IN_SYNC)
				pool_summary(c, "mirror '%s': leg %u %s%s%s", v->rec.name, leg,
					     leg_states[s.leg_state[leg] <= 3 ? s.leg_state[leg] : 1],
					     s.leg_state[leg] == MIRROR_LEG_FAILED ? ": " : "",
					     s.leg_state[leg] == MIRROR_LEG_FAILED ? s.why[leg] : "");
	}
	/* The log as it is on disk, read only: what the next start will find. */
	r = log_path(p, v->rec.id, path, sizeof(path));
	if (!r)
		r = regfile_open(path, O_RDONLY | O_CLOEXEC, 0, &fd);
	if (!r) {
		r = mirror_log_inspect(fd, legs, &dirty);
		close(fd);
	}
	if (!r && dirty)
		pool_summary(c, "mirror '%s': %llu region(s) marked in its write-intent log", v->rec.name,
			     (unsigned long long)dirty);
	else if (r)
		pool_summary(c, "mirror '%s': its write-intent log %s is %s: the next start makes it "
			     "anew and resyncs every region from the first leg", v->rec.name, path,
			     r == -ENOENT ? "missing" : r == -EUCLEAN ? "damaged" : strerror(-r));
}

/* ---- refresh ------------------------------------------------------------------- */

/*
 * Leg @leg of @v, missing when the mirror was built, gets its target if
 * its devices are open now (`mapperctl reload` brought them back).
 */
static int attach_leg(struct pool *p, struct pool_volume *v, unsigned int leg)
{
	struct target *t;
	struct linear_seg *segs;
	struct pool_error why;
	unsigned int nr;
	int r = pool_leg_segs(p, v, leg, NULL, 0, &segs, &nr, &why);

	if (r)
		return r;
	r = linear_create(segs, nr, &t);
	free(segs);
	return r ? r : mirror_attach_leg(pool_volume_mirror(v), leg, t);
}

/*
 * Whether leg @leg of @v sits on an NBD device whose link is lost (its
 * server away, or serving another disk: nbd_link.h) and stays lost when
 * tried now: taking it back would only fail it again at the first write
 * of the resync.  @why names the device and the reason.  Blocks up to a
 * second per such device.
 */
static bool leg_unreachable(struct pool *p, struct pool_volume *v, unsigned int leg,
			    char *why, size_t len)
{
	struct linear_seg *segs;
	struct pool_error e;
	unsigned int nr;
	bool lost = false;

	if (pool_leg_segs(p, v, leg, NULL, 0, &segs, &nr, &e))
		return false;		/* not open: attach_leg says so */
	for (unsigned int i = 0; i < nr && !lost; i++)
		for (size_t d = 0; d < p->nr_devs && !lost; d++) {
			char reason[200];

			if (p->devs[d]->dev != segs[i].dev || !segs[i].dev->nbd ||
			    !pool_device_reconnecting(p->devs[d], reason, sizeof(reason)) ||
			    nbd_link_probe(segs[i].dev->nbd) ||
			    !pool_device_reconnecting(p->devs[d], reason, sizeof(reason)))
				continue;
			lost = true;
			snprintf(why, len, "its device '%s' is reconnecting: %s",
				 p->devs[d]->rec.name, reason);
		}
	free(segs);
	return lost;
}

int pool_refresh(struct pool *p, const char *name, unsigned int *readded,
		 struct pool_error *err)
{
	struct mirror_status st = { .nr_legs = 0 };
	struct pool_volume *v;
	unsigned int legs, missing = 0;
	char why[300];
	int r = 0;

	*readded = 0;
	pool_admin_lock(p);
	v = pool_volume_by_name(p, name);
	legs = v ? pool_volume_legs(p, v) : 0;
	if (!v)
		r = pool_fail(err, -ENOENT, "no volume '%s'", name);
	else if (legs < 2 || !pool_volume_mirror(v))
		r = pool_fail(err, -EINVAL, "volume '%s' is not a served mirror", name);
	if (!r)
		mirror_status(pool_volume_mirror(v), &st);
	for (unsigned int leg = 0; !r && leg < legs; leg++) {
		int rl;

		if (leg < st.nr_legs && st.leg_state[leg] == MIRROR_LEG_FAILED &&
		    leg_unreachable(p, v, leg, why, sizeof(why))) {
			r = pool_fail(err, -EHOSTUNREACH, "leg %u of '%s' is not taken back: %s",
				      leg, name, why);
			break;
		}
		rl = mirror_readd_leg(pool_volume_mirror(v), leg);

		if (rl == -ENODEV && !attach_leg(p, v, leg))	/* its device opened since */
			rl = mirror_readd_leg(pool_volume_mirror(v), leg);

		if (rl == -EALREADY)
			continue;
		if (rl == -ENODEV) {
			missing++;
			continue;
		}
		if (rl)
			r = pool_fail(err, rl, "cannot record leg %u's return in the mirror log: %s",
				      leg, strerror(-rl));
		else
			++*readded;
		if (!rl)
			log_info("volume '%s': leg %u taken back, catching up", name, leg);
	}
	if (!r && missing && !*readded)
		r = pool_fail(err, -ENODEV, "the failed leg(s) of '%s' have no device open: bring "
			      "the device back ('mapperctl reload' opens it), or 'mapperctl replace' "
			      "them", name);
	pool_admin_unlock(p);
	return r;
}

/* ---- report -------------------------------------------------------------------- */

/* A leg failed, or being rebuilt or catching up after one: fewer copies than legs. */
static bool degraded(const struct mirror_status *s)
{
	for (unsigned int i = 0; i < s->nr_legs; i++)
		if (s->leg_state[i] != MIRROR_LEG_IN_SYNC)
			return true;
	return false;
}


void pool_mirror_status(struct pool *p, struct pool_volume *v, unsigned int legs,
			struct json *j)
{
	struct mirror_status s = { 0 };
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);

	struct target *m = pool_volume_mirror(v);

	if (m)
		mirror_status(m, &s);
	json_object_begin(j, "mirror");
	json_u64(j, "legs", legs);
	json_size(j, "region_size", MIRROR_REGION_SIZE);
	json_percent(j, "sync_percent", s.sync_done, s.sync_total ? s.sync_total : 1);
	json_u64(j, "dirty_regions", s.dirty);
	json_u64(j, "resynced_regions", s.resynced);
	if (s.stall[0])
		json_string(j, "copy_stalled", s.stall);
	json_bool(j, "degraded", !m || degraded(&s));
	json_array_begin(j, "leg_list");
	for (unsigned int leg = 0; leg < legs; leg++) {
		json_object_begin(j, NULL);
		json_u64(j, "leg", leg);
		json_string(j, "state", m ? leg_states[s.leg_state[leg] <= 3 ?
							  s.leg_state[leg] : 1] : "failed");
		if (m && s.leg_state[leg] == MIRROR_LEG_FAILED)
			json_string(j, "reason", s.why[leg]);
		json_array_begin(j, "segments");
		for (size_t i = 0; i < n; i++) {
			struct pool_device *d = pool_device_by_id(p, e[i].device);

			if (pool_extent_leg(&e[i]) != leg)
				continue;
			json_object_begin(j, NULL);
			json_string(j, "device", d ? d->rec.name : "?");
			json_size(j, "offset", e[i].dev_offset - DEVICE_DATA_OFFSET);
			json_size(j, "length", e[i].length);
			json_object_end(j);
		}
		json_array_end(j);
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
}

bool pool_volume_degraded(struct pool *p, struct pool_volume *v)
{
	struct mirror_status s;

	if (!pool_volume_mirror(v) || pool_volume_legs(p, v) < 2)
		return false;
	mirror_status(pool_volume_mirror(v), &s);
	return degraded(&s);
}

void pool_mirror_info(struct pool_volume *v, unsigned int legs, struct pool_volume_info *out)
{
	struct mirror_status s;

	out->legs = legs;
	if (!pool_volume_mirror(v))
		return;
	mirror_status(pool_volume_mirror(v), &s);
	out->sync_pct = (int32_t)(s.sync_total ? s.sync_done * 10000 / s.sync_total : 10000);
	if (!degraded(&s))
		return;
	out->condition = "degraded";
	for (unsigned int leg = 0; leg < s.nr_legs; leg++)
		if (s.leg_state[leg] != MIRROR_LEG_IN_SYNC) {
			snprintf(out->condition_why, sizeof(out->condition_why), "leg %u %s%s%s", leg,
				 leg_states[s.leg_state[leg] <= 3 ? s.leg_state[leg] : 1],
				 s.leg_state[leg] == MIRROR_LEG_FAILED ? ": " : "",
				 s.leg_state[leg] == MIRROR_LEG_FAILED ? s.why[leg] : "");
			break;
		}
}
