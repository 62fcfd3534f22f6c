/*
 * core/target/image.h: the image target: a read-only image file or block
 * device, whole, as the external origin that thin volumes read their
 * unwritten blocks from (thin.h: thin_set_origin).
 *
 * It is opened read-only, and guarded against other writers where the
 * kernel lets us: a file by a read lease, a block device by the kernel's
 * read-only flag.  Once a writer reached it, every read of it fails
 * (fenced), so a volume over it never shows old and new bytes mixed.
 * image.c says what the guard catches and what not.  Its holes show
 * through to SEEK_DATA and SEEK_HOLE, as the file has them.
 */
#ifndef MAPPERFS_IMAGE_H
#define MAPPERFS_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "target.h"

/*
 * Opens the image at @path and takes its guard.  Blocks (open, fstat).
 * 0, -ETXTBSY if another program has the file open for writing now (no
 * lease can be had: refused, since its writes would show through), or
 * device_open_shared's -errno (-ENOENT, -EBUSY: held as a raw device).
 */
int image_open(const char *path, struct target **out);

/* Its size in bytes, as found at open. */
uint64_t image_size(const struct target *t);

/*
 * Its identity as the file system tells it now (fstat of the descriptor
 * it reads): size in bytes and mtime in nanoseconds since the epoch (0
 * for a block device, whose node's mtime says nothing of its content).
 * Blocks briefly.  0 or -errno.
 */
int image_identity(const struct target *t, uint64_t *size, int64_t *mtime_ns);

/*
 * Whether writers are kept out, and if not, why, in @why (a phrase: "the
 * daemon may not lease another user's file ...").  Never blocks.
 */
bool image_guarded(const struct target *t, char *why, size_t len);

/*
 * Looks whether a writer reached the image since the last look: a broken
 * lease (someone opened the file for writing or truncated it; the kernel
 * holds them back until we let go).  Then fences it, lets go of the
 * lease and returns true, once; false otherwise.  One fcntl.  The
 * monitor calls it about once a second.
 */
bool image_watch(struct target *t);

/* Whether reads of it fail, since image_watch fenced it. */
bool image_fenced(const struct target *t);

/*
 * Serves a fenced image again, if it is still the one recorded: takes
 * its read lease again, which the kernel grants only while nobody has it
 * open for writing (and which any later writer breaks, for image_watch
 * to fence it as before); then, leased, compares its identity
 * (image_identity) with @size and @mtime_ns (0: not recorded, not
 * compared); only then lifts the fence.  In that order, no writer can
 * slip in between the comparison and the reads.  0 (also if it was not
 * fenced); -ETXTBSY if a program has it open for writing now, -ESTALE if
 * it changed, or the lease's -errno: it stays fenced and unleased.
 * Blocks briefly (fcntl, fstat).  Not at once with image_watch (the
 * callers serialise both).
 */
int image_unfence(struct target *t, uint64_t size, int64_t mtime_ns);

#endif
