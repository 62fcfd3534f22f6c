/*
 * fs/transport.h: the session's own I/O, between libfuse and the kernel.
 *
 * libfuse 3.14 knows neither FUSE over io_uring nor the INIT flags after
 * FUSE 7.38, so we install our own read and writev on the session
 * (fuse_session_custom_io) and let libfuse parse requests and build
 * replies as before.  On the way through:
 *
 *  - the INIT request's 64-bit flags are noted, and the INIT reply gets
 *    the flags we want that libfuse cannot ask for (FUSE_OVER_IO_URING,
 *    FUSE_DIRECT_IO_ALLOW_MMAP), where the kernel offered them;
 *  - an open reply that the handler marked gets FOPEN_PARALLEL_DIRECT_WRITES
 *    (kernel 6.2+): without it the kernel takes the inode lock exclusively
 *    for every direct write, so writers to one volume are served one at a
 *    time.  Volumes never change size through writes, which is the
 *    condition for taking it shared;
 *  - a reply is first offered to the reply hook of the worker on the
 *    calling thread (worker.h): a ring thread's hook writes the reply to
 *    its request into the io_uring entry's buffers (uring_transport.c
 *    commits it).  Every other reply and every notification goes to
 *    /dev/fuse with writev.
 *
 * One mount per process: the state here is the process's.
 */
#ifndef MAPPERFS_TRANSPORT_H
#define MAPPERFS_TRANSPORT_H

#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>

/* Which transport serves the mount. */
enum transport_kind {
	TRANSPORT_DEV_FUSE,	/* read and writev on /dev/fuse */
	TRANSPORT_IO_URING,	/* per-CPU io_uring queues (uring_transport.c) */
};

/* Installs the transport on a mounted session.  0 or -errno. */
int transport_install(struct fuse_session *se);

/* The calling thread's next reply is an OPEN reply that allows parallel writes. */
void transport_mark_parallel_open(void);

/*
 * Asks for 64-bit kernel INIT flags (FUSE_* of linux/fuse.h, fuse_abi.h)
 * in the INIT reply, as far as the kernel offers them.  Called from the
 * init handler, or before the mount for transport flags.
 */
void transport_want_init_flags(uint64_t flags);

/*
 * Waits until the INIT reply was written (or the session ended first:
 * -ENOTCONN).  Then *granted holds the flags we asked for and the kernel
 * offered (the kernel acts on exactly those).  Blocks.
 */
int transport_wait_init(uint64_t *granted);

/* A /dev/fuse worker saw the session end: wakes transport_wait_init. */
void transport_session_ended(void);

/* Records which transport serves the mount, for transport_name(). */
void transport_set_kind(enum transport_kind kind);

/* "io_uring" or "dev-fuse": the transport serving the mount now. */
const char *transport_name(void);

#endif
