/*
 * core/io/direct.h: reads and writes of a device's data at any offset,
 * length and buffer, through the one descriptor that serves its data.
 *
 * O_DIRECT wants the offset and length on multiples of dio_off_align
 * and the buffer on a multiple of dio_mem_align (device.h).  The io
 * engine sends what meets that straight to its ring; the rest comes
 * here, and goes to the same descriptor, never to the page cache
 * (device.h says why):
 *
 *  - a buffer off its alignment is copied through an aligned bounce
 *    buffer;
 *  - a read that starts or ends inside a unit reads the units it touches
 *    and copies out its part;
 *  - a write that starts or ends inside a unit is a read-modify-write:
 *    the units are read, patched and written back whole, holding them
 *    alone in the device's range lock (rangelock.h), so that neither a
 *    write that lands on them meanwhile nor another read-modify-write of
 *    them is undone.
 *
 * Every other write shares the range lock while it runs; the engine
 * shares it for the writes it queues itself (engine.c).  Reads take
 * nothing: a unit read while it is rewritten is read old or new, as a
 * disk's sector would be.
 *
 * A device without fd_direct is read and written through its buffered
 * descriptor, at any alignment, with no lock: the kernel does that.  An
 * NBD device (device.h) is served as one with fd_direct, through its
 * link, its unit the server's minimum block size.
 *
 * The units touched never leave the 4 KiB-aligned piece that holds the
 * request, since dio_off_align is at most 4 KiB (device.c) and extents
 * are 4 KiB-aligned (space.h): a read-modify-write never reaches another
 * volume's bytes or the end of the device.
 */
#ifndef MAPPERFS_DIRECT_H
#define MAPPERFS_DIRECT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "device.h"

#define DIRECT_BOUNCE_MAX	(256u << 10)	/* bytes bounced per call */

/* Offset, length and buffer are as fd_direct needs them. */
static inline bool direct_aligned(const struct device *dev, uint64_t off, uint64_t len,
				  const void *buf)
{
	return ((off | len) & (dev->dio_off_align - 1)) == 0 &&
	       ((uintptr_t)buf & (dev->dio_mem_align - 1)) == 0;
}

/*
 * As pread(2) and pwrite(2) on @dev's data: the bytes transferred, fewer
 * than @len only at the end of the device (0 there) or when a piece is
 * bounced (at most DIRECT_BOUNCE_MAX at a time: call again for the rest),
 * or -errno.  Blocks on the I/O, and a write also on the range lock:
 * call holding nothing of any device's range lock.
 */
ssize_t direct_pread(struct device *dev, void *buf, size_t len, uint64_t off);
ssize_t direct_pwrite(struct device *dev, const void *buf, size_t len, uint64_t off);

#endif
