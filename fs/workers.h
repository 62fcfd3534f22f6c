/*
 * fs/workers.h: the threads that serve FUSE requests from /dev/fuse, and
 * what every serving thread owns.
 *
 * We run our own receive loop instead of fuse_session_loop_mt() for two
 * reasons.  libfuse 3.14 puts a WRITE's payload 80 bytes into the receive
 * buffer; each worker's buffer starts 80 bytes before a page boundary, so
 * the payload is page aligned and goes to O_DIRECT backings untouched.
 * And each serving thread owns what the I/O path needs without a lock
 * (struct worker): its io_uring, a page-aligned read buffer, and its
 * liburcu registration.  The io_uring transport's threads
 * (uring_transport.c) own one too.
 *
 * Each worker handles one request at a time, synchronously; concurrency
 * comes from the number of workers (the kernel hands each request in
 * /dev/fuse to one blocked reader).
 */
#ifndef MAPPERFS_WORKERS_H
#define MAPPERFS_WORKERS_H

#include <fuse_lowlevel.h>

#include "engine.h"

#define WORKER_MAX_IO		(1u << 20)	/* bytes: max_read/max_write */
#define WORKER_RING_DEPTH	64

/* What a FUSE handler may use on the thread that serves it. */
struct worker {
	struct engine engine;		/* made by the worker's own thread */
	int engine_ok;
	void *read_buf;			/* WORKER_MAX_IO bytes, page aligned */
};

struct workers;

/* The worker running the calling FUSE handler. */
struct worker *worker_self(void);

/*
 * Makes @w the calling thread's worker: registers the thread with liburcu
 * and makes its engine (which binds the ring to this thread).  The caller
 * sets w->read_buf.  0 or -errno; worker_leave undoes it, on this thread.
 */
int worker_enter(struct worker *w);
void worker_leave(struct worker *w);

/*
 * Starts @nr /dev/fuse workers on a mounted @se, with room for up to @max
 * (workers_add).  0 or -errno; either way *out holds the workers that run,
 * and the caller ends the session and joins them.
 */
int workers_start(struct fuse_session *se, unsigned int nr, unsigned int max,
		  struct workers **out);
/* Starts more workers, up to @nr in all.  0 or -errno. */
int workers_add(struct workers *ws, unsigned int nr);
/*
 * Ends every worker while the session is still up: a worker waiting for a
 * request returns at once, one serving a request answers it first.  The
 * caller then joins them; requests nobody read fail (ENOTCONN) when the
 * session's descriptor closes.
 */
void workers_cancel(struct workers *ws);
/* Waits until every worker saw the session end, then frees them. */
void workers_join(struct workers *ws);

#endif
