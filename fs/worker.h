/*
 * fs/worker.h: what a thread that serves FUSE requests owns, whichever
 * transport brings it the requests.
 *
 * A handler (fs/ops.c) runs on the thread that took its request: a
 * /dev/fuse worker (workers.c) or a ring thread (uring_transport.c).
 * Each such thread owns what the I/O path needs without a lock (struct
 * worker): its io engine, whose io_uring is bound to the thread, a
 * page-aligned buffer that reads land in, and its liburcu registration.
 * The transport makes the thread a worker (worker_enter) before it serves
 * and the handlers find it with worker_self().
 *
 * A worker also carries its transport's say on where replies go.  libfuse
 * writes every reply, and every notification, through the session's
 * writev (transport.c), the one place that sees them all; but only the
 * thread's transport knows where its request came from.  So a transport
 * that answers elsewhere than /dev/fuse hangs a reply hook on its worker,
 * and the writev offers each reply to the calling thread's worker
 * (worker_reply) before it writes to /dev/fuse.  The writev calls down
 * into this file, never up into a transport; and as the hook is the
 * thread's own, offering a reply costs a thread-local load and an
 * indirect call: no lock, no allocation.
 */
#ifndef MAPPERFS_WORKER_H
#define MAPPERFS_WORKER_H

#include <stdbool.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "engine.h"

#define WORKER_MAX_IO		(1u << 20)	/* bytes: max_read/max_write */
#define WORKER_RING_DEPTH	64

/* What a FUSE handler may use on the thread that serves it. */
struct worker {
	struct engine engine;		/* made by the worker's own thread */
	int engine_ok;
	/*
	 * WORKER_MAX_IO bytes, page aligned, that a libfuse READ handler
	 * reads into; NULL on a transport that serves reads itself (ops.h).
	 */
	void *read_buf;
	/*
	 * Where replies written on this thread go, set by the transport
	 * before worker_enter (NULL: all to /dev/fuse).  Takes a reply
	 * (@iov[0] its fuse_out_header) that is the transport's to answer,
	 * sets *res to what writev would have returned, and returns true;
	 * or returns false and leaves it to /dev/fuse.  Runs on the worker's
	 * own thread for every reply: the hot path, so no lock.
	 */
	bool (*reply)(struct worker *w, const struct iovec *iov, int count,
		      ssize_t *res);
};

/* The worker running the calling FUSE handler. */
struct worker *worker_self(void);

/*
 * Makes @w the calling thread's worker: registers the thread with liburcu
 * and makes its engine (which binds the ring to this thread).  The caller
 * sets w->read_buf if READ reaches libfuse on this thread.  0 or -errno; worker_leave undoes it, on this thread.
 */
int worker_enter(struct worker *w);
void worker_leave(struct worker *w);

/*
 * For the session's writev: offers a reply written on the calling thread
 * to its worker's reply hook.  True if the hook took it (then *res is set
 * as writev would set it); false if the reply goes to /dev/fuse (the
 * thread is no worker, its worker has no hook, or the hook left it).
 */
bool worker_reply(const struct iovec *iov, int count, ssize_t *res);

#endif
