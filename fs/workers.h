/*
 * fs/workers.h: the threads that serve FUSE requests from /dev/fuse.
 *
 * We run our own receive loop instead of fuse_session_loop_mt() for two
 * reasons.  libfuse 3.14 puts a WRITE's payload 80 bytes into the receive
 * buffer; each worker's buffer starts 80 bytes before a page boundary, so
 * the payload is page aligned and goes to O_DIRECT backings untouched.
 * And each thread must be a struct worker (worker.h) before it serves,
 * which libfuse's loop has no place for.
 *
 * Each worker handles one request at a time, synchronously; concurrency
 * comes from the number of workers (the kernel hands each request in
 * /dev/fuse to one blocked reader).
 */
#ifndef MAPPERFS_WORKERS_H
#define MAPPERFS_WORKERS_H

#include <fuse_lowlevel.h>

struct workers;

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
