/*
 * fs/uring_transport.h: FUSE over io_uring (kernel 6.14+), requests served
 * on the CPU that issued them.
 *
 * The kernel keeps one request queue per possible CPU and puts a request
 * on the queue of the CPU its issuer runs on.  For each queue we run a few
 * threads pinned to that CPU; each thread owns an io_uring and one ring
 * entry (a header buffer and a 1 MiB page-aligned payload buffer it
 * handed to the kernel).  A thread waits in io_uring_enter until the
 * kernel copies a request into its entry, serves it with the same
 * handlers as /dev/fuse (fs/ops.c, through libfuse), and answers with one
 * submission that commits the reply and fetches the next request: one
 * system call per request, and no thread of another CPU to wake on the
 * way in or out.  A request's backing I/O goes through the serving
 * thread's own io engine, so when the backing device answers at once
 * (tmpfs, RWF_NOWAIT devices) the request never leaves the thread.
 *
 * The kernel hands a request to the entry made available last, so at low
 * load one hot thread per CPU serves everything; the others take over
 * while it is busy (a slow fsync, a thin write waiting for space), which
 * a single thread per queue could not.
 *
 * How libfuse's buffers meet the ring's: libfuse parses a request from one
 * contiguous buffer (in-header, op struct, payload), but the kernel writes
 * the in-header and op struct into the entry's header buffer and the rest
 * into the payload buffer.  The payload buffer is preceded by one page of
 * our own, so we copy the 40-byte in-header and the op struct (at most 128
 * bytes) just in front of the payload and hand libfuse that: a WRITE's data
 * stays where the kernel put it, page aligned for O_DIRECT backings.
 * Replies come back through the session's writev (transport.c), which
 * copies them into the entry (a read served into the payload buffer itself
 * is not copied), and the thread commits.
 *
 * Notifications (daemon to kernel), FORGET and INTERRUPT still travel over
 * /dev/fuse: at least one /dev/fuse worker keeps running.
 */
#ifndef MAPPERFS_URING_TRANSPORT_H
#define MAPPERFS_URING_TRANSPORT_H

#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <sys/uio.h>

struct uring_transport;

/* The ring queues the kernel expects: one per possible CPU. */
unsigned int uring_transport_nr_queues(void);

/*
 * Whether this kernel lets us ask for FUSE over io_uring now: 0, or
 * -EOPNOTSUPP with a phrase in *why (not built in; enable_uring is N).
 * Reads sysfs.
 */
int uring_transport_check_kernel(const char **why);

/*
 * Starts @per_queue threads per queue on a mounted @se; each pins itself
 * to its CPU, makes its io_uring and buffers, and waits.  Returns once all
 * are ready: 0, or -errno (then nothing is left running).
 */
int uring_transport_prepare(struct fuse_session *se, unsigned int per_queue,
			    struct uring_transport **out);

/*
 * After the kernel granted FUSE_OVER_IO_URING at INIT: every thread hands
 * its entry to the kernel, which starts using the rings once every queue
 * has one.  Returns 0, or -errno if the kernel refused an entry (it then
 * falls back to /dev/fuse by itself).
 */
int uring_transport_start(struct uring_transport *t);

/* The threads that serve: nr_queues x per_queue. */
unsigned int uring_transport_threads(const struct uring_transport *t);

/*
 * Ends threads that were never started (INIT did not grant the ring), or
 * waits for the threads of a started transport to see the session end;
 * then frees everything.  Blocks.
 */
void uring_transport_join(struct uring_transport *t);

/*
 * For the session's writev: if the calling thread is serving a ring
 * request and @iov is its reply, puts the reply into the ring entry, sets
 * *res to what writev would have returned, and returns true.  Otherwise
 * returns false and the reply goes to /dev/fuse.
 */
bool uring_transport_reply(const struct iovec *iov, int count, ssize_t *res);

#endif
