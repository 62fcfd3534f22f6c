/*
 * core/pool/pool_send.c: `mapperctl send`, a thin volume as a stream
 * (core/util/send_stream.h) that `receive` applies in another pool.
 *
 * What goes in.  A full stream carries the volume's data: the ranges its
 * map (or its external origin) says are data, found with SEEK_DATA and
 * SEEK_HOLE, as `cp --sparse` finds them, so holes cost nothing.  An
 * incremental stream (--since SNAP) carries only the blocks whose
 * mapping differs between SNAP and the volume, as `diff` finds them
 * (thin_diff: leaves the two share are skipped whole, so the cost is the
 * pages that differ, not the volume's size); of those, what the volume
 * maps is data, and what it no longer maps (discarded since SNAP) is a
 * hole, so that the receiver unmaps it too and the result matches.  A
 * changed block is sent whole, never compared byte by byte: the map says
 * it changed, and reading SNAP's copy to compare would double the reads.
 *
 * Consistency.  The volume is held alone (volume_hold_alone) from before
 * its map is compared until the stream ends: no file can be open on it,
 * so nothing writes it and the stream is one instant of it.  A volume in
 * use is refused: send a snapshot of it (O(1)), as zfs send sends only
 * snapshots.  The admin lock is held only while the volumes are looked
 * up and their maps compared; the reading and writing, which wait on a
 * pipe for as long as the reader (ssh) takes, hold no lock, so the pool
 * goes on with other changes meanwhile.
 *
 * Identity.  The stream names the volume sent and its base by a uuid the
 * receiver records (pool_thin_identity): the pool's uuid with the
 * volume's id folded in, which no other volume of any pool has, or, for
 * a volume that was itself received, the identity it came with, so that
 * a chain of pools (A to B to C) recognises the same snapshot everywhere.
 */
#include "pool_int.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "log.h"
#include "send_stream.h"
#include "size.h"
#include "thin.h"
#include "volume.h"

#define SEND_CHUNK	(1u << 20)	/* bytes read per request */

void pool_thin_identity_of(struct pool *p, const struct pool_volume *v,
			   const struct thin_received_rec *received, struct uuid *out)
{
	uint64_t id = htole64((uint64_t)v->rec.id), tail;

	if (received && !received->staged) {
		*out = received->source;
		return;
	}
	*out = p->uuid;
	memcpy(&tail, out->b + 8, 8);
	tail ^= id;
	memcpy(out->b + 8, &tail, 8);
}

int pool_thin_identity(struct pool *p, const struct pool_volume *v, struct uuid *out)
{
	struct thin_received_rec rec;
	int r = p->meta->ops->received_get(p->meta, v->rec.id, &rec);

	if (r && r != -ENOENT)
		return r;
	pool_thin_identity_of(p, v, r ? NULL : &rec, out);
	return 0;
}

void pool_stop_streams(struct pool *p)
{
	atomic_store(&p->streams_stopped, true);
}

static bool stream_cancelled(void *arg)
{
	struct pool_stream_stop *c = arg;

	if (atomic_load(&c->p->streams_stopped))
		return true;
	if (c->caller && !c->caller_gone)
		c->caller_gone = c->caller->gone(c->caller->arg);
	return c->caller_gone;
}

void pool_stream_stop_init(struct pool_stream_stop *c, struct pool *p,
			   const struct pool_stream_caller *caller)
{
	*c = (struct pool_stream_stop){ .cancel = { .cancelled = stream_cancelled, .arg = c },
					.p = p, .caller = caller };
}

const char *pool_stream_stop_why(const struct pool_stream_stop *c)
{
	return c->caller_gone ? "its caller went away (mapperctl was killed)"
			      : "the daemon is stopping";
}

/* Block runs that differ between the base and the volume (thin_diff). */
struct runs {
	struct { uint64_t first, count; } *v;
	size_t nr, cap;
};

static int add_run(void *arg, uint64_t first, uint64_t count)
{
	struct runs *runs = arg;

	if (runs->nr == runs->cap) {
		size_t cap = runs->cap ? 2 * runs->cap : 256;
		void *v = realloc(runs->v, cap * sizeof(*runs->v));

		if (!v)
			return -ENOMEM;
		runs->v = v;
		runs->cap = cap;
	}
	runs->v[runs->nr].first = first;
	runs->v[runs->nr++].count = count;
	return 0;
}

/* What a send holds between looking up and streaming. */
struct send {
	struct pool_volume *v;		/* the volume sent, held alone */
	struct send_header h;
	struct runs runs;		/* incremental: the blocks to look at */
	struct send_writer w;
	struct engine e;
	void *buf;			/* SEND_CHUNK bytes */
};

/* Fills the header's names and identities.  Admin lock held. */
static int fill_header(struct pool *p, struct send *s, const struct pool_volume *tp,
		       const struct pool_volume *base, uint64_t spec_resume_at,
		       struct pool_error *err)
{
	int r = pool_thin_identity(p, s->v, &s->h.source);

	if (!r && base)
		r = pool_thin_identity(p, base, &s->h.base);
	if (r)
		return pool_fail(err, r, "cannot read the identity of '%s': %s", s->v->rec.name,
				 strerror(-r));
	s->h.version = SEND_VERSION;
	s->h.flags = (base ? SEND_INCREMENTAL : 0) | (spec_resume_at ? SEND_RESUMED : 0);
	s->h.resume_at = spec_resume_at;
	s->h.block_size = tp->tp.rec->block_size;
	s->h.volume_size = s->v->rec.size;
	snprintf(s->h.source_name, sizeof(s->h.source_name), "%s", s->v->rec.name);
	snprintf(s->h.base_name, sizeof(s->h.base_name), "%s", base ? base->rec.name : "");
	return 0;
}

/* A thin volume a send reads: a served one (pool_volume_get refuses staging). */
static int get_sendable(struct pool *p, const char *name, struct pool_volume **out,
			struct pool_error *err)
{
	int r = pool_volume_get(p, name, &thin_type, false, out, err);

	if (!r && !(*out)->served)
		return pool_fail(err, -EIO, "volume '%s' is not served", name);
	return r;
}

/*
 * Looks up the volume (held alone from here) and the base, compares their
 * maps, and fills the header.  Admin lock taken.
 */
static int prepare(struct pool *p, const struct pool_send_spec *spec, struct send *s,
		   struct pool_error *err)
{
	struct pool_volume *base = NULL, *tp = NULL;
	int r;

	pool_admin_lock(p);
	r = get_sendable(p, spec->name, &s->v, err);
	if (!r && spec->since)
		r = get_sendable(p, spec->since, &base, err);
	if (!r && base == s->v)
		r = pool_fail(err, -EINVAL, "'%s' cannot be sent since itself", spec->name);
	if (!r && base && base->thin.rec.pool != s->v->thin.rec.pool)
		r = pool_fail(err, -EXDEV, "'%s' and '%s' are in different thin pools", spec->name,
			      spec->since);
	if (!r && !(tp = pool_volume_by_id(p, s->v->thin.rec.pool)))
		r = pool_fail(err, -EIO, "the thin pool of '%s' is gone", spec->name);
	if (!r && (r = volume_hold_alone(s->v->served)))
		r = pool_fail(err, r, r == -EBUSY ? "volume '%s' is open: send reads a volume nobody "
			      "writes; snapshot it and send the snapshot" : "volume '%s' is being removed",
			      spec->name);
	if (r) {
		s->v = NULL;
		goto out;
	}
	r = fill_header(p, s, tp, base, spec->resume_at, err);
	if (!r && base) {
		r = thin_diff(base->served->target, s->v->served->target, add_run, &s->runs);
		if (r)
			pool_fail(err, r, "cannot compare '%s' and '%s': %s", spec->since, spec->name,
				  strerror(-r));
	}
out:
	pool_admin_unlock(p);
	return r;
}

/*
 * Streams [@off, @off + @len) (4 KiB aligned) of the volume as it reads:
 * data, and holes if @holes.  The edges seeking finds are widened to
 * 4 KiB (an origin image's may be finer): a little hole sent as data.
 */
static int send_range(struct send *s, uint64_t off, uint64_t len, bool holes)
{
	struct volume *v = s->v->served;
	uint64_t end = off + len, at;
	int r = 0;

	while (off < end && !r) {
		r = volume_seek_within(v, off, end - off, SEEK_DATA, &at);
		if (r == -ENXIO) {
			at = end;
			r = 0;
		}
		at -= at % SEND_ALIGN;
		if (!r && at > off && holes)
			r = send_writer_hole(&s->w, off, at - off);
		off = at;
		if (r || off >= end)
			break;
		r = volume_seek_within(v, off, end - off, SEEK_HOLE, &at);
		at = at % SEND_ALIGN ? at + SEND_ALIGN - at % SEND_ALIGN : at;
		if (at > end)
			at = end;
		while (!r && off < at) {
			uint32_t n = at - off > SEND_CHUNK ? SEND_CHUNK : (uint32_t)(at - off);
			ssize_t got = volume_read(v, &s->e, s->buf, off, n);

			if (got != (ssize_t)n)
				r = got < 0 ? (int)got : -EIO;
			else
				r = send_writer_data(&s->w, off, s->buf, n);
			off += n;
		}
	}
	return r;
}

/* The whole stream, after its header. */
static int send_body(struct send *s)
{
	uint64_t size = s->h.volume_size, bs = s->h.block_size;
	int r = 0;

	if (!(s->h.flags & SEND_INCREMENTAL))
		return send_range(s, 0, size, false);
	for (size_t i = 0; i < s->runs.nr && !r; i++) {
		uint64_t off = s->runs.v[i].first * bs, len = s->runs.v[i].count * bs;

		if (off >= size)
			break;		/* runs come in order: the rest is past the end */
		r = send_range(s, off, len < size - off ? len : size - off, true);
	}
	return r;
}

int pool_send(struct pool *p, const struct pool_send_spec *spec, struct pool_streamed *out,
	      struct pool_error *err)
{
	struct pool_stream_stop stop;
	struct send s = { 0 };
	int r;

	pool_stream_stop_init(&stop, p, spec->caller);
	*out = (struct pool_streamed){ .incremental = spec->since != NULL };
	r = prepare(p, spec, &s, err);
	if (r)
		goto out;
	r = engine_init(&s.e, 8);
	if (r) {
		pool_fail(err, r, "cannot set up I/O: %s", strerror(-r));
		goto out;
	}
	if (posix_memalign(&s.buf, 4096, SEND_CHUNK)) {
		r = pool_fail(err, -ENOMEM, "out of memory");
		goto out_engine;
	}
	r = send_writer_begin(&s.w, spec->fd, &s.h, &stop.cancel);
	if (!r)
		r = send_body(&s);
	if (!r)
		r = send_writer_end(&s.w);
	send_writer_release(&s.w);
	out->resumed_at = spec->resume_at;
	out->bytes = s.w.bytes;
	out->records = s.w.records;
	out->data_bytes = s.w.data_bytes;
	out->hole_bytes = s.w.hole_bytes;
	if (r == -ERANGE || (r == -EINVAL && spec->resume_at && !s.w.bytes))
		r = pool_fail(err, -EINVAL, "the stream cannot resume at byte %llu: that is %s",
			      (unsigned long long)spec->resume_at,
			      s.w.bytes ? "past its end" : "inside its header");
	else if (r == -EPIPE)
		pool_fail(err, r, "the reader of the stream went away after %llu bytes",
			  (unsigned long long)s.w.bytes);
	else if (r == -ECANCELED)
		pool_fail(err, r, "%s: the stream is cut short after %llu bytes",
			  pool_stream_stop_why(&stop), (unsigned long long)s.w.bytes);
	else if (r)
		pool_fail(err, r, "cannot send '%s' past byte %llu of the stream: %s", spec->name,
			  (unsigned long long)s.w.bytes, strerror(-r));
	else
		log_info("sent volume '%s'%s%s: %llu bytes, %llu record%s", spec->name,
			 spec->since ? " since " : "", spec->since ? spec->since : "",
			 (unsigned long long)s.w.bytes, (unsigned long long)s.w.records,
			 s.w.records == 1 ? "" : "s");
	free(s.buf);
out_engine:
	engine_exit(&s.e);
out:
	if (r && stop.caller_gone)	/* nobody reads the answer: the log tells */
		log_warn("send of '%s': %s", spec->name, err->msg);
	if (s.v)
		volume_unhold_alone(s.v->served);
	free(s.runs.v);
	return r;
}
