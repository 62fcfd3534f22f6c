/*
 * core/target/volume.c: the one dispatcher of the I/O path.  Requests are
 * clipped to the volume, mapped by its target inside an RCU read section
 * that lasts until their I/O completed, and handed to the calling
 * thread's engine.
 *
 * The contracts are checked on the way, in every build, release
 * included, as nbdkit's backend.c keeps its checks: the dispatcher's own
 * (a request that reaches map() lies inside the volume; the caller holds
 * no RCU read section, so each volume_read_iov() had its
 * volume_read_done()) and the target's (target.h: a remapped request's
 * segments cover it exactly, in order; only writes are deferred; a seek
 * answers an offset inside the range it was given; every answer is a
 * map_result, 0 or -errno).  A breach fails that request with -EIO (a
 * read or write counted among the volume's errors) and is logged the
 * first time each rule is broken.  Not assert(): a packager's -DNDEBUG would remove it from
 * the builds people run (ours keep asserts on: CMakeLists.txt), and one
 * daemon serves every volume of the pool, so a bug in one target should
 * cost that target's requests, not abort every mount.
 *
 * What the checks cost a request that keeps the contracts: a few compares
 * of values at hand, one thread-local load (rcu_reading) and one pass
 * over the segments, which the engine walks next anyway.  No lock, no
 * allocation, no read-modify-write of shared memory: the flag that says
 * a rule was told is touched only by a breach.  A target's ops are
 * checked once, when a volume is made of it (volume_create): all set, so
 * nothing here tests for NULL.
 */
#include "volume.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "device.h"
#include "engine.h"
#include "log.h"
#include "rcu.h"

/* What the dispatcher checks (see the top of the file). */
enum rule {
	RULE_RCU,		/* the caller holds no RCU read section */
	RULE_RANGE,		/* what reaches map() lies inside the volume */
	RULE_COVER,		/* MAP_REMAPPED: the segments cover the request exactly */
	RULE_DEFER,		/* MAP_DEFER: writes only */
	RULE_MISS,		/* MAP_MISS: no segment appended */
	RULE_RESULT,		/* a map_result (map), else 0 or -errno */
	RULE_SEEK,		/* in [off, end] (SEEK_DATA: before end) */
	NR_RULES
};

static const char *const rule_broken[NR_RULES] = {
	[RULE_RCU] = "called inside an RCU read section (a volume_read_iov() "
		     "without its volume_read_done()?)",
	[RULE_RANGE] = "a request past the end of the volume reached map()",
	[RULE_COVER] = "map() remapped a request onto segments that do not cover it "
		       "exactly",
	[RULE_DEFER] = "map() deferred a read",
	[RULE_MISS] = "map() answered a miss after appending segments",
	[RULE_RESULT] = "an op answered a positive number, neither a result nor -errno",
	[RULE_SEEK] = "seek() answered an offset outside the range it was asked about",
};

/*
 * A request to @v broke @rule: logs it the first time @rule is broken in
 * this process, and returns -EIO, the request's result.  Only a breach
 * comes here; it never blocks.
 */
static __attribute__((cold, noinline)) int breach(struct volume *v, enum rule rule)
{
	static _Atomic bool told[NR_RULES];

	if (!atomic_exchange(&told[rule], true)) {
		rcu_read_begin();	/* for the name */
		log_error("volume '%s' (%s target): %s; failing the request with EIO "
			  "(told once: the volume's error count shows the rest)",
			  atomic_load(&v->name), rcu_load(v->target)->ops->name, rule_broken[rule]);
		rcu_read_end();
	}
	return -EIO;
}

/* The first op of @o left unset, or NULL if none is (target.h: every op is set). */
static const char *unset_op(const struct target_ops *o)
{
	return !o->name ? "name" : !o->map ? "map" : !o->fault ? "fault" :
	       !o->fault_start ? "fault_start" :
	       !o->write_deferred ? "write_deferred" : !o->read_failed ? "read_failed" :
	       !o->write_failed ? "write_failed" : !o->end_write ? "end_write" :
	       !o->flush ? "flush" : !o->discard ? "discard" : !o->seek ? "seek" :
	       !o->mapped_bytes ? "mapped_bytes" : !o->destroy ? "destroy" : NULL;
}

int volume_create(int64_t id, const char *name, uint64_t size,
		  struct target *t, struct volume **out)
{
	const char *unset = unset_op(t->ops);
	struct volume *v;
	char *copy;

	if (unset) {
		log_error("cannot serve volume '%s': its target (%s) leaves %s unset",
			  name, t->ops->name ? t->ops->name : "unnamed", unset);
		if (t->ops->destroy)
			t->ops->destroy(t);
		return -EINVAL;
	}
	v = calloc(1, sizeof(*v));
	copy = strdup(name);
	if (!v || !copy) {
		free(copy);
		free(v);
		t->ops->destroy(t);
		return -ENOMEM;
	}
	atomic_init(&v->name, copy);
	v->id = id;
	atomic_init(&v->target, t);
	atomic_init(&v->size, size);
	atomic_init(&v->zeros_from, VOLUME_ZEROS_UNKNOWN);
	*out = v;
	return 0;
}

void volume_rename(struct volume *v, char *name)
{
	char *old = atomic_exchange(&v->name, name);

	rcu_wait_readers();
	free(old);
}

/*
 * The volume was written now: its mtime.  A coarse clock, and a store
 * only when the second changed, so that writers on many threads do not
 * bounce the line on every request.
 */
static void touch(struct volume *v)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	if (atomic_load_explicit(&v->modified, memory_order_relaxed) != ts.tv_sec)
		atomic_store_explicit(&v->modified, ts.tv_sec, memory_order_relaxed);
}

void volume_written(struct volume *v, uint64_t off, uint64_t len)
{
	uint64_t z = atomic_load_explicit(&v->zeros_from, memory_order_relaxed);

	/* Known zeros are rare (an emptied volume being filled): one load otherwise. */
	while (z != VOLUME_ZEROS_UNKNOWN && off + len > z &&
	       !atomic_compare_exchange_weak(&v->zeros_from, &z, off + len))
		;
}

/* The target for a call outside a read section, held until target_put. */
static struct target *target_get(struct volume *v)
{
	struct target *t;

	rcu_read_begin();
	t = rcu_load(v->target);
	atomic_fetch_add(&t->users, 1);
	rcu_read_end();
	return t;
}

static void target_put(struct target *t)
{
	atomic_fetch_sub(&t->users, 1);
}

struct target *volume_reload(struct volume *v, struct target *t)
{
	const char *unset = unset_op(t->ops);
	struct target *old;

	if (unset) {
		log_error("cannot reload volume '%s': the new target (%s) leaves %s unset",
			  atomic_load(&v->name), t->ops->name ? t->ops->name : "unnamed", unset);
		t->ops->destroy(t);
		return NULL;
	}
	old = rcu_publish(v->target, t);
	rcu_wait_readers();		/* what began on @old took its hold by now */
	while (atomic_load(&old->users))
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	return old;
}

void volume_destroy(struct volume *v)
{
	if (!v)
		return;
	v->target->ops->destroy(v->target);
	free(v->name);
	free(v);
}

/*
 * hold and retire (and hold_alone) order their two stores against each
 * other's loads (sequentially consistent atomics): either the holder sees
 * the volume retired or held alone, or the other sees the holder.
 */
int volume_hold(struct volume *v)
{
	atomic_fetch_add(&v->holders, 1);
	if (atomic_load(&v->retired) || atomic_load(&v->alone)) {
		atomic_fetch_sub(&v->holders, 1);
		return atomic_load(&v->retired) ? -ENOENT : -EBUSY;
	}
	return 0;
}

int volume_hold_alone(struct volume *v)
{
	return volume_hold_alone_with(v, 0);
}

int volume_hold_alone_with(struct volume *v, int theirs)
{
	bool was = false;
	int r = 0;

	if (!atomic_compare_exchange_strong(&v->alone, &was, true))
		return -EBUSY;
	/* Ours counts before we look, as in volume_hold: one of two racers sees the other. */
	if (atomic_fetch_add(&v->holders, 1) != theirs)
		r = -EBUSY;
	else if (atomic_load(&v->retired))
		r = -ENOENT;
	if (r) {
		atomic_fetch_sub(&v->holders, 1);
		atomic_store(&v->alone, false);
	}
	return r;
}

void volume_unhold_alone(struct volume *v)
{
	atomic_fetch_sub(&v->holders, 1);
	atomic_store(&v->alone, false);
}

void volume_unhold(struct volume *v)
{
	atomic_fetch_sub(&v->holders, 1);
}

int volume_retire(struct volume *v)
{
	atomic_store(&v->retired, true);
	if (atomic_load(&v->holders)) {
		atomic_store(&v->retired, false);
		return -EBUSY;
	}
	return 0;
}

void volume_unretire(struct volume *v)
{
	atomic_store(&v->retired, false);
}

/*
 * Called inside an RCU read section that lasts until the I/O on the
 * segments completed: a target frees or reuses what a mapping points at
 * (a thin block discarded and allocated again, a replaced table) only
 * after a grace period, so a request never lands in a block that became
 * someone else's while it was in flight.
 */
/*
 * Whether @s covers [0, @len) of the request's buffer, in order, with no
 * gap and no overlap: once, or for a write once per copy, one copy after
 * the other (target.h).  O(segments).
 */
static bool covers(const struct segs *s, enum io_dir dir, uint32_t len)
{
	uint64_t at = 0;

	for (unsigned int i = 0; i < s->nr; i++) {
		if (at == len && dir == IO_WRITE && len)
			at = 0;			/* the next copy */
		if (s->v[i].buf_off != at)
			return false;
		at += s->v[i].len;
	}
	return at == len;
}

/*
 * Returns MAP_REMAPPED with @segs covering the request, MAP_DEFER for a
 * write, MAP_MISS (@segs as they were), or -errno: what breaks the
 * contract is -EIO (breach).  The request was clipped to @size_seen.
 */
static int map_range(struct volume *v, struct target *t, enum io_dir dir, uint64_t off,
		     uint32_t len, uint64_t size_seen, struct segs *segs)
{
	int r;

	/*
	 * Clipped just now.  A size only drops under a request when a
	 * truncate the volume allows shrank it meanwhile (its size drops
	 * before its target stops covering it): the bytes asked for are
	 * gone, and the request fails.  Otherwise a breach would be ours.
	 */
	if (off + len > atomic_load_explicit(&v->size, memory_order_acquire))
		return off + len <= size_seen ? -EIO : breach(v, RULE_RANGE);
	r = t->ops->map(t, dir, off, len, segs);
	if (r == MAP_REMAPPED)
		return covers(segs, dir, len) ? r : breach(v, RULE_COVER);
	if (r == MAP_DEFER)
		return dir == IO_WRITE ? r : breach(v, RULE_DEFER);
	if (r == MAP_MISS)
		return segs->nr ? breach(v, RULE_MISS) : r;
	return r < 0 ? r : breach(v, RULE_RESULT);
}

/*
 * Maps as map_range does, inside the read section, loading what the
 * target misses (fault(), outside the section, holding what it loaded)
 * and mapping again.  What the target holds is not unloaded before that
 * map; what it reads through another target (a thin volume's origin) may
 * be, so it tries a few times.  faulted() goes on from a first map that
 * answered @r.  Never MAP_MISS.
 */
#define VOLUME_FAULT_TRIES	8

static int faulted(struct volume *v, struct target *t, enum io_dir dir, uint64_t off,
		   uint32_t len, uint64_t size_seen, struct segs *segs, int r)
{
	for (int tries = 0; r == MAP_MISS && tries < VOLUME_FAULT_TRIES; tries++) {
		atomic_fetch_add(&t->users, 1);		/* for volume_reload */
		rcu_read_end();
		r = t->ops->fault(t, off, len, true);
		rcu_read_begin();
		target_put(t);
		if (r > 0)
			r = breach(v, RULE_RESULT);
		if (!r) {
			r = map_range(v, t, dir, off, len, size_seen, segs);
			t->ops->fault_release(t);
		}
	}
	return r == MAP_MISS ? -EIO : r;
}

static int map_loaded(struct volume *v, struct target *t, enum io_dir dir, uint64_t off,
		      uint32_t len, uint64_t size_seen, struct segs *segs)
{
	return faulted(v, t, dir, off, len, size_seen, segs,
		       map_range(v, t, dir, off, len, size_seen, segs));
}

/* The target's loader is done with @tw: the hold goes, then the reader learns. */
static void wait_over(struct target_wait *tw, int result)
{
	struct volume_wait *w = (struct volume_wait *)((char *)tw -
						       offsetof(struct volume_wait, tw));

	target_put(w->t);
	w->loaded(w, result);
}

/*
 * map_loaded for a read, but a miss the target queues on its loader
 * (fault_start, inside the section) is left to it: MAP_WAITING, the
 * target held until wait_over.  A miss it does not queue is faulted in
 * here.  Never MAP_MISS.
 */
#define MAP_WAITING	(MAP_MISS + 1)

static int map_or_wait(struct volume *v, struct target *t, uint64_t off, uint32_t len,
		       uint64_t size_seen, struct segs *segs, struct volume_wait *w)
{
	int r = map_range(v, t, IO_READ, off, len, size_seen, segs);

	if (r != MAP_MISS)
		return r;
	atomic_fetch_add(&t->users, 1);		/* for volume_reload, until wait_over */
	w->t = t;
	w->tw.done = wait_over;
	r = t->ops->fault_start(t, off, len, &w->tw);
	if (!r)
		return MAP_WAITING;	/* @w may be over already: not touched again */
	target_put(t);
	if (r > 0)
		return breach(v, RULE_RESULT);
	return faulted(v, t, IO_READ, off, len, size_seen, segs, MAP_MISS);
}

/* Counts a request of @len bytes that ended with @r; returns @r. */
static int count(struct volume *v, enum io_dir dir, uint32_t len, int r)
{
	if (r == -ENOSPC) {		/* the pool is full: not the device's fault */
		atomic_fetch_add_explicit(&v->stats.no_space, 1, memory_order_relaxed);
		return r;
	}
	if (r < 0) {
		atomic_fetch_add_explicit(&v->stats.errors, 1, memory_order_relaxed);
		return r;
	}
	if (dir == IO_READ) {
		atomic_fetch_add_explicit(&v->stats.reads, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&v->stats.read_bytes, len, memory_order_relaxed);
	} else {
		atomic_fetch_add_explicit(&v->stats.writes, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&v->stats.write_bytes, len, memory_order_relaxed);
	}
	return r;
}

/*
 * Clips [off, off + *len) to the volume, whose size it saw in *size; false
 * if it starts at or past the end.
 */
static bool clip(struct volume *v, uint64_t off, uint32_t *len, uint64_t *size_out)
{
	uint64_t size = atomic_load_explicit(&v->size, memory_order_acquire);

	*size_out = size;
	if (off >= size)
		return false;
	if (*len > size - off)
		*len = (uint32_t)(size - off);
	return true;
}

/* volume_read, and with @w volume_read_or_wait. */
static ssize_t read_mapped(struct volume *v, struct engine *e, void *buf, uint64_t off,
			   uint32_t len, struct volume_wait *w)
{
	struct target *t;
	struct segs segs;
	uint64_t size;
	int r;

	if (rcu_reading())
		return count(v, IO_READ, len, breach(v, RULE_RCU));
	if (!clip(v, off, &len, &size))
		return 0;
	segs_init(&segs);
	rcu_read_begin();
	t = rcu_load(v->target);
	r = w ? map_or_wait(v, t, off, len, size, &segs, w) :
		map_loaded(v, t, IO_READ, off, len, size, &segs);
	if (r == MAP_REMAPPED) {
		r = engine_read(e, &segs, buf);
		if (r == -EIO)		/* the devices failed it: the target may retry */
			r = t->ops->read_failed(t, e, off, len, buf, r);
	}
	rcu_read_end();
	segs_release(&segs);
	if (r == MAP_WAITING)
		return -EINPROGRESS;	/* counted when it is read */
	count(v, IO_READ, len, r);
	return r < 0 ? r : (ssize_t)len;
}

ssize_t volume_read(struct volume *v, struct engine *e, void *buf,
		    uint64_t off, uint32_t len)
{
	return read_mapped(v, e, buf, off, len, NULL);
}

ssize_t volume_read_or_wait(struct volume *v, struct engine *e, void *buf,
			    uint64_t off, uint32_t len, struct volume_wait *w)
{
	return read_mapped(v, e, buf, off, len, w);
}

/* Points @iov at the pieces; reads the ones not in memory into @buf. */
static int read_described(struct engine *e, struct segs *segs, char *buf,
			  struct iovec *iov, unsigned int *nr_iov)
{
	struct segs copied;
	unsigned int n = 0;
	int r;

	segs_init(&copied);
	for (unsigned int i = 0; i < segs->nr; i++) {
		const struct seg *g = &segs->v[i];
		const char *p = buf + g->buf_off;

		if (g->dev && g->dev->mem)
			p = g->dev->mem + g->dev_off;
		else if (segs_push(&copied, g->dev, g->dev_off, g->len, g->buf_off)) {
			r = -ENOMEM;
			goto out;
		}
		if (n && (char *)iov[n - 1].iov_base + iov[n - 1].iov_len == p) {
			iov[n - 1].iov_len += g->len;
		} else if (n == VOLUME_READ_IOV) {
			r = -E2BIG;
			goto out;
		} else {
			iov[n++] = (struct iovec){ (void *)p, g->len };
		}
	}
	r = copied.nr ? engine_read(e, &copied, buf) : 0;
out:
	segs_release(&copied);
	*nr_iov = n;
	return r;
}

ssize_t volume_read_iov(struct volume *v, struct engine *e, void *buf,
			uint64_t off, uint32_t len, struct iovec *iov,
			unsigned int *nr_iov)
{
	bool nested = rcu_reading();
	struct target *t;
	struct segs segs;
	uint64_t size;
	int r;

	*nr_iov = 0;
	rcu_read_begin();		/* ended by volume_read_done(), whatever the result */
	if (nested)
		return count(v, IO_READ, len, breach(v, RULE_RCU));
	if (!clip(v, off, &len, &size))
		return 0;
	segs_init(&segs);
	t = rcu_load(v->target);
	r = map_loaded(v, t, IO_READ, off, len, size, &segs);
	if (r == MAP_REMAPPED) {
		r = read_described(e, &segs, buf, iov, nr_iov);
		if (r == -E2BIG || r == -EIO) {	/* too scattered, or failed */
			r = r == -E2BIG ? engine_read(e, &segs, buf) :
			    t->ops->read_failed(t, e, off, len, buf, r);
			iov[0] = (struct iovec){ buf, len };
			*nr_iov = 1;
		}
	}
	segs_release(&segs);
	count(v, IO_READ, len, r);
	return r < 0 ? r : (ssize_t)len;
}

void volume_read_done(void)
{
	rcu_read_end();
}

void volume_read_lost(struct volume *v, uint32_t len)
{
	atomic_fetch_sub_explicit(&v->stats.reads, 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&v->stats.read_bytes, len, memory_order_relaxed);
	atomic_fetch_add_explicit(&v->stats.errors, 1, memory_order_relaxed);
}

ssize_t volume_write(struct volume *v, struct engine *e, const void *buf,
		     uint64_t off, uint32_t len)
{
	struct target *t;
	struct segs segs;
	uint64_t size;
	bool remapped, slow;
	int r;

	if (rcu_reading())
		return count(v, IO_WRITE, len, breach(v, RULE_RCU));
	if (atomic_load_explicit(&v->read_only, memory_order_relaxed))
		return -EROFS;
	if (!clip(v, off, &len, &size))
		return len ? -ENOSPC : 0;
	segs_init(&segs);
	rcu_read_begin();
	t = rcu_load(v->target);
	r = map_loaded(v, t, IO_WRITE, off, len, size, &segs);
	remapped = r == MAP_REMAPPED;
	if (remapped) {
		r = engine_write(e, &segs, buf);
		t->ops->end_write(t);
	}
	slow = (remapped && r == -EIO) || r == MAP_DEFER;
	if (slow)		/* held past the section, for volume_reload */
		atomic_fetch_add(&t->users, 1);
	rcu_read_end();
	/* Outside the section: a retry may wait for a grace period. */
	if (remapped && r == -EIO) {
		r = t->ops->write_failed(t, e, off, len, buf, r);
		if (r > 0)
			r = breach(v, RULE_RESULT);
	}
	/* Outside the section: the slow path may wait for a grace period. */
	if (r == MAP_DEFER) {
		r = t->ops->write_deferred(t, e, off, len, buf);
		if (r > 0)
			r = breach(v, RULE_RESULT);
	}
	if (slow)
		target_put(t);
	segs_release(&segs);
	count(v, IO_WRITE, len, r);
	if (r < 0)
		return r;
	touch(v);
	volume_written(v, off, len);
	return (ssize_t)len;
}

int volume_start(struct volume_io *io, struct volume *v, struct engine *e, bool write,
		 void *buf, uint64_t off, uint32_t len)
{
	enum io_dir dir = write ? IO_WRITE : IO_READ;
	uint64_t size;

	if (rcu_reading() || !clip(v, off, &len, &size) ||
	    (write && atomic_load_explicit(&v->read_only, memory_order_relaxed)))
		return -EAGAIN;
	segs_init(&io->segs);
	rcu_read_begin();
	io->t = rcu_load(v->target);
	if (io->t->ops->parks &&
	    map_range(v, io->t, dir, off, len, size, &io->segs) == MAP_REMAPPED) {
		io->job = (struct engine_job){ .segs = &io->segs, .buf = buf, .write = write };
		if (engine_start(e, &io->job) == 0) {
			io->v = v;
			io->off = off;
			io->len = len;
			io->park = rcu_park();
			rcu_read_end();
			return -EINPROGRESS;
		}
		if (write)
			io->t->ops->end_write(io->t);
	}
	rcu_read_end();
	segs_release(&io->segs);
	return -EAGAIN;
}

/* Counts @io ended with @r; the bytes, or @r. */
static ssize_t io_ended(struct volume_io *io, int r)
{
	count(io->v, io->job.write ? IO_WRITE : IO_READ, io->len, r);
	if (r < 0)
		return r;
	if (io->job.write) {
		touch(io->v);
		volume_written(io->v, io->off, io->len);
	}
	return (ssize_t)io->len;
}

ssize_t volume_finish(struct volume_io *io)
{
	int r = io->job.result;

	if (io->job.write)
		io->t->ops->end_write(io->t);
	if (r == -EIO)		/* held past the token, for volume_reload */
		atomic_fetch_add(&io->t->users, 1);
	rcu_unpark(io->park);
	segs_release(&io->segs);
	return r == -EIO ? -EAGAIN : io_ended(io, r);
}

ssize_t volume_retry(struct volume_io *io, struct engine *e)
{
	struct target *t = io->t;
	int r = io->job.write
		? t->ops->write_failed(t, e, io->off, io->len, io->job.buf, -EIO)
		: t->ops->read_failed(t, e, io->off, io->len, io->job.buf, -EIO);

	if (r > 0)
		r = breach(io->v, RULE_RESULT);
	target_put(t);
	return io_ended(io, r);
}

int volume_flush(struct volume *v, struct engine *e)
{
	struct target *t;
	int r;

	if (rcu_reading())	/* the flush may wait for a grace period: for good */
		return breach(v, RULE_RCU);
	t = target_get(v);
	r = t->ops->flush(t, e);
	target_put(t);
	return r > 0 ? breach(v, RULE_RESULT) : r;
}

int volume_discard(struct volume *v, struct engine *e, uint64_t off,
		   uint64_t len, enum discard_mode mode)
{
	uint64_t size = atomic_load(&v->size);
	struct target *t;
	int r;

	if (rcu_reading())
		return breach(v, RULE_RCU);
	if (atomic_load_explicit(&v->read_only, memory_order_relaxed))
		return -EROFS;
	if (!len)
		return 0;
	if (off >= size)
		return -EINVAL;
	if (len > size - off)
		len = size - off;
	t = target_get(v);
	r = t->ops->discard(t, e, off, len, mode);
	target_put(t);
	if (r > 0)
		return breach(v, RULE_RESULT);
	if (!r)
		touch(v);
	return r;
}

/* The target's seek in [@off, @end), @off < @end, checked. */
static int seek_range(struct volume *v, uint64_t off, uint64_t end, int whence,
		      uint64_t *out)
{
	struct target *t = target_get(v);
	int r = t->ops->seek(t, off, end, whence, out);

	target_put(t);
	if (r > 0)
		return breach(v, RULE_RESULT);
	if (!r && (*out < off || *out > end || (whence == SEEK_DATA && *out == end)))
		return breach(v, RULE_SEEK);
	return r;
}

int volume_seek(struct volume *v, uint64_t off, int whence, uint64_t *out)
{
	uint64_t size = atomic_load(&v->size);

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (off >= size)
		return -ENXIO;
	return seek_range(v, off, size, whence, out);
}

int volume_seek_within(struct volume *v, uint64_t off, uint64_t len, int whence,
		       uint64_t *out)
{
	uint64_t size = atomic_load(&v->size);

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (off >= size || !len)	/* at or past the end it is given */
		return -ENXIO;
	if (len > size - off)
		len = size - off;
	return seek_range(v, off, off + len, whence, out);
}

uint64_t volume_mapped_bytes(struct volume *v)
{
	struct target *t = target_get(v);
	uint64_t n = t->ops->mapped_bytes(t, atomic_load(&v->size));

	target_put(t);
	return n;
}
