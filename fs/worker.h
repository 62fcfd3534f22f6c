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
 */
#ifndef MAPPERFS_WORKER_H
#define MAPPERFS_WORKER_H

#include "engine.h"

#define WORKER_MAX_IO		(1u << 20)	/* bytes: max_read/max_write */
#define WORKER_RING_DEPTH	64

/* What a FUSE handler may use on the thread that serves it. */
struct worker {
	struct engine engine;		/* made by the worker's own thread */
	int engine_ok;
	void *read_buf;			/* WORKER_MAX_IO bytes, page aligned */
};

/* The worker running the calling FUSE handler. */
struct worker *worker_self(void);

/*
 * Makes @w the calling thread's worker: registers the thread with liburcu
 * and makes its engine (which binds the ring to this thread).  The caller
 * sets w->read_buf.  0 or -errno; worker_leave undoes it, on this thread.
 */
int worker_enter(struct worker *w);
void worker_leave(struct worker *w);

#endif
