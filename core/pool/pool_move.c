/*
 * core/pool/pool_move.c: moving volumes off a raw device while they are
 * used (pvmove), on the mirror machinery as LVM does it.
 *
 * A volume with extents on the device being emptied gets new pieces
 * elsewhere, as many bytes as it has there, recorded as extents numbered
 * past POOL_MOVE_SEQ (pool_int.h; the number carries the source device).
 * Its table as it will be after the move (its extents in order, those on
 * the source replaced by the new pieces) is the second leg of a mirror
 * whose first leg is the table as it is; the volume is reloaded onto
 * that mirror (volume_reload), which writes to both, reads from the
 * first, and rebuilds the second leg in the background from region 0,
 * skipping the regions where both legs are the same bytes.  Once the
 * second leg is in sync, the daemon's monitor finishes: one transaction
 * makes the new table the volume's extents, and the volume is reloaded
 * onto a plain table of them.
 *
 * What is kind-specific is only the table: each kind that moves builds
 * its target over a list of extents (target_type.build_over), and this
 * file hands it the extents as they are and as they will be.  A linear
 * volume gives a linear target; a striped one a stripe target, its
 * extents carrying their stripe in their seq, so the mirror's legs are
 * two stripe tables that differ in one stripe.  Where the pieces go is
 * chosen here: a linear volume's on --to or any other device, in as many
 * pieces as free space gives; a striped volume's, stripe by stripe, each
 * on one device (--to, or the first with room) that none of its other
 * stripes uses, as create places them, so the stripes stay apart and
 * check's "stripes share a device" stays true; --to a device of another
 * stripe is refused.  A switch volume's (moves_whole: a path reaches the
 * volume's size in one run) go extent by extent, each whole in one free
 * range of --to or of the first device that has one (plan_whole); its
 * legs are two switch targets over one region table, its paths' places
 * taken from the extents (pool_switch.c says why switch-map waits
 * meanwhile), and the finishing transaction rewrites its path rows too
 * (record_moved).  A kind gets moves by having build_over, and its build
 * and watch hooks serving the move (pool_move_serve) and finishing it
 * (pool_move_watch).
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
 * (pool_replace_leg's way).  Kinds without build_over are not moved
 * yet, nor what was placed by hand (a switch path given as DEVICE:OFFSET:
 * it owns no extent, its place was its creator's choice, and other paths
 * may share it): a move that would need them is refused, naming them.
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
#include "log.h"
#include "mirror.h"
#include "regfile.h"
#include "size.h"
#include "volume.h"

int pool_remove_with_logs(struct pool *p, struct pool_volume *v, struct pool_error *err)
{
	int64_t id = v->rec.id;
	bool logged = pool_volume_legs(p, v) > 1 || pool_move_source_of(p, v) >= 0;
	int r = pool_remove_records(p, v, err);

	if (!r && logged)
		pool_mirror_forget_log(p, id);
	return r;
}

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

/* Whether @x is one of the extents a volume is served by (not a piece). */
static bool as_is_extent(const struct extent_rec *x)
{
	return pool_extent_leg(x) == 0 && x->seq < POOL_MOVE_SEQ;
}

static uint32_t stripe_of(const struct extent_rec *x)
{
	return x->seq >> STRIPE_SEQ_SHIFT;
}

/* @v's table as it is: its extents but the move's pieces, in a malloc'ed *out. */
static int as_is(struct pool *p, struct pool_volume *v, struct extent_rec **out, size_t *nr,
		 struct pool_error *err)
{
	size_t n, k = 0;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);
	struct extent_rec *ext = calloc(n + 1, sizeof(*ext));

	if (!ext)
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		if (as_is_extent(&e[i]))
			ext[k++] = e[i];
	*out = ext;
	*nr = k;
	return 0;
}

/*
 * @v's table after the move, as the extents it will have (numbered from
 * 0 in each stripe, as the record after the move has them): its extents
 * in order, those on the source device replaced by the move's pieces
 * (@v's and @extra's), in order.  The pieces of each stripe add up to its
 * bytes on the source and come in the stripes' order, so a stripe's bytes
 * go to its own pieces.  *out malloc'ed.
 */
static int as_will_be(struct pool *p, struct pool_volume *v, const struct extent_rec *extra,
		      size_t nr_extra, struct extent_rec **out, size_t *nr, struct pool_error *err)
{
	size_t n, k = 0, next = 0, nr_pieces = 0;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);
	const struct extent_rec **piece = calloc(n + nr_extra + 1, sizeof(*piece));
	struct extent_rec *ext = calloc(2 * (n + nr_extra) + 1, sizeof(*ext));
	uint64_t piece_used = 0;
	uint32_t stripe = 0, j = 0;
	int64_t src;
	int r = 0;

	if (!piece || !ext)
		r = pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; !r && i < n + nr_extra; i++) {	/* extents come by seq */
		const struct extent_rec *x = i < n ? &e[i] : &extra[i - n];

		if (pool_extent_leg(x) == POOL_LEG_MOVE)
			piece[nr_pieces++] = x;
	}
	src = nr_pieces ? pool_move_source(piece[0]) : -1;
	for (size_t i = 0; !r && i < n; i++) {
		const struct extent_rec *x = &e[i];
		uint64_t left = x->length;

		if (!as_is_extent(x))
			continue;
		if (stripe_of(x) != stripe)
			stripe = stripe_of(x), j = 0;
		if (x->device != src) {
			ext[k] = *x;
			ext[k++].seq = (stripe << STRIPE_SEQ_SHIFT) + j++;
			continue;
		}
		while (left) {	/* the pieces that take this extent's place */
			const struct extent_rec *q = next < nr_pieces ? piece[next] : NULL;
			uint64_t take;

			if (!q) {
				r = pool_fail(err, -EUCLEAN, "its move in flight has fewer bytes to go "
					      "to than it moves");
				break;
			}
			take = q->length - piece_used < left ? q->length - piece_used : left;
			ext[k++] = (struct extent_rec){ v->rec.id, (stripe << STRIPE_SEQ_SHIFT) + j++,
							q->device, q->dev_offset + piece_used, take };
			piece_used += take;
			left -= take;
			if (piece_used == q->length) {
				next++;
				piece_used = 0;
			}
		}
	}
	free(piece);
	if (r) {
		free(ext);
		return r;
	}
	*out = ext;
	*nr = k;
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

/* @v's target as it is (@after false) or as it will be, by its kind's build_over. */
static int build_leg(struct pool *p, struct pool_volume *v, const struct extent_rec *extra,
		     size_t nr_extra, bool after, struct target **out, struct pool_error *err)
{
	struct extent_rec *e;
	size_t n;
	int r;

	r = after ? as_will_be(p, v, extra, nr_extra, &e, &n, err) : as_is(p, v, &e, &n, err);
	if (r)
		return r;
	r = v->type->build_over(p, v, e, n, out, err);
	free(e);
	return r;
}

/* The log of @v's move: its state as left (@fresh false, if it is good), or new. */
static int move_log(struct pool *p, struct pool_volume *v, bool fresh, struct mirror_log **out,
		    struct pool_error *err)
{
	uint64_t regions = (v->rec.size + MIRROR_REGION_SIZE - 1) / MIRROR_REGION_SIZE;
	char path[PATH_MAX];
	int fd, r;

	r = move_log_path(p, v->rec.id, path, sizeof(path));
	if (!r && !fresh) {
		r = regfile_open(path, O_RDWR | O_CLOEXEC, 0, &fd);
		if (!r)
			r = mirror_log_open(fd, 2, regions, out);
		if (r == -ENOENT || r == -EUCLEAN)
			log_warn("volume '%s': the log of its move is %s: the copy starts over",
				 v->rec.name, r == -ENOENT ? "missing" : "damaged");
		if (r == -ENOENT || r == -EUCLEAN)
			fresh = true;
	}
	if (fresh) {
		r = regfile_open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600, &fd);
		if (!r)
			r = mirror_log_create(fd, 2, MIRROR_REGION_SIZE, regions, false, out);
		if (!r && (r = mirror_log_set_leg(*out, 1, MIRROR_LEG_REBUILDING, 0)))
			mirror_log_close(*out);
	}
	return r ? pool_fail(err, r, "cannot open the log of its move %s: %s", path,
			     strerror(-r)) : 0;
}

/* The mirror that carries the move of @v (leg 0 as it is, leg 1 as it will be). */
static int move_target(struct pool *p, struct pool_volume *v, const struct extent_rec *extra,
		       size_t nr_extra, bool fresh, struct target **out, struct pool_error *err)
{
	struct target *legs[2] = { NULL, NULL };
	char from_name[POOL_NAME_MAX + 16], to_name[POOL_NAME_MAX + 16];
	const char *names[2] = { from_name, to_name };
	struct mirror_log *log;
	int r;

	move_leg_names(p, v, extra, nr_extra, from_name, to_name, sizeof(from_name));
	r = build_leg(p, v, extra, nr_extra, false, &legs[0], err);
	if (!r && (r = build_leg(p, v, extra, nr_extra, true, &legs[1], err)))
		legs[0]->ops->destroy(legs[0]);
	if (r)
		return r;
	r = move_log(p, v, fresh, &log, err);
	if (r) {
		legs[0]->ops->destroy(legs[0]);
		legs[1]->ops->destroy(legs[1]);
		return r;
	}
	r = mirror_create(v->rec.name, v->rec.size, legs, names, 2, log, p->sync_rate, out);
	return r ? pool_fail(err, r, "cannot start its move: %s", strerror(-r)) : 0;
}

int pool_move_build(struct pool *p, struct pool_volume *v, struct target **out,
		    struct pool_error *err)
{
	return move_target(p, v, NULL, 0, false, out, err);
}

int pool_move_serve(struct pool *p, struct pool_volume *v, struct pool_error *err)
{
	struct target *t;
	int r = pool_move_build(p, v, &t, err);

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

/* Stripe numbers an extent's seq has room for (pool_int.h). */
#define RUNS_MAX	(POOL_LEG_SEQ >> STRIPE_SEQ_SHIFT)

/* Whether a stripe of @v other than @k has bytes on device @dev (not pieces). */
static bool other_stripe_on(struct pool *p, struct pool_volume *v, uint32_t k, int64_t dev)
{
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);

	for (size_t i = 0; i < n; i++)
		if (as_is_extent(&e[i]) && stripe_of(&e[i]) != k && e[i].device == dev)
			return true;
	return false;
}

/* Appends the @nr extents of @x (freed) to @m.  0 or -ENOMEM. */
static int add_pieces(struct move_record *m, struct extent_rec *x, size_t nr)
{
	struct extent_rec *v = realloc(m->ext, (m->nr + nr + 1) * sizeof(*v));

	if (!v) {
		free(x);
		return -ENOMEM;
	}
	memcpy(v + m->nr, x, nr * sizeof(*x));
	m->ext = v;
	m->nr += nr;
	free(x);
	return 0;
}

/*
 * Carves the pieces of stripe @k of striped @v: its @bytes on the source,
 * on one device (@to, or the first open one other than @from) that no
 * other stripe of @v uses nor @taken (devices chosen for other stripes of
 * this move), numbered from @seq.
 */
static int plan_stripe(struct pool *p, struct pool_volume *v, uint32_t k, uint64_t bytes,
		       struct pool_device *from, struct pool_device *to,
		       const struct pool_device **taken, uint32_t seq, struct move_record *m,
		       struct pool_error *err)
{
	char want[SIZE_STR_LEN];

	if (to && other_stripe_on(p, v, k, to->rec.id))
		return pool_fail(err, -EINVAL, "device '%s' holds another stripe of '%s': its "
				 "stripes keep to devices of their own", to->rec.name, v->rec.name);
	for (size_t i = 0; i < p->nr_devs; i++) {
		struct pool_device *d = to ? to : p->devs[i];
		bool in_use = d == from || !d->dev || other_stripe_on(p, v, k, d->rec.id);
		struct pool_error why;
		struct extent_rec *x;
		size_t nx;
		int r;

		for (uint32_t t = 0; t < RUNS_MAX && !in_use; t++)
			in_use = taken[t] == d;
		if (in_use && !to)
			continue;
		r = pool_allocate(p, v->rec.id, seq, bytes, &d, 1, &x, &nx, &why);
		if (r == -ENOSPC && !to)
			continue;
		if (r)
			return pool_fail(err, r, "stripe %u of '%s': %s", k, v->rec.name, why.msg);
		taken[k] = d;
		return add_pieces(m, x, nx) ? pool_fail(err, -ENOMEM, "out of memory") : 0;
	}
	return pool_fail(err, -ENOSPC, "stripe %u of '%s' needs %s free on one device that its "
			 "other stripes do not use: no device has it", k, v->rec.name,
			 format_size(bytes, want));
}

/*
 * Carves the places where @v's extents on @from go when its kind needs
 * each whole (moves_whole: a switch path reaches the volume's size in one
 * run): one piece per extent, of its length, in one free range of @to or
 * of the first other open device that has one, numbered from @seq in
 * @v's order, so that as_will_be puts each piece in its extent's place.
 */
static int plan_whole(struct pool *p, struct pool_volume *v, struct pool_device *from,
		      struct pool_device *to, uint32_t seq, struct move_record *m,
		      struct pool_error *err)
{
	size_t n;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);
	char want[SIZE_STR_LEN];

	if (to && !to->dev)
		return pool_fail(err, -ENODEV, "device '%s' is failed: %s", to->rec.name,
				 to->failure);
	for (size_t i = 0; i < n; i++) {
		struct extent_rec x = { v->rec.id, seq + (uint32_t)m->nr, -1, 0, e[i].length };
		struct extent_rec *grown;
		int r = -ENOSPC;

		if (!as_is_extent(&e[i]) || e[i].device != from->rec.id)
			continue;
		for (size_t k = 0; r == -ENOSPC && k < (to ? 1 : p->nr_devs); k++) {
			struct pool_device *d = to ? to : p->devs[k];

			if (d != from && d->dev &&
			    !(r = pool_find_whole(p, d, x.length, m->ext, m->nr, &x.dev_offset)))
				x.device = d->rec.id;
		}
		if (r == -ENOSPC)
			return pool_fail(err, r, "%s %s '%s' moves each of its extents whole, and "
					 "%s%s%s has no %s free in one piece", v->type->words,
					 v->type->noun, v->rec.name,
					 to ? "device '" : "no other device", to ? to->rec.name : "",
					 to ? "'" : "", format_size(x.length, want));
		grown = r ? NULL : realloc(m->ext, (m->nr + 1) * sizeof(*grown));
		if (!grown)
			return pool_fail(err, -ENOMEM, "out of memory");
		grown[m->nr++] = x;
		m->ext = grown;
	}
	return 0;
}

/*
 * Carves the places where @v's bytes on @from go: pieces numbered from
 * POOL_MOVE_SEQ with @from's id, in @v's order.  A linear volume's go to
 * @to, or anywhere but @from (a thin pool's data likewise, in whole
 * blocks: its kind's grain); a striped volume's stripes each to one
 * device of their own (plan_stripe), so that they stay apart.
 */
static int plan_pieces(struct pool *p, struct pool_volume *v, struct pool_device *from,
		       struct pool_device *to, struct move_record *m, struct pool_error *err)
{
	uint32_t seq = POOL_MOVE_SEQ + ((uint32_t)from->rec.id << 16), nr_runs = 1;
	uint64_t bytes[RUNS_MAX] = { 0 };
	const struct pool_device *taken[RUNS_MAX] = { NULL };
	struct pool_device **devs;
	size_t n, nr_devs = 0;
	const struct extent_rec *e = pool_extents_of(p, v->rec.id, &n);
	int r = 0;

	if (v->type->moves_whole)
		return plan_whole(p, v, from, to, seq, m, err);
	for (size_t i = 0; i < n; i++) {
		if (!as_is_extent(&e[i]))
			continue;
		if (stripe_of(&e[i]) + 1 > nr_runs)
			nr_runs = stripe_of(&e[i]) + 1;
		if (e[i].device == from->rec.id)
			bytes[stripe_of(&e[i])] += e[i].length;
	}
	if (nr_runs > 1) {
		for (uint32_t k = 0; !r && k < nr_runs; k++)
			if (bytes[k])
				r = plan_stripe(p, v, k, bytes[k], from, to, taken,
						seq + (uint32_t)m->nr, m, err);
		return r;
	}
	devs = calloc(p->nr_devs + 1, sizeof(*devs));
	if (!devs)
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < p->nr_devs; i++)
		if (to ? p->devs[i] == to : p->devs[i] != from && p->devs[i]->dev)
			devs[nr_devs++] = p->devs[i];
	r = nr_devs ? pool_allocate_after(p, v->rec.id, seq, bytes[0], devs, nr_devs, UINT64_MAX,
					  v->type->grain(v), &m->ext, &m->nr, err) :
		      pool_fail(err, -ENOSPC, "no other device to move to");
	free(devs);
	return r;
}

/* Starts moving @v (of a movable kind) off @from, to @to (or any other device). */
static int move_volume(struct pool *p, struct pool_volume *v, struct pool_device *from,
		       struct pool_device *to, struct pool_error *err)
{
	struct move_record m = { NULL, 0 };
	struct target *t, *old;
	int r;

	r = plan_pieces(p, v, from, to, &m, err);
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
	old = v->type->reload(v, t);
	if (old)
		old->ops->destroy(old);
	if (p->monitor)		/* a mapperctl on a pool no daemon serves copies nothing */
		mirror_start(t);
	log_info("volume '%s': moving off device '%s' to %s", v->rec.name, from->rec.name,
		 to ? to->rec.name : "the other devices");
	return 0;
}

struct placed_find {
	int64_t device;
	bool found;
};

static void note_placed(void *arg, const struct extent_rec *range)
{
	struct placed_find *f = arg;

	f->found |= range->device == f->device;
}

/*
 * Whether @v uses a range of device @dev placed by hand (its type's
 * placed hook: a switch path given as DEVICE:OFFSET), which a move does
 * not carry: it owns no extent to carve anew, its place was its
 * creator's choice, and other paths may share it (multipath).
 */
static bool placed_on(struct pool *p, struct pool_volume *v, int64_t dev)
{
	struct placed_find f = { dev, false };

	v->type->placed(p, v, note_placed, &f);
	return f.found;
}

/* "thin pools", "switch volumes": @t's volumes, in a refusal. */
static void kind_plural(const struct target_type *t, char *buf, size_t len)
{
	if (strcmp(t->noun, "volume"))
		snprintf(buf, len, "%s", t->nouns);
	else
		snprintf(buf, len, "%s volumes", t->words);
}

int pool_move(struct pool *p, const struct pool_move_spec *s, unsigned int *started,
	      struct pool_error *err)
{
	struct pool_device *from, *to = NULL;
	char blocked[POOL_ERROR_LEN / 2] = "", kinds[96] = "", kind[40];
	size_t blen = 0, tlen = 0;
	bool placed_kinds = false;
	int r = 0;

	*started = 0;
	pool_admin_lock(p);
	from = pool_device_by_name(p, s->device);
	if (!from) {
		r = pool_fail(err, -ENOENT, "no device '%s'", s->device);
		goto out;
	}
	if (s->volume && !pool_volume_by_name(p, s->volume)) {
		r = pool_fail(err, -ENOENT, "no volume '%s'", s->volume);
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
		bool placed = placed_on(p, v, from->rec.id);
		const char *why;

		if ((s->volume && strcmp(s->volume, v->rec.name)) ||
		    (!bytes_on(p, v, from->rec.id) && !placed))
			continue;
		why = !v->type->movable ? v->type->words : !v->type->runs_on(v) ? "failed" :
		      pool_move_source_of(p, v) >= 0 ? "moving already" :
		      placed ? "placed there by hand, as DEVICE:OFFSET" : NULL;
		placed_kinds |= placed && v->type->movable;
		if (why && blen < sizeof(blocked))
			blen += (size_t)snprintf(blocked + blen, sizeof(blocked) - blen, "%s'%s' (%s)",
						 blen ? ", " : "", v->rec.name, why);
		if (!v->type->movable && tlen < sizeof(kinds)) {
			kind_plural(v->type, kind, sizeof(kind));
			if (!strstr(kinds, kind))
				tlen += (size_t)snprintf(kinds + tlen, sizeof(kinds) - tlen, "%s%s",
							 tlen ? " and " : "; ", kind);
		}
	}
	if (blen) {
		r = pool_fail(err, -EOPNOTSUPP, "cannot move off '%s': %s%s%s%s", s->device, blocked,
			      kinds, tlen ? " do not move yet" : "", placed_kinds ?
			      "; a place chosen by hand stays where it was put (it owns no extent "
			      "to carve anew, and other paths may share it)" : "");
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
			    move_volume(p, v, from, to, err);
			*started += !r;
		}
	}
	if (!r && !*started)
		r = pool_fail(err, -ENOENT, s->abort ? "nothing is moving off '%s'%s%s%s" :
			      "nothing to move off '%s'%s%s%s", s->device,
			      s->volume ? " for volume '" : "", s->volume ? s->volume : "",
			      s->volume ? "'" : "");
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
	struct pool_volume *v = pool_volume_by_id(p, m->volume);
	int r;

	if (!m->ext)
		return p->meta->ops->extent_delete(p->meta, m->volume, POOL_MOVE_SEQ,
						   POOL_PLACED_SEQ - 1);
	r = p->meta->ops->extent_delete(p->meta, m->volume, 0, POOL_PLACED_SEQ - 1);
	for (size_t i = 0; !r && i < m->nr; i++)
		r = p->meta->ops->extent_insert(p->meta, &m->ext[i]);
	if (!r)
		r = v->type->record_moved(p, v, m->ext, m->nr);
	return r;
}

/*
 * @v served by a plain table of its extents (after the record), old
 * target freed, the move's log deleted.  A table that cannot be built
 * (a device failed meanwhile) leaves the mirror serving: it holds the
 * same bytes, and the next opening builds the plain one.
 */
static void reload_plain(struct pool *p, struct pool_volume *v)
{
	struct target *t, *old;
	struct pool_error err;
	char path[PATH_MAX];

	if (build_leg(p, v, NULL, 0, false, &t, &err) == 0) {
		old = v->type->reload(v, t);
		if (old)
			old->ops->destroy(old);
	} else {
		log_warn("volume '%s': served by the copy's mirror until it is opened again: %s",
			 v->rec.name, err.msg);
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
	if (v->type->runs_on(v))
		reload_plain(p, v);
	log_info("volume '%s': its move off '%s' aborted: it stays where it was",
		 v->rec.name, from ? from->rec.name : "?");
	return 0;
}

static struct log_limit move_start_failed;

void pool_move_watch(struct pool *p, struct pool_volume *v)
{
	struct mirror_status s;
	struct move_end m = { v->rec.id, NULL, 0 };
	struct pool_device *from;
	struct pool_error err;
	int r;

	if (!pool_volume_mirror(v))
		return;
	r = mirror_start(pool_volume_mirror(v));
	if (r) {
		log_error_limited(&move_start_failed, "volume '%s': cannot start the copy of its "
				  "move: %s", v->rec.name, strerror(-r));
		return;
	}
	mirror_status(pool_volume_mirror(v), &s);
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
	if (as_will_be(p, v, NULL, 0, &m.ext, &m.nr, &err) ||
	    pool_reserve(p, 0, m.nr) ||
	    pool_record(p, "record the moved volume", record_move_end, &m, &err)) {
		log_error("volume '%s': its move is copied but cannot be recorded: %s (tried again "
			  "in a moment)", v->rec.name, err.msg);
		free(m.ext);
		return;
	}
	v->type->publish_moved(p, v, m.ext, m.nr);
	pool_extents_unpublish(p, v->rec.id, 0, POOL_PLACED_SEQ - 1);
	pool_extents_publish(p, m.ext, m.nr);
	free(m.ext);
	reload_plain(p, v);
	pool_stale_file(p, v->rec.id);
	log_info("volume '%s': moved off device '%s'", v->rec.name, from ? from->rec.name : "?");
}

/* How far @v's copy is, in *out (regions), from its served mirror. */
static void move_progress(struct pool_volume *v, struct mirror_status *out)
{
	memset(out, 0, sizeof(*out));
	if (pool_volume_mirror(v))
		mirror_status(pool_volume_mirror(v), out);
}

void pool_move_status(struct pool *p, struct pool_volume *v, struct json *j)
{
	struct pool_device *from = pool_device_by_id(p, pool_move_source_of(p, v));
	struct mirror_status s;

	move_progress(v, &s);
	json_object_begin(j, "move");
	json_string(j, "from", from ? from->rec.name : "?");
	json_percent(j, "copy_percent", s.sync_done, s.sync_total ? s.sync_total : 1);
	if (s.stall[0])
		json_string(j, "copy_stalled", s.stall);
	json_object_end(j);
}

void pool_move_check(struct pool *p, struct pool_volume *v, struct pool_check *c)
{
	int64_t src = pool_move_source_of(p, v);
	struct pool_device *from;
	struct mirror_status s;
	uint64_t h;

	if (src < 0)
		return;
	from = pool_device_by_id(p, src);
	move_progress(v, &s);
	if (!s.sync_total) {	/* not served: no copy under way to measure */
		pool_summary(c, "%s '%s': moving off '%s', its copy not under way: it goes on "
			     "when the %s is served", v->type->noun, v->rec.name,
			     from ? from->rec.name : "?", v->type->noun);
		return;
	}
	h = (s.sync_done * 10000 + s.sync_total / 2) / s.sync_total;	/* as json_percent */
	pool_summary(c, "%s '%s': moving off '%s', copy %llu.%02llu%% done%s%s", v->type->noun,
		     v->rec.name, from ? from->rec.name : "?", (unsigned long long)(h / 100),
		     (unsigned long long)(h % 100), s.stall[0] ? "; it waits: " : "", s.stall);
}

void pool_move_info(struct pool_volume *v, struct pool_volume_info *out)
{
	struct mirror_status s;

	move_progress(v, &s);
	if (s.sync_total)	/* else not served: no figure */
		out->sync_pct = (int32_t)(s.sync_done * 10000 / s.sync_total);
}
