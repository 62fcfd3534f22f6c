/*
 * core/pool/pool_receive.c: `mapperctl receive`, a send stream
 * (core/util/send_stream.h) applied as a new thin volume, all or nothing.
 *
 * Staging.  Nothing the stream says reaches NAME until the whole stream
 * has been read and every checksum passed: the records are applied to a
 * staging volume, POOL_STAGING_PREFIX NAME (a name no person can give,
 * inactive, so never a file in the mount, and refused to every command
 * but the receive's own: pool_volume_get), and only the end record, once
 * checked, lets one transaction rename it to NAME, make it read-only and
 * record the sender's identity of it.  A full stream stages into a new
 * empty thin volume, so its holes are simply not written; an incremental
 * one into a snapshot of its base (O(1)), found by the identity the
 * stream names (pool_thin_identity: what a receive recorded, or a volume
 * of this very pool), so that only the changed blocks are written and
 * the result shares the rest with the base, and NAME is that snapshot.
 * A receive never guesses its base: one identity has one holder (a
 * stream whose volume the pool holds already is refused, and a received
 * volume made writable forgets its identity), and where an older pool
 * has several, the one with the sender's base name is taken, or none.
 * The data goes through the volume's write path (volume_write: the thin
 * target provisions, zeroes, copies on write) and holes through its
 * discard (a whole block unmapped), as a writer of the file would, but
 * without FUSE.
 *
 * Cut short.  A pipe from ssh can break anywhere.  Every
 * POOL_RECEIVE_CHECKPOINT bytes of stream, at a record boundary, the
 * staging volume is flushed (its pool commits: data, then map) and then
 * its place in the stream recorded (meta step 13: position, crc32 so
 * far, counts); a stream that stops early, or a daemon that stops
 * (pool_stop_streams) while the stream is silent, records its last
 * boundary the same way and keeps the staging volume.  The same receive
 * again finds it, checks that the stream is the same one (the header's
 * crc32, and the running crc32 at that place when it has to read up to
 * it), and goes on from there: a file is seeked, a pipe read and checked
 * up to there; or a resumed stream (send --resume-at, SEND_RESUMED)
 * carries only the rest, from the place recorded, so that the bytes
 * before it do not travel again.  Records are idempotent (data
 * overwrites, holes unmap), so a crash between the flush and the record
 * only repeats some.  A stream that is damaged (a checksum fails, a
 * field is wrong) removes the staging volume: what it applied cannot be
 * trusted, and nothing of it ever was NAME.
 *
 * Received volumes are read-only, as zfs's received snapshots are: the
 * next incremental stream is applied onto it as the base, and a base
 * that changed since would give a volume that matches neither side.
 */
#include "pool_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "log.h"
#include "names.h"
#include "send_stream.h"
#include "volume.h"

/* A receive under way. */
struct receive {
	const struct pool_receive_spec *spec;
	char staging[POOL_NAME_MAX + 1];
	struct send_header h;
	uint32_t header_crc;
	struct send_reader rd;
	struct pool_stream_stop stop;	/* the daemon's, or the caller gone */
	struct send_place at;		/* where to go on from, if resuming */
	bool resuming;
	bool drop_stale;		/* a staging volume of another stream is in the way */
	char base[POOL_NAME_MAX + 1];	/* incremental: the base's name here */
	char thin_pool[POOL_NAME_MAX + 1];	/* full: the thin pool */
	bool own_staging;		/* made or held here: dropped here if it fails */
	/* The stream failed (read, malformed, cut short): why says how. */
	bool stream_failed;
	struct volume *v;		/* the staging volume, held alone while applying */
	struct engine e;
	void *buf;			/* SEND_DATA_MAX bytes */
	uint64_t hole_bytes;
	uint64_t since_checkpoint;	/* stream bytes */
	char why[SEND_WHY_LEN];
};

/*
 * The volumes of this pool that hold identity @id (pool_thin_identity),
 * staging volumes aside: up to @max of them in @out, how many in all in
 * *@nr.  Reads the store: admin lock held.
 */
static void find_holders(struct pool *p, const struct uuid *id, struct pool_volume **out,
			 size_t max, size_t *nr)
{
	struct uuid mine;

	*nr = 0;
	for (size_t i = 0; i < p->nr_vols; i++) {
		struct pool_volume *v = p->vols[i];

		if (v->type != &thin_type || !v->served || pool_is_staging_name(v->rec.name) ||
		    pool_thin_identity(p, v, &mine) || !uuid_equal(&mine, id))
			continue;
		if (*nr < max)
			out[*nr] = v;
		++*nr;
	}
}

#define HOLDERS_SHOWN 4		/* named in a refusal */

/* The holders' names, quoted, for a one-line refusal. */
static void holder_names(struct pool_volume **v, size_t nr, char *out, size_t len)
{
	size_t at = 0;

	out[0] = '\0';
	for (size_t i = 0; i < nr && i < HOLDERS_SHOWN && at < len; i++)
		at += (size_t)snprintf(out + at, len - at, "%s'%s'", i ? ", " : "", v[i]->rec.name);
	if (nr > HOLDERS_SHOWN && at < len)
		snprintf(out + at, len - at, " and %zu more", nr - HOLDERS_SHOWN);
}

/*
 * Refuses --pool naming another thin pool than @base's: an incremental
 * stream lands where its base is, a snapshot of it.  Admin lock held.
 */
static int refuse_other_pool(struct pool *p, struct receive *rc, struct pool_volume *base,
			     struct pool_error *err)
{
	struct pool_volume *named, *tp = pool_volume_by_id(p, base->thin.rec.pool);
	int r;

	if (!rc->spec->thin_pool)
		return 0;
	r = pool_volume_get(p, rc->spec->thin_pool, &thin_pool_type, false, &named, err);
	if (!r && named != tp)
		r = pool_fail(err, -EINVAL, "the stream is incremental: it lands in thin pool '%s', "
			      "where its base '%s' is, not in '%s' (leave out --pool)",
			      tp ? tp->rec.name : "?", base->rec.name, named->rec.name);
	return r;
}

/*
 * The base of an incremental stream: the volume holding the identity it
 * names.  A receive never guesses: if several hold it (a pool that took
 * one stream twice, before receive refused that), the one named as the
 * sender's base is taken, and if none or more than one is, the receive
 * is refused, naming them.  Admin lock held.
 */
static int find_base(struct pool *p, struct receive *rc, struct pool_error *err)
{
	struct pool_volume *holders[HOLDERS_SHOWN], *base = NULL;
	char id[UUID_STR_LEN], names[POOL_ERROR_LEN / 2];
	size_t nr, named = 0;

	uuid_format(&rc->h.base, id);
	find_holders(p, &rc->h.base, holders, HOLDERS_SHOWN, &nr);
	if (!nr)
		return pool_fail(err, -ENOENT, "the stream's base %s (snapshot '%s' of the sender) "
				 "is not in this pool", id, rc->h.base_name);
	for (size_t i = 0; i < nr && i < HOLDERS_SHOWN; i++)
		if (!strcmp(holders[i]->rec.name, rc->h.base_name) && !named++)
			base = holders[i];
	if (nr == 1)
		base = holders[0];
	if (nr > 1 && named != 1) {
		holder_names(holders, nr, names, sizeof(names));
		return pool_fail(err, -ENOTUNIQ, "the stream's base %s (snapshot '%s' of the sender) "
				 "is held by %zu volumes here, %s: remove the copies that are not "
				 "the base, or rename the base '%s'", id, rc->h.base_name, nr, names,
				 rc->h.base_name);
	}
	snprintf(rc->base, sizeof(rc->base), "%s", base->rec.name);
	return refuse_other_pool(p, rc, base, err);
}

/*
 * Refuses a stream whose volume this pool holds already: a second holder
 * of one identity would make the next incremental stream's base
 * ambiguous.  A copy is one snapshot away.  Admin lock held.
 */
static int refuse_held(struct pool *p, struct receive *rc, struct pool_error *err)
{
	struct pool_volume *holder;
	char id[UUID_STR_LEN];
	size_t nr;

	find_holders(p, &rc->h.source, &holder, 1, &nr);
	if (!nr)
		return 0;
	uuid_format(&rc->h.source, id);
	return pool_fail(err, -EEXIST, "volume '%s' holds the stream's snapshot already ('%s' of "
			 "the sender, identity %s): a copy of it is 'mapperctl snapshot %s %s'",
			 holder->rec.name, rc->h.source_name, id, holder->rec.name, rc->spec->name);
}

/* The thin pool of a full stream: the one named, or the only one. */
static int find_thin_pool(struct pool *p, struct receive *rc, struct pool_error *err)
{
	const char *named = rc->spec->thin_pool;
	struct pool_volume *tp = NULL;
	size_t n = 0;
	int r;

	if (named) {
		r = pool_volume_get(p, named, &thin_pool_type, false, &tp, err);
		if (r)
			return r;
	}
	for (size_t i = 0; !named && i < p->nr_vols; i++)
		if (p->vols[i]->type == &thin_pool_type && !n++)
			tp = p->vols[i];
	if (!tp)
		return pool_fail(err, -ENOENT, "this pool has no thin pool to receive into");
	if (n > 1)
		return pool_fail(err, -EINVAL, "this pool has %zu thin pools: name one with --pool",
				 n);
	snprintf(rc->thin_pool, sizeof(rc->thin_pool), "%s", tp->rec.name);
	return 0;
}

/*
 * A staging volume there already: a receive of this stream cut short
 * (go on from its place), or of another one (drop it).  Admin lock held.
 */
static int look_at_staging(struct pool *p, struct receive *rc, struct pool_volume *st,
			   struct pool_error *err)
{
	struct thin_received_rec row;
	int r = p->meta->ops->received_get(p->meta, st->rec.id, &row);

	if (r && r != -ENOENT)
		return pool_store_fail(err, r, "read the staging volume's place");
	rc->resuming = !r && row.staged && row.header_crc == rc->header_crc &&
		       uuid_equal(&row.source, &rc->h.source) && st->rec.size == rc->h.volume_size;
	rc->drop_stale = !rc->resuming;
	rc->at = (struct send_place){ .pos = row.pos, .crc = row.crc, .records = row.records,
				      .data_bytes = row.data_bytes, .next = row.next };
	return 0;
}

/* What the stream needs of this pool, looked up.  Admin lock taken. */
static int plan(struct pool *p, struct receive *rc, struct pool_error *err)
{
	struct pool_volume *st;
	int r = 0;

	pool_admin_lock(p);
	if (pool_volume_by_name(p, rc->spec->name))
		r = pool_fail(err, -EEXIST, "volume '%s' exists", rc->spec->name);
	st = r ? NULL : pool_volume_by_name(p, rc->staging);
	if (st)
		r = look_at_staging(p, rc, st, err);
	if (!r && (rc->h.flags & SEND_RESUMED) && !rc->resuming)	/* never drop it for one */
		r = pool_fail(err, st ? -ESTALE : -ENOENT, "the stream is the rest of one from byte "
			      "%llu on, and %s", (unsigned long long)rc->h.resume_at,
			      st ? "the receive cut short here is of another stream" :
			      "no receive of it was cut short here");
	if (!r && rc->h.flags & SEND_INCREMENTAL)
		r = find_base(p, rc, err);
	else if (!r)
		r = find_thin_pool(p, rc, err);
	if (!r)
		r = refuse_held(p, rc, err);
	pool_admin_unlock(p);
	return r;
}

/* Records the staging volume's place in the stream.  Admin lock held. */
static int record_place(struct pool *p, void *arg)
{
	return p->meta->ops->received_put(p->meta, arg);
}

/* Flushes what was applied, then records where: the place to go on from. */
static int checkpoint(struct pool *p, struct receive *rc, struct pool_error *err)
{
	struct thin_received_rec row = { .volume = rc->v->id, .source = rc->h.source,
					 .staged = true, .header_crc = rc->header_crc };
	struct send_place at;
	int r = volume_flush(rc->v, &rc->e);

	if (r)
		return pool_fail(err, r, "cannot commit the staging volume '%s': %s", rc->staging,
				 strerror(-r));
	send_reader_place(&rc->rd, &at);
	snprintf(row.source_name, sizeof(row.source_name), "%s", rc->h.source_name);
	row.pos = at.pos;
	row.crc = at.crc;
	row.records = at.records;
	row.data_bytes = at.data_bytes;
	row.next = at.next;
	pool_admin_lock(p);
	r = pool_record_unarchived(p, "record how far the receive got", record_place, &row, err);
	pool_admin_unlock(p);
	rc->since_checkpoint = 0;
	return r;
}

/* Makes the staging volume: empty, or a snapshot of the base at the new size. */
static int make_staging(struct pool *p, struct receive *rc, struct pool_error *err)
{
	struct pool_snapshot_pair pair = { .origin = rc->base, .name = rc->staging };
	struct pool_snapshot_spec snap = { .pairs = &pair, .nr = 1, .staging = true };
	struct pool_thin_spec thin = { .name = rc->staging, .pool = rc->thin_pool,
				       .size = rc->h.volume_size, .staging = true };
	int r;

	if (!(rc->h.flags & SEND_INCREMENTAL))
		return pool_create_thin(p, &thin, NULL, err);
	r = pool_snapshot(p, &snap, NULL, err);
	return r ? r : pool_resize_staging(p, rc->staging, rc->h.volume_size, err);
}

/* Holds the staging volume alone: no file, no second receive. */
static int hold_staging(struct pool *p, struct receive *rc, struct pool_error *err)
{
	struct pool_volume *st;
	int r;

	pool_admin_lock(p);
	st = pool_volume_by_name(p, rc->staging);
	if (!st || !st->served)
		r = pool_fail(err, -ENOENT, "the staging volume '%s' is gone", rc->staging);
	else if ((r = volume_hold_alone(st->served)))
		pool_fail(err, r, "a receive of '%s' is under way", rc->spec->name);
	else
		rc->v = st->served;
	if (!r)
		rc->own_staging = true;	/* resumed: ours now too */
	pool_admin_unlock(p);
	return r;
}

/* A reader's result: its errors noted as the stream's, said in rc->why. */
static int stream_result(struct receive *rc, int r)
{
	rc->stream_failed = r != 0;
	if (r == -ECANCELED)
		snprintf(rc->why, sizeof(rc->why), "%s", pool_stream_stop_why(&rc->stop));
	else if (r && r != -EBADMSG && r != -ENODATA && r != -ESTALE)
		snprintf(rc->why, sizeof(rc->why), "cannot read the stream: %s", strerror(-r));
	return r;
}

/* Writes one data record's @len bytes at @off. */
static int apply_data(struct receive *rc, uint64_t off, uint64_t len)
{
	const char *p = rc->buf;

	while (len) {
		ssize_t n = volume_write(rc->v, &rc->e, p, off, (uint32_t)len);

		if (n <= 0)
			return n ? (int)n : -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

/*
 * Reads and applies records up to the end record.  0 at the end; the
 * stream's errors (stream_result), or the volume's and the store's, said
 * in @err.
 */
static int apply(struct pool *p, struct receive *rc, struct pool_error *err)
{
	struct send_record rec;
	int r;

	for (;;) {
		uint64_t before = rc->rd.pos;

		r = stream_result(rc, send_reader_next(&rc->rd, &rec, rc->buf, rc->why));
		if (r || rec.type == SEND_END)
			return r;
		if (rec.type == SEND_DATA)
			r = apply_data(rc, rec.offset, rec.length);
		else
			r = volume_discard(rc->v, &rc->e, rec.offset, rec.length, DISCARD_PUNCH);
		if (r)
			return pool_fail(err, r, "cannot write the staging volume '%s': %s",
					 rc->staging, strerror(-r));
		if (rec.type == SEND_HOLE)
			rc->hole_bytes += rec.length;
		rc->since_checkpoint += rc->rd.pos - before;
		if (rc->since_checkpoint >= POOL_RECEIVE_CHECKPOINT)
			r = checkpoint(p, rc, err);
		if (r)
			return r;
	}
}

/* NAME at last: the staging volume renamed, read-only, its identity recorded. */
struct finish {
	struct volume_rec row;
	struct thin_received_rec received;
};

static int record_finish(struct pool *p, void *arg)
{
	struct finish *f = arg;
	int r = p->meta->ops->volume_update(p->meta, &f->row);

	return r ? r : p->meta->ops->received_put(p->meta, &f->received);
}

static int finish(struct pool *p, struct receive *rc, struct pool_error *err)
{
	struct finish f = { .received = { .volume = rc->v->id, .source = rc->h.source } };
	struct pool_volume *v;
	char *served_name = strdup(rc->spec->name);
	int r = served_name ? 0 : pool_fail(err, -ENOMEM, "out of memory");

	snprintf(f.received.source_name, sizeof(f.received.source_name), "%s", rc->h.source_name);
	pool_admin_lock(p);
	v = pool_volume_by_id(p, rc->v->id);
	if (!r && pool_volume_by_name(p, rc->spec->name))
		r = pool_fail(err, -EEXIST, "volume '%s' was made meanwhile", rc->spec->name);
	if (!r && !v)
		r = pool_fail(err, -ENOENT, "the staging volume '%s' is gone", rc->staging);
	if (!r) {
		f.row = v->rec;
		snprintf(f.row.name, sizeof(f.row.name), "%s", rc->spec->name);
		f.row.read_only = true;
		f.row.inactive = !rc->spec->active;
		r = pool_record(p, "record the received volume", record_finish, &f, err);
	}
	if (!r) {
		v->rec = f.row;
		atomic_store(&v->served->read_only, true);
		volume_rename(v->served, served_name);
		served_name = NULL;
		if (pool_volume_show(p, v))
			pool_volume_failed(v, "out of memory while activating it");
	}
	pool_admin_unlock(p);
	free(served_name);
	return r;
}

/* A staging volume out of the way, or the place of one cut short kept. */
static void drop_staging(struct pool *p, struct receive *rc)
{
	struct pool_error ignored;

	if (rc->v)
		volume_unhold_alone(rc->v);
	rc->v = NULL;
	if (pool_remove_staging(p, rc->staging, &ignored) && pool_volume_by_name(p, rc->staging))
		log_warn("receive of '%s' failed, and its staging volume '%s' could not be removed: %s",
			 rc->spec->name, rc->staging, ignored.msg);
}

/*
 * The stream stopped early, or the daemon stops: keep what was applied,
 * and say how to go on.
 */
static int cut_short(struct pool *p, struct receive *rc, struct pool_error *err)
{
	int r = checkpoint(p, rc, err);

	if (r)
		return r;
	return pool_fail(err, -ENODATA, "%s: nothing is applied; its first %llu bytes are kept "
			 "in '%s': the same receive again goes on from there, given the whole "
			 "stream or the rest of it (send --resume-at %llu); receive %s --abort "
			 "drops them",
			 rc->why, (unsigned long long)rc->rd.pos, rc->staging,
			 (unsigned long long)rc->rd.pos, rc->spec->name);
}

/* Stages, applies and finishes, once the header is read and the plan made. */
static int run(struct pool *p, struct receive *rc, struct pool_error *err)
{
	int r = 0;

	if (rc->drop_stale)
		drop_staging(p, rc);
	if (!rc->resuming) {
		r = make_staging(p, rc, err);
		rc->own_staging = !r;
	}
	if (!r)
		r = hold_staging(p, rc, err);
	if (!r && !rc->resuming)
		r = checkpoint(p, rc, err);	/* its place: right after the header */
	if (!r && rc->resuming)
		r = stream_result(rc, send_reader_resume(&rc->rd, &rc->at, rc->buf, rc->why));
	if (!r)
		r = apply(p, rc, err);
	if (!r)
		r = stream_result(rc, send_reader_finish(&rc->rd, rc->why));
	if (r == -ENODATA || r == -ECANCELED)
		return cut_short(p, rc, err);
	if (r == -ESTALE && (rc->h.flags & SEND_RESUMED))
		rc->own_staging = false;	/* the rest from elsewhere: keep what is applied */
	if (r && rc->stream_failed)
		return pool_fail(err, r, "%s: nothing is applied", rc->why);
	if (!r && (r = volume_flush(rc->v, &rc->e)))
		pool_fail(err, r, "cannot commit the staging volume '%s': %s", rc->staging,
			  strerror(-r));
	return r ? r : finish(p, rc, err);
}

int pool_receive(struct pool *p, const struct pool_receive_spec *s, struct pool_streamed *out,
		 struct pool_error *err)
{
	struct receive *rc = calloc(1, sizeof(*rc));
	int r;

	*out = (struct pool_streamed){ 0 };
	if (!rc || posix_memalign(&rc->buf, 4096, SEND_DATA_MAX)) {
		free(rc);
		return pool_fail(err, -ENOMEM, "out of memory");
	}
	rc->spec = s;
	pool_stream_stop_init(&rc->stop, p, s->caller);
	if (!name_valid(s->name))
		r = pool_fail(err, -EINVAL, "invalid name '%s': " NAME_RULES, s->name);
	else if (strlen(POOL_STAGING_PREFIX) + strlen(s->name) > POOL_NAME_MAX)
		r = pool_fail(err, -EINVAL, "name '%s' is too long to receive: at most %zu characters "
			      "(it is staged as '" POOL_STAGING_PREFIX "%s')", s->name,
			      POOL_NAME_MAX - strlen(POOL_STAGING_PREFIX), s->name);
	else if ((r = stream_result(rc, send_reader_begin(&rc->rd, s->fd, &rc->h, &rc->stop.cancel,
							   rc->why))))
		r = pool_fail(err, r, "%s: nothing is applied", rc->why);
	if (r)
		goto out;
	snprintf(rc->staging, sizeof(rc->staging), POOL_STAGING_PREFIX "%s", s->name);
	rc->header_crc = rc->rd.crc;
	r = plan(p, rc, err);
	if (r)
		goto out;
	r = engine_init(&rc->e, 8);
	if (r) {
		pool_fail(err, r, "cannot set up I/O: %s", strerror(-r));
		goto out;
	}
	r = run(p, rc, err);
	if (r && r != -ENODATA && rc->own_staging)
		drop_staging(p, rc);
	else if (rc->v)
		volume_unhold_alone(rc->v);
	engine_exit(&rc->e);
	out->incremental = rc->h.flags & SEND_INCREMENTAL;
	out->bytes = rc->rd.pos;
	out->records = rc->rd.records;
	out->data_bytes = rc->rd.data_bytes;
	out->hole_bytes = rc->hole_bytes;
	out->resumed_at = rc->resuming ? rc->at.pos : 0;
	snprintf(out->base, sizeof(out->base), "%s", rc->base);
	if (!r)
		log_info("received volume '%s'%s%s: %llu bytes of stream", s->name,
			 rc->base[0] ? " onto " : "", rc->base, (unsigned long long)rc->rd.pos);
out:
	if (r && rc->stop.caller_gone)	/* nobody reads the answer: the log tells */
		log_warn("receive of '%s': %s", s->name, err->msg);
	free(rc->buf);
	free(rc);
	return r;
}

int pool_receive_abort(struct pool *p, const char *name, struct pool_error *err)
{
	char staging[POOL_NAME_MAX + 8];
	struct pool_volume *st;
	bool running = false;

	snprintf(staging, sizeof(staging), POOL_STAGING_PREFIX "%s", name);
	pool_admin_lock(p);
	st = pool_volume_by_name(p, staging);
	if (st && st->served && volume_hold_alone(st->served))
		running = true;		/* the receive holds it: see hold_staging */
	else if (st && st->served)
		volume_unhold_alone(st->served);
	pool_admin_unlock(p);
	if (!st)
		return pool_fail(err, -ENOENT, "no receive of '%s' was cut short", name);
	if (running)
		return pool_fail(err, -EBUSY, "a receive of '%s' is under way: stop its sender, "
				 "then abort it", name);
	return pool_remove_staging(p, staging, err);
}
