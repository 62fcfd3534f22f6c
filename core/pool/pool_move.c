/*
 * core/pool/pool_move.c: moving volumes off a raw device while they are
 * used (pvmove), on the mirror machinery as LVM does it.
 *
 * A linear volume with extents on the device being emptied gets new
 * pieces elsewhere, as many bytes as it has there, recorded as extents
 * numbered past POOL_MOVE_SEQ (pool_int.h; the number carries the source
 * device).  Its table as it will be after the move (the "view": its
 * extents in order, those on the source replaced by the new pieces) is
 * the second leg of a mirror whose first leg is the table as it is; the
 * volume is reloaded onto that mirror (volume_reload), which writes to
 * both, reads from the first, and rebuilds the second leg in the
 * background from region 0, skipping the regions where both legs are the
 * same bytes.  Once the second leg is in sync, the daemon's monitor
 * finishes: one transaction makes the view the volume's extents, and the
 * volume is reloaded onto a plain linear table of them.
 *
 * Crash safety, at every step: before the pieces are recorded nothing
 * changed; after, the volume opens as the mirror again, its log (POOL/
 * mirrors/<id>.move.log) saying where the rebuild was and which regions
 * were being written, or, lost, a rebuild from the start; the first leg
 * has every acknowledged write all along.  After the finishing
 * transaction the volume opens on its new extents, which had every write
 * since the rebuild passed them.  --abort deletes the pieces and reloads
 * the volume onto its first leg alone.
 *
 * A mirror with a leg on the device has that leg replaced instead
 * (pool_replace_leg's way).  Thin pool data and switch paths are not
 * moved yet: a move that would need them is refused, naming them.
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

#include "json.h"
#include "linear.h"
#include "log.h"
#include "mirror.h"
#include "regfile.h"
#include "volume.h"

/* The device @v is being moved off, or -1. */
int64_t pool_move_source_of(struct pool *p, const struct pool_volume *v)
{
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);

	for (size_t i = 0; i < n; i++)
		if (pool_extent_leg(&e[i]) == POOL_LEG_MOVE)
			return pool_move_source(&e[i]);
	return -1;
}

static int move_log_path(struct pool *p, int64_t id, char *path, size_t len)
{
	if (snprintf(path, len, "%s/mirrors", p->dir) >= (int)len)
		return -ENAMETOOLONG;
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	if (snprintf(path, len, "%s/mirrors/%" PRId64 ".move.log", p->dir, id) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

/*
 * @v's table after the move: its leg-0 extents in order, those on the
 * source device replaced by the move's pieces (and @extra's), in order.
 */
static int move_view(struct pool *p, struct pool_volume *v, const struct extent_rec *extra,
		     size_t nr_extra, struct linear_seg **out, unsigned int *nr,
		     struct pool_error *err)
{
	size_t n, k = 0, next = 0, nr_pieces = 0;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);
	const struct extent_rec **piece = calloc(n + nr_extra + 1, sizeof(*piece));
	struct linear_seg *segs = calloc(2 * (n + nr_extra) + 1, sizeof(*segs));
	const struct pool_device *bad = NULL;
	uint64_t piece_used = 0;
	int r = 0;

	if (!piece || !segs)
		r = pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; !r && i < n + nr_extra; i++) {	/* extents come by seq */
		const struct extent_rec *x = i < n ? &e[i] : &extra[i - n];

		if (pool_extent_leg(x) == POOL_LEG_MOVE)
			piece[nr_pieces++] = x;
	}
	for (size_t i = 0; !r && i < n; i++) {
		const struct extent_rec *x = &e[i];
		struct pool_device *d = pool_device_by_id(p, x->device);
		uint64_t left = x->length;

		if (pool_extent_leg(x) != 0 || x->seq >= POOL_PLACED_SEQ)
			continue;
		if (!nr_pieces || x->device != pool_move_source(piece[0])) {
			if (!d || !d->dev)
				r = -ENODEV, bad = d;
			else
				segs[k++] = (struct linear_seg){ d->dev, x->dev_offset, x->length };
			continue;
		}
		while (!r && left) {	/* the pieces that take this extent's place */
			const struct extent_rec *q = next < nr_pieces ? piece[next] : NULL;
			struct pool_device *qd = q ? pool_device_by_id(p, q->device) : NULL;
			uint64_t take;

			if (!q) {
				r = pool_fail(err, -EUCLEAN, "its move in flight has fewer bytes to go "
					      "to than it moves");
				break;
			}
			if (!qd || !qd->dev) {
				r = -ENODEV, bad = qd;
				break;
			}
			take = q->length - piece_used < left ? q->length - piece_used : left;
			segs[k++] = (struct linear_seg){ qd->dev, q->dev_offset + piece_used, take };
			piece_used += take;
			left -= take;
			if (piece_used == q->length) {
				next++;
				piece_used = 0;
			}
		}
	}
	free(piece);
	if (r == -ENODEV)
		pool_fail(err, r, "a device it is being moved to or from is failed: %s",
			  bad ? bad->failure : "not in the pool");
	if (r) {
		free(segs);
		return r;
	}
	*out = segs;
	*nr = (unsigned int)k;
	return 0;
}

/* Names for the move's legs in the log: "from d0", "to d2". */
static void move_leg_names(struct pool *p, struct pool_volume *v, const struct extent_rec *extra,
			   size_t nr_extra, char *from, char *to, size_t len)
{
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);
	struct pool_device *s = NULL, *d = NULL;

	for (size_t i = 0; i < n + nr_extra && !d; i++) {
		const struct extent_rec *x = i < n ? &e[i] : &extra[i - n];

		if (pool_extent_leg(x) == POOL_LEG_MOVE) {
			s = pool_device_by_id(p, pool_move_source(x));
			d = pool_device_by_id(p, x->device);
		}
	}
	snprintf(from, len, "from %s", s ? s->rec.name : "?");
	snprintf(to, len, "to %s", d ? d->rec.name : "?");
}

/* The mirror that carries the move of @v (leg 0 as it is, leg 1 the view). */
static int move_target(struct pool *p, struct pool_volume *v, const struct extent_rec *extra,
		       size_t nr_extra, bool fresh, struct target **out, struct pool_error *err)
{
	struct target *legs[2] = { NULL, NULL };
	char from_name[POOL_NAME_MAX + 16], to_name[POOL_NAME_MAX + 16];
	const char *names[2] = { from_name, to_name };
	struct linear_seg *segs;
	struct mirror_log *log;
	char path[PATH_MAX];
	uint64_t regions = (v->rec.size + MIRROR_REGION_SIZE - 1) / MIRROR_REGION_SIZE;
	unsigned int nr;
	int fd, r;

	move_leg_names(p, v, extra, nr_extra, from_name, to_name, sizeof(from_name));
	r = pool_volume_segs(p, v, NULL, 0, &segs, &nr, err);
	if (r)
		return r;
	r = linear_create(segs, nr, &legs[0]);
	free(segs);
	if (!r) {
		r = move_view(p, v, extra, nr_extra, &segs, &nr, err);
		if (r) {
			legs[0]->ops->destroy(legs[0]);
			return r;
		}
		r = linear_create(segs, nr, &legs[1]);
		free(segs);
		if (r)
			legs[0]->ops->destroy(legs[0]);
	}
	if (r)
		return pool_fail(err, r, "cannot build its tables: %s", strerror(-r));
	r = move_log_path(p, v->rec.id, path, sizeof(path));
	if (!r && !fresh) {
		r = regfile_open(path, O_RDWR | O_CLOEXEC, 0, &fd);
		if (!r)
			r = mirror_log_open(fd, 2, regions, &log);
		if (r == -ENOENT || r == -EUCLEAN)
			log_warn("volume '%s': the log of its move is %s: the copy starts over",
				 v->rec.name, r == -ENOENT ? "missing" : "damaged");
		if (r == -ENOENT || r == -EUCLEAN)
			fresh = true;
	}
	if (fresh) {
		r = regfile_open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600, &fd);
		if (!r)
			r = mirror_log_create(fd, 2, MIRROR_REGION_SIZE, regions, false, &log);
		if (!r && (r = mirror_log_set_leg(log, 1, MIRROR_LEG_REBUILDING, 0)))
			mirror_log_close(log);
	}
	if (r) {
		legs[0]->ops->destroy(legs[0]);
		legs[1]->ops->destroy(legs[1]);
		return pool_fail(err, r, "cannot open the log of its move %s: %s", path,
				 strerror(-r));
	}
	r = mirror_create(v->rec.name, v->rec.size, legs, names, 2, log, p->sync_rate, out);
	return r ? pool_fail(err, r, "cannot start its move: %s", strerror(-r)) : 0;
}

int pool_move_serve(struct pool *p, struct pool_volume *v, struct pool_error *err)
{
	struct target *t;
	int r = move_target(p, v, NULL, 0, false, &t, err);

	if (!r && (r = pool_volume_serve(v, t)))
		r = pool_fail(err, r, "out of memory");
	return r;
}

/* ---- start ---------------------------------------------------------------- */

struct move_record {
	struct extent_rec *ext;
	size_t nr;
};

static int record_pieces(struct pool *p, void *arg)
{
	const struct move_record *m = arg;
	int r = 0;

	for (size_t i = 0; !r && i < m->nr; i++)
		r = p->meta->ops->extent_insert(p->meta, &m->ext[i]);
	return r;
}

/* Bytes of @v's extents on device @dev. */
static uint64_t bytes_on(struct pool *p, struct pool_volume *v, int64_t dev)
{
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++)
		if (e[i].device == dev && pool_extent_leg(&e[i]) != POOL_LEG_MOVE)
			sum += e[i].length;
	return sum;
}

/* Starts moving linear volume @v off @from, to @to (or any other device). */
static int move_linear(struct pool *p, struct pool_volume *v, struct pool_device *from,
		       struct pool_device *to, struct pool_error *err)
{
	struct pool_device **devs = calloc(p->nr_devs + 1, sizeof(*devs));
	struct move_record m = { NULL, 0 };
	struct target *t, *old;
	size_t nr_devs = 0;
	int r;

	if (!devs)
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < p->nr_devs; i++)
		if (to ? p->devs[i] == to : p->devs[i] != from && p->devs[i]->dev)
			devs[nr_devs++] = p->devs[i];
	r = nr_devs ? pool_allocate(p, v->rec.id, POOL_MOVE_SEQ + ((uint32_t)from->rec.id << 16),
				    bytes_on(p, v, from->rec.id), devs, nr_devs, &m.ext, &m.nr, err) :
		      pool_fail(err, -ENOSPC, "no other device to move to");
	free(devs);
	if (!r && pool_reserve(p, 0, m.nr))
		r = pool_fail(err, -ENOMEM, "out of memory");
	if (!r)
		r = move_target(p, v, m.ext, m.nr, true, &t, err);
	if (!r) {
		r = pool_record(p, "record where it moves to", record_pieces, &m, err);
		if (r)
			t->ops->destroy(t);
	}
	if (r) {
		free(m.ext);
		return r;
	}
	pool_extents_publish(p, m.ext, m.nr);
	free(m.ext);
	old = volume_reload(v->served, t);
	if (old)
		old->ops->destroy(old);
	mirror_start(t);
	log_info("volume '%s': moving off device '%s' to %s", v->rec.name, from->rec.name,
		 to ? to->rec.name : "the other devices");
	return 0;
}

int pool_move(struct pool *p, const struct pool_move_spec *s, unsigned int *started,
	      struct pool_error *err)
{
	struct pool_device *from, *to = NULL;
	char blocked[POOL_ERROR_LEN / 2] = "";
	size_t blen = 0;
	int r = 0;

	*started = 0;
	pool_admin_lock(p);
	from = pool_device_by_name(p, s->device);
	if (!from) {
		r = pool_fail(err, -ENOENT, "no device '%s'", s->device);
		goto out;
	}
	if (s->to && !(to = pool_device_by_name(p, s->to))) {
		r = pool_fail(err, -ENOENT, "no device '%s'", s->to);
		goto out;
	}
	if (to == from) {
		r = pool_fail(err, -EINVAL, "a move goes to another device than '%s'", s->device);
		goto out;
	}
	if (from->rec.id > POOL_MOVE_DEVICE_MAX) {
		r = pool_fail(err, -EOPNOTSUPP, "device '%s' has an id past %d, which a move "
			      "cannot record", s->device, POOL_MOVE_DEVICE_MAX);
		goto out;
	}
	/* What cannot move yet, and what is moving already: refuse it all, named. */
	for (size_t i = 0; !s->abort && i < p->nr_vols; i++) {
		struct pool_volume *v = p->vols[i];
		const char *why;

		if ((s->volume && strcmp(s->volume, v->rec.name)) || !bytes_on(p, v, from->rec.id))
			continue;
		why = !v->type->movable ? v->type->words : !v->served ? "failed" :
		      pool_move_source_of(p, v) >= 0 ? "moving already" : NULL;
		if (why && blen < sizeof(blocked))
			blen += (size_t)snprintf(blocked + blen, sizeof(blocked) - blen, "%s'%s' (%s)",
						 blen ? ", " : "", v->rec.name, why);
	}
	if (blen) {
		r = pool_fail(err, -EOPNOTSUPP, "cannot move off '%s': %s; thin pool data and switch "
			      "paths do not move yet", s->device, blocked);
		goto out;
	}
	for (size_t i = 0; !r && i < p->nr_vols; i++) {
		struct pool_volume *v = p->vols[i];

		if (s->volume && strcmp(s->volume, v->rec.name))
			continue;
		if (s->abort) {
			if (pool_move_source_of(p, v) == from->rec.id) {
				r = pool_move_abort(p, v, err);
				*started += !r;
			}
		} else if (bytes_on(p, v, from->rec.id)) {
			r = pool_volume_legs(p, v) > 1 ?
			    pool_replace_leg_locked(p, v, from, to, err) :
			    move_linear(p, v, from, to, err);
			*started += !r;
		}
	}
	if (!r && !*started)
		r = pool_fail(err, -ENOENT, s->abort ? "nothing is moving off '%s'%s%s" :
			      "nothing to move off '%s'%s%s", s->device,
			      s->volume ? " for volume " : "", s->volume ? s->volume : "");
out:
	pool_admin_unlock(p);
	return r;
}

/* ---- finish, abort ------------------------------------------------------------ */

struct move_end {
	int64_t volume;
	struct extent_rec *ext;		/* the volume's extents after it, or NULL: abort */
	size_t nr;
};

static int record_move_end(struct pool *p, void *arg)
{
	const struct move_end *m = arg;
	int r;

	if (!m->ext)
		return p->meta->ops->extent_delete(p->meta, m->volume, POOL_MOVE_SEQ,
						   POOL_PLACED_SEQ - 1);
	r = p->meta->ops->extent_delete(p->meta, m->volume, 0, POOL_PLACED_SEQ - 1);
	for (size_t i = 0; !r && i < m->nr; i++)
		r = p->meta->ops->extent_insert(p->meta, &m->ext[i]);
	return r;
}

/* @v served by a linear table of its extents (after the record), old target freed. */
static void reload_linear(struct pool *p, struct pool_volume *v)
{
	struct linear_seg *segs;
	struct target *t, *old;
	struct pool_error err;
	unsigned int nr;
	char path[PATH_MAX];

	if (pool_volume_segs(p, v, NULL, 0, &segs, &nr, &err) == 0) {
		if (linear_create(segs, nr, &t) == 0) {
			old = volume_reload(v->served, t);
			if (old)
				old->ops->destroy(old);
		}
		free(segs);
	}
	if (!move_log_path(p, v->rec.id, path, sizeof(path)))
		unlink(path);
}

int pool_move_abort(struct pool *p, struct pool_volume *v, struct pool_error *err)
{
	struct move_end m = { v->rec.id, NULL, 0 };
	struct pool_device *from = pool_device_by_id(p, pool_move_source_of(p, v));
	int r = pool_record(p, "record the end of the move", record_move_end, &m, err);

	if (r)
		return r;
	pool_extents_unpublish(p, v->rec.id, POOL_MOVE_SEQ, POOL_PLACED_SEQ - 1);
	if (v->served)
		reload_linear(p, v);
	log_info("volume '%s': its move off '%s' aborted: it stays where it was",
		 v->rec.name, from ? from->rec.name : "?");
	return 0;
}

/* The view as extents of leg 0, numbered from 0, for the record. */
static int view_extents(struct pool *p, struct pool_volume *v, struct extent_rec **out,
			size_t *nr, struct pool_error *err)
{
	size_t n, k = 0, next = 0;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);
	struct extent_rec *ext = calloc(2 * n + 1, sizeof(*ext));
	uint64_t piece_used = 0;
	int64_t src = pool_move_source_of(p, v);
	const struct extent_rec *pieces = NULL;

	if (!ext)
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n && !pieces; i++)
		if (pool_extent_leg(&e[i]) == POOL_LEG_MOVE)
			pieces = &e[i];
	for (size_t i = 0; i < n; i++) {
		uint64_t left = e[i].length;

		if (pool_extent_leg(&e[i]) != 0 || e[i].seq >= POOL_PLACED_SEQ)
			continue;
		if (e[i].device != src) {
			ext[k] = e[i];
			ext[k].seq = (uint32_t)k;
			k++;
			continue;
		}
		while (left) {
			const struct extent_rec *q = &pieces[next];
			uint64_t take = q->length - piece_used < left ? q->length - piece_used : left;

			ext[k] = (struct extent_rec){ v->rec.id, (uint32_t)k, q->device,
						      q->dev_offset + piece_used, take };
			k++;
			piece_used += take;
			left -= take;
			if (piece_used == q->length) {
				next++;
				piece_used = 0;
			}
		}
	}
	*out = ext;
	*nr = k;
	return 0;
}

void pool_move_watch(struct pool *p, struct pool_volume *v)
{
	struct mirror_status s;
	struct move_end m = { v->rec.id, NULL, 0 };
	struct pool_device *from;
	struct pool_error err;

	if (!v->served || !mirror_is(v->served->target))
		return;
	mirror_status(v->served->target, &s);
	from = pool_device_by_id(p, pool_move_source_of(p, v));
	if (s.leg_state[1] == MIRROR_LEG_FAILED) {	/* as pvmove: the copy failed, abort */
		log_error("volume '%s': its move off '%s' failed (writes to the new place failed): "
			  "aborted, it stays where it was", v->rec.name, from ? from->rec.name : "?");
		if (pool_move_abort(p, v, &err))
			log_error("volume '%s': cannot abort its failed move: %s", v->rec.name,
				  err.msg);
		return;
	}
	if (s.leg_state[1] != MIRROR_LEG_IN_SYNC || s.leg_state[0] != MIRROR_LEG_IN_SYNC)
		return;
	if (view_extents(p, v, &m.ext, &m.nr, &err) ||
	    pool_reserve(p, 0, m.nr) ||
	    pool_record(p, "record the moved volume", record_move_end, &m, &err)) {
		log_error("volume '%s': its move is copied but cannot be recorded: %s (tried again "
			  "in a moment)", v->rec.name, err.msg);
		free(m.ext);
		return;
	}
	pool_extents_unpublish(p, v->rec.id, 0, POOL_PLACED_SEQ - 1);
	pool_extents_publish(p, m.ext, m.nr);
	free(m.ext);
	reload_linear(p, v);
	pool_stale_file(p, v->rec.id);
	log_info("volume '%s': moved off device '%s'", v->rec.name, from ? from->rec.name : "?");
}

void pool_move_status(struct pool *p, struct pool_volume *v, struct json *j)
{
	struct pool_device *from = pool_device_by_id(p, pool_move_source_of(p, v));
	struct mirror_status s = { 0 };

	if (v->served && mirror_is(v->served->target))
		mirror_status(v->served->target, &s);
	json_object_begin(j, "move");
	json_string(j, "from", from ? from->rec.name : "?");
	json_percent(j, "copy_percent", s.sync_done, s.sync_total ? s.sync_total : 1);
	json_object_end(j);
}
