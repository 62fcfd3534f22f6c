#include "engine.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device.h"
#include "direct.h"
#include "log.h"
#include "nbd_batch.h"
#include "nbd_link.h"
#include "rangelock.h"
#include "writelog.h"

static int init(struct engine *e, unsigned int depth, unsigned int flags)
{
	int r;

	e->depth = depth;
	e->broken = false;
	e->scratch = NULL;
	e->scratch_size = 0;
	e->nbd = NULL;
	r = io_uring_queue_init(depth, &e->ring, flags);
	if (r == -EINVAL && flags)
		r = io_uring_queue_init(depth, &e->ring, 0);
	return r;
}

int engine_init(struct engine *e, unsigned int depth)
{
	return init(e, depth, IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN);
}

int engine_init_shared(struct engine *e, unsigned int depth)
{
	return init(e, depth, 0);
}

void engine_exit(struct engine *e)
{
	if (e->nbd)
		nbd_batch_abandon(e->nbd);
	io_uring_queue_exit(&e->ring);
	free(e->scratch);
	e->scratch = NULL;
	if (e->nbd)
		nbd_batch_release(e->nbd);
	free(e->nbd);
	e->nbd = NULL;
}

void *engine_scratch(struct engine *e, size_t size)
{
	void *p;

	if (size <= e->scratch_size)
		return e->scratch;
	if (posix_memalign(&p, 4096, size))
		return NULL;
	free(e->scratch);
	e->scratch = p;
	e->scratch_size = size;
	return p;
}

/* The descriptor that has @g's data (device.h). */
static int seg_fd(const struct seg *g)
{
	return g->dev->fd_direct >= 0 ? g->dev->fd_direct : g->dev->fd;
}

/* What remains of @g can go to seg_fd() as it is. */
static bool seg_rest_fits(const struct seg *g, const char *buf)
{
	return g->dev->fd_direct < 0 ||
	       direct_aligned(g->dev, g->dev_off + g->done, g->len - g->done,
			      buf + g->buf_off + g->done);
}

/* @g is direct I/O, all of it aligned: the ring's, sharing the range lock. */
static bool seg_direct_ring(const struct seg *g, const char *buf)
{
	return g->dev && device_unbuffered(g->dev) &&
	       direct_aligned(g->dev, g->dev_off, g->len, buf + g->buf_off);
}

/* Queues what remains of segment @i.  The ring always has room: see rw(). */
static void queue_seg(struct engine *e, struct seg *g, unsigned int i,
		      char *buf, bool write)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&e->ring);
	uint64_t off = g->dev_off + g->done;
	uint32_t len = g->len - g->done;
	char *p = buf + g->buf_off + g->done;
	int fd = seg_fd(g);

	if (write)
		io_uring_prep_write(sqe, fd, p, len, off);
	else
		io_uring_prep_read(sqe, fd, p, len, off);
	io_uring_sqe_set_data64(sqe, i);
}

/*
 * io_uring_enter failed for a reason that is no passing condition: SQEs
 * may be left in the ring pointing at buffers about to be reused, so the
 * engine refuses all further work instead of submitting them later.
 */
static int engine_break(struct engine *e, int r)
{
	log_error("io_uring_enter failed: %s; this thread's io engine stops", strerror(-r));
	e->broken = true;
	return -EIO;
}

static void report(const struct seg *g, bool write, int res)
{
	static struct log_limit limit;

	log_error_limited(&limit, "%s of %u bytes at offset %llu of '%s' failed: %s",
			  write ? "write" : "read", g->len, (unsigned long long)g->dev_off,
			  g->dev->path, res ? strerror(-res) : "unexpected end of device");
}

/*
 * A write of @n bytes at what remains of @g completed: the write log
 * (writelog.h) records it, if the device is recorded, before anyone can
 * learn that it completed.
 */
static void log_written(const struct seg *g, const char *buf, uint32_t n,
			uint64_t issued)
{
	if (g->dev->log_file) {
		writelog_write(g->dev->log_file, issued, g->dev_off + g->done,
			       buf + g->buf_off + g->done, n);
		device_note_write(g->dev);	/* after its record: device.h */
	}
}

/*
 * One segment done here, by syscalls: on a device io_uring would hand to
 * a kernel worker anyway, it saves that thread hop (half the latency on
 * tmpfs); a piece the ring cannot take as it is, direct.h bounces.
 */
static int rw_inline(struct seg *g, char *buf, bool write, uint64_t issued)
{
	while (g->done < g->len) {
		uint64_t off = g->dev_off + g->done;
		uint32_t len = g->len - g->done;
		char *p = buf + g->buf_off + g->done;
		ssize_t n = write ? direct_pwrite(g->dev, p, len, off)
				  : direct_pread(g->dev, p, len, off);

		if (n == -EINTR || n == -EAGAIN)
			continue;
		if (n <= 0) {
			report(g, write, (int)n);
			return -EIO;
		}
		if (write)
			log_written(g, buf, (uint32_t)n, issued);
		g->done += (uint32_t)n;
	}
	return 0;
}

/*
 * The segments rw_ring() leaves out, done here first, one at a time and
 * holding no range lock (direct.h): those of @only, else every one.  Each
 * ends marked done, or failed, and the result says if one failed.
 */
static int rw_each(struct segs *s, char *buf, bool write, uint64_t issued,
		   bool (*only)(const struct seg *, const char *))
{
	int err = 0;

	for (unsigned int i = 0; i < s->nr; i++) {
		struct seg *g = &s->v[i];

		if (!g->dev || g->done == g->len || (only && !only(g, buf)))
			continue;
		if (rw_inline(g, buf, write, issued))
			err = -EIO;
		g->done = g->len;
	}
	return err;
}

static bool seg_bounced(const struct seg *g, const char *buf)
{
	return device_unbuffered(g->dev) && !seg_direct_ring(g, buf);
}

static void ring_unshare(struct segs *s, const char *buf, unsigned int nr)
{
	for (unsigned int i = 0; i < nr; i++)
		if (seg_direct_ring(&s->v[i], buf))
			rangelock_unshare(s->v[i].dev->lock);
}

/*
 * The direct writes the ring takes share their devices' range locks for
 * as long as they run, namelessly and all or none: to wait for one while
 * holding another could deadlock (rangelock.h).  False: none is held, as
 * someone holds or wants a range alone on one of the devices.
 */
static bool ring_share(struct segs *s, const char *buf)
{
	for (unsigned int i = 0; i < s->nr; i++)
		if (seg_direct_ring(&s->v[i], buf) && !rangelock_try_share(s->v[i].dev->lock)) {
			ring_unshare(s, buf, i);
			return false;
		}
	return true;
}

/*
 * At most e->depth SQEs are in flight, and each completion frees the slot
 * its segment may need again, so io_uring_get_sqe() never fails.
 * Segments already done are left out.
 */
static int rw_ring(struct engine *e, struct segs *s, char *buf, bool write,
		   uint64_t issued)
{
	unsigned int next = 0, inflight = 0;
	int err = 0;

	while (next < s->nr || inflight) {
		struct io_uring_cqe *cqe;
		unsigned int head, seen = 0;
		int r;

		for (; next < s->nr && inflight < e->depth; next++) {
			struct seg *g = &s->v[next];

			if (!g->dev) {
				memset(buf + g->buf_off, 0, g->len);
				continue;
			}
			if (g->done == g->len || g->dev->nbd)
				continue;
			queue_seg(e, g, next, buf, write);
			inflight++;
		}
		if (!inflight)
			break;
		r = io_uring_submit_and_wait(&e->ring, 1);
		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
			return engine_break(e, r);
		io_uring_for_each_cqe(&e->ring, head, cqe) {
			struct seg *g;
			int res = cqe->res;

			seen++;
			if (nbd_batch_tag(cqe->user_data)) {
				nbd_batch_event(e->nbd, &e->ring, cqe->user_data, res);
				continue;
			}
			g = &s->v[cqe->user_data];
			if (res == -EAGAIN || res == -EINTR) {
				queue_seg(e, g, (unsigned int)cqe->user_data, buf, write);
				continue;
			}
			if (write)
				device_note_write(g->dev);	/* failed too: some sectors may have */
			if (res <= 0) {
				if (!err)
					report(g, write, res);
				err = -EIO;
				inflight--;
				continue;
			}
			if (write)
				log_written(g, buf, (uint32_t)res, issued);
			g->done += (uint32_t)res;
			if (g->done < g->len && seg_rest_fits(g, buf)) {
				queue_seg(e, g, (unsigned int)cqe->user_data, buf, write);
				continue;
			}
			if (g->done < g->len) {	/* a short direct transfer: the end */
				if (!err)
					report(g, write, 0);
				err = -EIO;
			}
			inflight--;
		}
		io_uring_cq_advance(&e->ring, seen);
	}
	return err;
}

static bool any_nbd(const struct segs *s)
{
	for (unsigned int i = 0; i < s->nr; i++)
		if (s->v[i].dev && s->v[i].dev->nbd)
			return true;
	return false;
}

/* The engine's batch, made on the first NBD request; NULL on ENOMEM. */
static struct nbd_batch *batch(struct engine *e)
{
	if (!e->nbd)
		e->nbd = calloc(1, sizeof(*e->nbd));
	return e->nbd;
}

/* Takes the ring's completions at hand, all of them the batch's. */
static void take_events(struct engine *e)
{
	struct io_uring_cqe *cqe;
	unsigned int head, seen = 0;

	io_uring_for_each_cqe(&e->ring, head, cqe) {
		seen++;
		if (nbd_batch_tag(cqe->user_data))
			nbd_batch_event(e->nbd, &e->ring, cqe->user_data, cqe->res);
	}
	io_uring_cq_advance(&e->ring, seen);
}

/* Waits for one completion, or more, and takes them.  0 or -errno of the ring. */
static int wait_events(struct engine *e)
{
	int r = io_uring_submit_and_wait(&e->ring, 1);

	if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
		return r;
	take_events(e);
	return 0;
}

/*
 * The ring's segments, and those on NBD devices (nbd_batch.h): these
 * sent before the ring's are queued, and waited for after them.  A
 * request over more links than the batch has slots does its NBD
 * segments one at a time, by direct.c.
 */
static int rw_ring_and_nbd(struct engine *e, struct segs *s, char *buf, bool write,
			   uint64_t issued)
{
	struct engine_job j = { .segs = s, .buf = buf, .write = write };
	int sent = 0, err, r;

	if (any_nbd(s)) {
		if (!batch(e))
			return -EIO;
		sent = nbd_batch_add(e->nbd, &e->ring, &j);
		if (sent == -EAGAIN)
			sent = rw_each(s, buf, write, issued, nbd_batch_takes) ? -EIO : 0;
	}
	err = rw_ring(e, s, buf, write, issued);
	while (sent > 0 && j.nbd_left) {
		r = wait_events(e);
		if (r)
			return engine_break(e, r);
	}
	if (sent < 0)
		return -EIO;
	return err ? err : j.result;
}

static int rw(struct engine *e, struct segs *s, char *buf, bool write)
{
	uint64_t issued = write && writelog_on() ? writelog_now() : 0;
	int err, r;

	engine_drain(e);
	if (e->broken)
		return -EIO;
	for (unsigned int i = 0; i < s->nr; i++)
		s->v[i].done = 0;
	if (s->nr == 1 && s->v[0].dev && !s->v[0].dev->nowait && !s->v[0].dev->nbd)
		return rw_inline(&s->v[0], buf, write, issued);
	err = rw_each(s, buf, write, issued, seg_bounced);
	if (write && !ring_share(s, buf))
		return rw_each(s, buf, write, issued, NULL) ? -EIO : err;
	r = rw_ring_and_nbd(e, s, buf, write, issued);
	if (write)
		ring_unshare(s, buf, s->nr);
	return r ? r : err;
}

int engine_read(struct engine *e, struct segs *s, void *buf)
{
	return rw(e, s, buf, false);
}

int engine_write(struct engine *e, struct segs *s, const void *buf)
{
	return rw(e, s, (char *)buf, true);
}

/* Flushes the NBD devices among @devs, one after another. */
static int sync_nbd(struct device *const *devs, unsigned int nr)
{
	int err = 0;

	for (unsigned int i = 0; i < nr; i++)
		if (devs[i]->nbd && nbd_link_flush(devs[i]->nbd)) {
			static struct log_limit limit;

			log_error_limited(&limit, "flush of '%s' failed", devs[i]->path);
			err = -EIO;
		}
	return err;
}

int engine_sync(struct engine *e, struct device *const *devs, unsigned int nr)
{
	unsigned int next = 0;
	uint64_t *covered;
	int err;

	if (e->broken)
		return -EIO;
	engine_drain(e);
	err = sync_nbd(devs, nr);
	/* without it every device is flushed, clean or not, and stays unclean */
	covered = calloc(nr ? nr : 1, sizeof(*covered));
	while (next < nr) {
		uint64_t issued;
		unsigned int batch = 0;
		struct io_uring_cqe *cqe;
		int r;

		for (; next < nr && batch < e->depth; next++) {
			struct io_uring_sqe *sqe;

			if (devs[next]->nbd || (covered && device_clean(devs[next])))
				continue;
			if (covered)
				covered[next] = device_flush_begins(devs[next]);
			sqe = io_uring_get_sqe(&e->ring);
			io_uring_prep_fsync(sqe, devs[next]->fd, IORING_FSYNC_DATASYNC);
			io_uring_sqe_set_data64(sqe, next);
			batch++;
		}
		/* after covered: a write it counts has its record before this */
		issued = writelog_on() ? writelog_now() : 0;
		r = batch ? io_uring_submit(&e->ring) : 0;
		for (unsigned int i = 0; r >= 0 && i < batch; i++) {
			struct device *dev;

			r = io_uring_wait_cqe(&e->ring, &cqe);
			if (r < 0)
				break;
			dev = devs[cqe->user_data];
			if (cqe->res < 0) {
				static struct log_limit limit;

				log_error_limited(&limit, "fdatasync of '%s' failed: %s",
						  dev->path, strerror(-cqe->res));
				err = -EIO;
			} else {
				if (covered)
					device_note_flushed(dev, covered[cqe->user_data]);
				if (dev->log_file)
					writelog_flush(dev->log_file, issued);
			}
			io_uring_cqe_seen(&e->ring, cqe);
		}
		if (r < 0) {
			free(covered);
			return engine_break(e, r);
		}
	}
	free(covered);
	return err;
}

/* Whether @j can be parked: every segment on an NBD device (a hole, for a read). */
static bool parkable(const struct engine_job *j)
{
	const struct segs *s = j->segs;

	for (unsigned int i = 0; i < s->nr; i++) {
		const struct seg *g = &s->v[i];

		if (!g->dev ? j->write : !nbd_batch_takes(g, j->buf))
			return false;
	}
	return true;
}

int engine_start(struct engine *e, struct engine_job *j)
{
	struct segs *s = j->segs;
	int r;

	if (e->broken)
		return -EAGAIN;		/* engine_read says why */
	for (unsigned int i = 0; i < s->nr; i++)
		s->v[i].done = 0;
	if (!parkable(j) || !batch(e))
		return -EAGAIN;
	if (j->write && !ring_share(s, j->buf))
		return -EAGAIN;
	j->shared = j->write;
	j->parked = true;
	j->result = 0;
	r = nbd_batch_add(e->nbd, &e->ring, j);
	if (r < 0) {
		if (j->shared)
			ring_unshare(s, j->buf, s->nr);
		return -EAGAIN;
	}
	for (unsigned int i = 0; i < s->nr; i++)
		if (!s->v[i].dev)
			memset(j->buf + s->v[i].buf_off, 0, s->v[i].len);
	if (r == 0) {			/* holes only */
		j->next = e->nbd->finished;
		e->nbd->finished = j;
	}
	r = io_uring_submit(&e->ring);
	if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
		engine_break(e, r);
	return 0;
}

int engine_fd(const struct engine *e)
{
	return e->ring.ring_fd;
}

bool engine_busy(const struct engine *e)
{
	return e->nbd && nbd_batch_busy(e->nbd);
}

struct engine_job *engine_reap(struct engine *e)
{
	struct engine_job *done, *j;
	int r;

	if (!e->nbd)
		return NULL;
	take_events(e);
	r = io_uring_submit(&e->ring);		/* the polls armed again */
	if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
		engine_break(e, r);
	done = e->nbd->finished;
	e->nbd->finished = NULL;
	for (j = done; j; j = j->next)
		if (j->shared) {
			ring_unshare(j->segs, j->buf, j->segs->nr);
			j->shared = false;
		}
	return done;
}

void engine_drain(struct engine *e)
{
	while (engine_busy(e) && !e->broken) {
		int r = wait_events(e);

		if (r)
			engine_break(e, r);
	}
	if (e->broken && e->nbd)	/* nothing will complete: fail what is left */
		nbd_batch_abandon(e->nbd);
}
