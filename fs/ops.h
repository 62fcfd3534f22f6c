/*
 * fs/ops.h: the FUSE low-level operations of the volume directory.
 *
 * The mount is one flat directory (inode 1) holding one regular file per
 * volume (inode = volume id + 1).  Files are opened with direct_io: the
 * kernel's page cache never holds volume data, so what a snapshot,
 * rollback or another opener changed is what the next read sees, and
 * requests keep their size on the way to the backing devices.
 * Attributes and entries are never cached (timeouts 0): a size changed by
 * `mapperctl extend` or a volume created shows at once.
 */
#ifndef MAPPERFS_OPS_H
#define MAPPERFS_OPS_H

#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "volume.h"

#define ROOT_INO		FUSE_ROOT_ID
#define OPS_MAX_BACKGROUND	128	/* async requests in flight per mount */

extern const struct fuse_lowlevel_ops mapperfs_ops;

/*
 * The data path without libfuse: a transport that parses requests itself
 * (the io_uring rings, uring_transport.h) serves READ, WRITE and FSYNC of
 * an open file (@fh as the open answered it) through these, on a worker
 * thread (worker.h), with the same volume calls as the libfuse handlers.
 * Each blocks on the backing I/O as the handlers do.
 *
 * read: up to @size bytes (at most WORKER_MAX_IO) at @off into @buf: the
 * bytes read (0 at or past the end), or -errno; with @w, -EINPROGRESS
 * when the read waits for its pool's loader instead of faulting its map
 * in (volume_read_or_wait): @w->loaded says when to read it, without @w.
 * write: @size bytes from @buf at @off; @open_flags are the opener's
 * (O_DSYNC: durable before it returns): the bytes written, or -errno.
 * fsync: 0 or -errno.
 *
 * start (NULL: nothing parks): a READ (@write false) or WRITE parked instead (volume_start,
 * engine.h: the thread's engine carries it while the thread serves
 * others): -EINPROGRESS, or -EAGAIN when it cannot be (a WRITE with
 * O_DSYNC never is): serve it with read or write, after engine_drain.
 * finish: once engine_reap returned &io->job, the bytes read or
 * written, or -EAGAIN: the devices failed it, and retry, called once the
 * thread drained, ends it (volume_finish, volume_retry).
 */
struct ops_io {
	ssize_t (*read)(uint64_t fh, uint64_t off, uint32_t size, void *buf,
			struct volume_wait *w);
	ssize_t (*write)(uint64_t fh, uint64_t off, const void *buf, uint32_t size,
			 uint32_t open_flags);
	int (*fsync)(uint64_t fh);
	int (*start)(struct volume_io *io, uint64_t fh, bool write, uint64_t off, void *buf,
		     uint32_t size, uint32_t open_flags);
	ssize_t (*finish)(struct volume_io *io);
	ssize_t (*retry)(struct volume_io *io);
};

extern const struct ops_io mapperfs_io;

#endif
