/*
 * core/io/space.h: free space on the raw devices, LVM-style.
 *
 * A device's data area is [DEVICE_DATA_OFFSET, size); whatever no extent
 * covers is a free range.  Allocation is first fit over the devices in
 * the order given, each new extent starting 1 MiB aligned, spilling to
 * the next device when one is full, so a volume may span several
 * devices.  The extents are the pool's, in memory; every call is
 * O(extents log extents) and never blocks.
 *
 * Free space is counted as allocation uses it, so that what a device is
 * said to have free can be allocated to the byte: each free range counts
 * from its first 1 MiB boundary to its last 4 KiB boundary.  As LVM
 * allocates whole physical extents, an allocated extent takes the rest of
 * its last MiB with it: a 4 KiB volume uses 1 MiB of free space, and
 * only that volume can grow into the rest (allocation after @prefer).
 */
#ifndef MAPPERFS_SPACE_H
#define MAPPERFS_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include "records.h"

#define SPACE_ALIGN	(1u << 20)	/* bytes: new extents start aligned */

struct space_range {
	int64_t device;
	uint64_t offset;		/* bytes */
	uint64_t length;		/* bytes */
};

/* Free ranges of device @d by offset, given every extent.  *out malloc'ed. */
int space_free_ranges(const struct extent_rec *ext, size_t nr_ext,
		      const struct device_rec *d, struct space_range **out,
		      size_t *nr);
/*
 * Bytes an allocation can take from @d, given every extent: the free
 * ranges from their first 1 MiB boundary (or from @prefer, for the range
 * that starts there; UINT64_MAX: none) to their last 4 KiB boundary.
 * 0 if out of memory.
 */
uint64_t space_free_bytes(const struct extent_rec *ext, size_t nr_ext,
			  const struct device_rec *d, uint64_t prefer);

/*
 * Carves @length bytes from @devs, in order (a device listed twice counts
 * once).  Returns the pieces in order; nothing changes.  -ENOSPC if they
 * do not have that much free in total (space_free_bytes), -ENOMEM.
 */
int space_allocate(const struct extent_rec *ext, size_t nr_ext,
		   const struct device_rec *const *devs, size_t nr_devs,
		   uint64_t length, struct space_range **out, size_t *nr);
/*
 * The same, taking first on devs[0] the free range that starts at byte
 * @prefer (the end of the volume that grows: it stays contiguous), if
 * there is one, in pieces of whole @grain bytes each (a thin pool's
 * blocks; 1: any) when @length is a multiple of it.
 */
int space_allocate_after(const struct extent_rec *ext, size_t nr_ext,
			 const struct device_rec *const *devs, size_t nr_devs,
			 uint64_t prefer, uint64_t length, uint64_t grain,
			 struct space_range **out, size_t *nr);

#endif
