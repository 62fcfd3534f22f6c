/*
 * meta/space.h: free space on the raw devices, LVM-style.
 *
 * A device's data area is [DEVICE_DATA_OFFSET, size); whatever no extent
 * covers is free.  Allocation is first fit over the devices in the order
 * given, each new extent starting 1 MiB aligned, spilling to the next
 * device when one is full, so a volume may span several devices.
 * Blocks on SQLite (admin path).
 */
#ifndef MAPPERFS_SPACE_H
#define MAPPERFS_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define SPACE_ALIGN	(1u << 20)	/* bytes: new extents start aligned */

struct space_range {
	int64_t device;
	uint64_t offset;		/* bytes */
	uint64_t length;		/* bytes */
};

/* Free ranges of one device by offset.  *out is malloc'ed. */
int space_free_ranges(struct store *s, const struct device_rec *d,
		      struct space_range **out, size_t *nr);
/* Bytes free on a device (summed over its free ranges). */
int space_free_bytes(struct store *s, const struct device_rec *d, uint64_t *out);

/*
 * Carves @length bytes from the devices @devices (all devices by id when
 * @nr_devices is 0).  Returns the pieces in order; nothing is written to
 * the store.  -ENOSPC if they do not have that much free in total.
 */
int space_allocate(struct store *s, const int64_t *devices, size_t nr_devices,
		   uint64_t length, struct space_range **out, size_t *nr);

/*
 * Checks that [offset, offset + length) of @d is inside its data area and
 * free.  0, -ERANGE past the end or before the data area, -EEXIST if an
 * extent overlaps it.
 */
int space_check_free(struct store *s, const struct device_rec *d,
		     uint64_t offset, uint64_t length);

#endif
