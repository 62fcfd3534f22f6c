/*
 * core/space.h: free space on the raw devices, LVM-style.
 *
 * A device's data area is [DEVICE_DATA_OFFSET, size); whatever no extent
 * covers is free.  Allocation is first fit over the devices in the order
 * given, each new extent starting 1 MiB aligned, spilling to the next
 * device when one is full, so a volume may span several devices.  The
 * extents are the pool's, in memory; every call is O(extents log
 * extents) and never blocks.
 */
#ifndef MAPPERFS_SPACE_H
#define MAPPERFS_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include "pool_meta.h"

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
/* Bytes free on @d (0 if out of memory). */
uint64_t space_free_bytes(const struct extent_rec *ext, size_t nr_ext,
			  const struct device_rec *d);

/*
 * Carves @length bytes from @devs, in order (a device listed twice counts
 * once).  Returns the pieces in order; nothing changes.  -ENOSPC if they
 * do not have that much free in total, -ENOMEM.
 */
int space_allocate(const struct extent_rec *ext, size_t nr_ext,
		   const struct device_rec *const *devs, size_t nr_devs,
		   uint64_t length, struct space_range **out, size_t *nr);
/*
 * The same, taking first on devs[0] the free range that starts at byte
 * @prefer (the end of the volume that grows: it stays contiguous), if
 * there is one.
 */
int space_allocate_after(const struct extent_rec *ext, size_t nr_ext,
			 const struct device_rec *const *devs, size_t nr_devs,
			 uint64_t prefer, uint64_t length, struct space_range **out,
			 size_t *nr);

#endif
