/*
 * fs/workers.h: the threads that serve FUSE requests.
 *
 * We run our own receive loop instead of fuse_session_loop_mt() for two
 * reasons.  libfuse 3.14 puts a WRITE's payload 80 bytes into the receive
 * buffer; each worker's buffer starts 80 bytes before a page boundary, so
 * the payload is page aligned and goes to O_DIRECT backings untouched.
 * And each worker owns what the I/O path needs without a lock: its
 * io_uring, a page-aligned read buffer, and its liburcu registration.
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

struct worker {
	pthread_t thread;
	struct fuse_session *se;
	struct engine engine;		/* made by the worker's own thread */
	int engine_ok;
	char *recv_mem;			/* allocation behind fbuf.mem */
	struct fuse_buf fbuf;
	void *read_buf;			/* WORKER_MAX_IO bytes, page aligned */
};

struct workers;

/* The worker running the calling FUSE handler. */
struct worker *worker_self(void);

/*
 * Starts @nr workers on a mounted @se.  0 or -errno; either way *out holds
 * the workers that run, and the caller ends the session and joins them.
 */
int workers_start(struct fuse_session *se, unsigned int nr, struct workers **out);
/*
 * Ends every worker while the session is still up: a worker waiting for a
 * request returns at once, one serving a request answers it first.  The
 * caller then joins them; requests nobody read fail (ENOTCONN) when the
 * session's descriptor closes.
 */
void workers_cancel(struct workers *w);
/* Waits until every worker saw the session end, then frees them. */
void workers_join(struct workers *w);

#endif
