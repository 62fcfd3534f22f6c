/*
 * core/io/device.h: a raw device (block device or regular file) held open.
 *
 * A device's data is read and written through one descriptor, never two.
 * Where the device takes O_DIRECT, that is fd_direct, for every request
 * whatever its alignment (direct.h makes aligned ones of the others), and
 * the backing's page cache holds none of the data.  Linux does not keep
 * cached and direct writes to one file coherent: a direct write drops the
 * cached pages it covers, and when a cached write holds one at that
 * moment the kernel cannot, warns "Page cache invalidation failure on
 * direct I/O" and marks the file with EIO, which the next fdatasync
 * returns, while the stale page may later overwrite the direct write.
 * (Issue 25: 512-byte writes sent cached, racing 4 KiB ones sent direct.)
 *
 * The buffered descriptor fd serves the label, which lies in the first
 * LABEL_SIZE bytes that no volume's request reaches, fallocate and
 * fdatasync; and all the data of a device that cannot do direct I/O: a
 * file system that refuses O_DIRECT or says it cannot (statx
 * STATX_DIOALIGN), and a memory-backed file (tmpfs, ramfs), whose page
 * cache is the data: O_DIRECT there would be buffered I/O by another name.
 *
 * The alignment fd_direct needs comes from statx(STATX_DIOALIGN) (512
 * bytes for a file on a disk with 512-byte sectors); where the kernel
 * does not say (before Linux 6.1 for files, 6.11 for block devices), it
 * is a block device's logical block size, or 4 KiB for a file, which no
 * local file system refuses.  A device that wants more than 4 KiB is
 * served buffered: the units of a read-modify-write must stay inside the
 * 4 KiB-aligned extents (direct.h).
 *
 * Every write, zeroing and flush of a device goes through this file or
 * the io engine, which record it in the write log when a power-cut test
 * asks for one (writelog.h); otherwise log_file is 0 and nothing happens.
 *
 * A regular file on tmpfs or ramfs is also mapped read-only: its page
 * cache is the data, so a read reply can be written to /dev/fuse straight
 * from the mapping with one copy, where reading it into a buffer first
 * would cost two (on a real device, DMA fills the buffer and the reply is
 * the one copy).  A fault on the mapping surfaces as EFAULT/EIO in the
 * kernel's copy, never as a signal in the daemon.
 *
 * Opening claims the device for this process (device.c): an O_EXCL open of
 * a block device, an flock on a regular file, held until the last struct
 * device of this process on it is closed.  Another process that opens it
 * meanwhile gets -EBUSY; device_strerror() says who holds it.
 *
 * A device whose path is an NBD URI (nbd_link.h) has no descriptor: fd
 * and fd_direct are -1, its data goes through its link (the engine sends
 * it with nbd_batch.h, direct.c the rest), and the calls below go there
 * too.  It is never in the page cache, like a device with fd_direct, and
 * its block size is its unit (dio_off_align).
 */
#ifndef MAPPERFS_DEVICE_H
#define MAPPERFS_DEVICE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "label.h"

struct claim;
struct rangelock;
struct stat;

/* What device_clean counts, per file (below). */
struct device_writes {
	_Atomic uint64_t returned;	/* writes, zeroings, discards that returned */
	_Atomic uint64_t flushed;	/* of those, covered by a flush that succeeded */
};

struct device {
	int64_t id;			/* the pool's id for it; 0 if none */
	char *path;
	int fd;				/* buffered: label, fallocate, fdatasync (read-only: shared) */
	int fd_direct;			/* O_DIRECT: all the data; -1: fd has it */
	unsigned int dio_off_align;	/* bytes: offsets and lengths on fd_direct */
	unsigned int dio_mem_align;	/* bytes: buffers on fd_direct */
	struct rangelock *lock;		/* this file's in this process: direct.h */
	bool nowait;			/* takes RWF_NOWAIT: io_uring runs it inline */
	uint64_t size;			/* bytes, as found at open */
	const char *mem;		/* memory-backed file mapped read-only, or NULL */
	struct claim *claim;		/* this process's hold on it (device.c) */
	uint64_t log_file;		/* its id in the write log (writelog.h), or 0 */
	struct nbd_link *nbd;		/* an NBD export, or NULL */
	struct device_writes *writes;	/* its claim's, or NULL (never clean) */
};

/* Its data bypasses the page cache: O_DIRECT, or over NBD. */
static inline bool device_unbuffered(const struct device *dev)
{
	return dev->fd_direct >= 0 || dev->nbd;
}

/*
 * Opens @path read-write and claims it.  Blocks (open, fstat; for an NBD
 * URI, the connection, up to the link's timeout).  Returns 0, -ENOENT if
 * it does not exist, -ENOTBLK if it is neither a block device nor a
 * regular file nor an NBD URI, -EBUSY if another process holds it (or,
 * for a block device, it is mounted), -EHOSTUNREACH if an NBD server did
 * not answer, or another -errno.
 */
int device_open(const char *path, int64_t id, struct device **out);
/*
 * The same for a device that is only read (an external origin image),
 * opened read-only and without an O_DIRECT descriptor (its readers share
 * the page cache): a file is claimed shared, so several pools may read
 * it, and -EBUSY means another process holds it exclusively (as a raw
 * device); a block device is not claimed.
 */
int device_open_shared(const char *path, struct device **out);
/*
 * Whether @a and @b are one file, or one block device (through any of its
 * nodes): the identity under which devices are claimed.
 */
bool device_same_file(const struct stat *a, const struct stat *b);
/*
 * open(2) of @path with @flags, but only if it is a regular file or a
 * block device: it is first opened O_PATH, which has no side effect on
 * anything else (a FIFO does not block, a character device's driver is
 * not called), looked at, then opened for real through /proc/self/fd, so
 * that what is opened is what was looked at.  Follows links.  A path a
 * pool names (its database's rows) may be anything: the device and image
 * opens go through here.  The descriptor, or -ENOTBLK for anything else,
 * or -errno.
 */
int device_open_path(const char *path, int flags);
void device_close(struct device *dev);

/*
 * Whether @path could be opened now, looked at cheaply: a file or block
 * device opens read-only (device_open_path), an NBD server completes a
 * handshake within @ms milliseconds.  Claims nothing, reads no label:
 * device_open still decides.  Blocks up to @ms.
 */
bool device_answers(const char *path, unsigned int ms);

/*
 * Describes error @r of device_open(@path) in @buf, one phrase: for
 * -EBUSY who holds the device ("in use by mapperfs (pid 1234)", "in use:
 * mounted on '/mnt'"), else strerror.  Reads /proc.  Returns @buf.
 */
const char *device_strerror(const char *path, int r, char *buf, size_t len);

/*
 * Reads or writes @len bytes at @off of @dev outside its volumes' data
 * (its label, its layout area, a signature probe), through the buffered
 * descriptor or the NBD link.  Blocks.  0, -ENODATA for a read past the
 * end, or -errno.  A write is not synced.
 */
int device_read_at(struct device *dev, void *buf, size_t len, uint64_t off);
int device_write_at(struct device *dev, const void *buf, size_t len, uint64_t off);

/*
 * A descriptor a signature probe (probe.h) can read @dev through: its
 * own, or, for a device without one (NBD), a sparse copy in memory of
 * its first and last PROBE_SPAN bytes, where signatures lie.  Close it.
 * Blocks.  The descriptor or -errno.
 */
#define PROBE_SPAN	(1u << 20)
int device_probe_fd(struct device *dev);

/* Reads the label.  Returns 0, -ENODATA, -EBADMSG or -EIO. */
int device_label_read(struct device *dev, struct device_label *out);
/* The same from any open file or block device @fd (an origin, say). */
int device_label_read_fd(int fd, struct device_label *out);
/* Writes and syncs the label.  Returns 0 or -errno. */
int device_label_write(struct device *dev, const struct device_label *l);

/*
 * Checks that @dev is the device @expect describes: its label names the
 * same pool and device, and it is not smaller than recorded.  Returns 0,
 * or -EINVAL and a reason in @why (a phrase such as "carries the label of
 * another device").  Reads only.
 */
int device_verify(struct device *dev, const struct device_label *expect,
		  char *why, size_t why_len);

/*
 * lseek(@whence, SEEK_DATA or SEEK_HOLE) on @dev from byte @off: where its
 * next data or hole starts, as its file system knows (a block device, and
 * a file system that does not know, answer all data: their lseek fails
 * with EINVAL).  Blocks briefly on the file's inode.  0, -ENXIO at or past
 * the end (SEEK_DATA: no data from @off to the end), or -errno.
 */
int device_seek(struct device *dev, uint64_t off, int whence, uint64_t *out);

/*
 * fdatasync, unless device_clean says nothing completed since the last
 * one.  Blocks.  Returns 0 or -errno.
 */
int device_sync(struct device *dev);

/*
 * Flushes that would make nothing durable are skipped.  The claim on a
 * device's file (one per file in this process, however many struct
 * devices stand for it) counts the writes, zeroings and discards of it
 * that returned, and how many of them the last flush that succeeded
 * covers; while the two are equal a flush is skipped.  The count starts
 * one ahead, so the first flush after the file is claimed never is.  A
 * write counts once its call returned, failed or not (it may have reached
 * some sectors), before anyone learns that it completed; a flush takes
 * the count before it is issued, so it covers every write it counts.
 * When the write log records, a write counts again after its record and a
 * flush takes its issue point after its count, so that the log shows the
 * writes a skipped flush skipped as flushed already.
 */

/* A write, zeroing or discard of @dev returned.  One atomic add. */
static inline void device_note_write(struct device *dev)
{
	if (dev->writes)
		atomic_fetch_add(&dev->writes->returned, 1);
}

/*
 * Whether no write of @dev returned since a flush that succeeded began:
 * a flush now would make nothing durable.  Never for an NBD device (its
 * server may hold other writers' data; nothing is lost by flushing).
 */
static inline bool device_clean(const struct device *dev)
{
	return !dev->nbd && dev->writes &&
	       atomic_load(&dev->writes->flushed) == atomic_load(&dev->writes->returned);
}

/* What a flush about to be issued covers: for device_note_flushed. */
static inline uint64_t device_flush_begins(const struct device *dev)
{
	return dev->writes ? atomic_load(&dev->writes->returned) : 0;
}

/* A flush that began at @covered (device_flush_begins) succeeded. */
void device_note_flushed(struct device *dev, uint64_t covered);

/*
 * Makes [off, off + len) of @dev read as zeros: fallocate(PUNCH_HOLE) when
 * @punch (space goes back to the file system), ZERO_RANGE otherwise, and
 * written zeros where the device supports neither.  Blocks.  0 or -errno.
 */
int device_zero(struct device *dev, uint64_t off, uint64_t len, int punch);

/*
 * Tells the device that [off, off + len) holds nothing worth keeping: a
 * hole punched in a file (its space goes back to the file system),
 * BLKDISCARD on a block device.  What the range reads afterwards is
 * unspecified.  Blocks.  0, -EOPNOTSUPP where the device cannot, or
 * -errno.
 */
int device_discard(struct device *dev, uint64_t off, uint64_t len);

#endif
