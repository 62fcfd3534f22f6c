/*
 * core/io/layout_area.h: the copies of the pool's layout that every raw
 * device carries, as LVM keeps its metadata on every physical volume, so
 * that a pool whose database is lost can be rebuilt from its devices
 * (`mapperctl recover`).
 *
 * Between the label (the first LABEL_SIZE bytes) and the data (from
 * DEVICE_DATA_OFFSET) lie two slots of LAYOUT_SLOT_SIZE bytes.  A copy is a
 * header (magic, pool uuid, sequence number, length, the text's crc32,
 * the header's crc32) and the layout text (layout.h).  The pool numbers
 * its layouts; copy N goes to slot N % 2, so the copy before it stays
 * whole while the next one is written: a write torn by a power cut leaves
 * one damaged slot and the previous layout in the other.
 *
 * No volume's request reaches these bytes (extents start at
 * DEVICE_DATA_OFFSET), so they are read and written through the device's
 * buffered descriptor, like the label.
 */
#ifndef MAPPERFS_LAYOUT_AREA_H
#define MAPPERFS_LAYOUT_AREA_H

#include <stddef.h>
#include <stdint.h>

#include "label.h"
#include "uuid.h"

struct device;

#define LAYOUT_SLOT_SIZE	((DEVICE_DATA_OFFSET - LABEL_SIZE) / 2)	/* bytes */
#define LAYOUT_SLOT_HEADER	64					/* bytes */
#define LAYOUT_TEXT_MAX		(LAYOUT_SLOT_SIZE - LAYOUT_SLOT_HEADER)	/* bytes */

enum layout_slot_state {
	LAYOUT_SLOT_EMPTY,		/* no copy was ever written there */
	LAYOUT_SLOT_GOOD,
	LAYOUT_SLOT_DAMAGED,		/* a copy whose checksum fails */
};

struct layout_slot {
	enum layout_slot_state state;
	struct uuid pool;		/* GOOD; DAMAGED if its header is whole */
	uint64_t seq;			/* the same */
	char *text;			/* GOOD: malloc'ed, NUL-terminated */
	size_t len;			/* bytes of text */
};

struct layout_area {
	struct layout_slot slot[2];
};

/*
 * Reads both slots of @dev.  0 (each slot's state set;
 * a device too small for the area reads as empty), -ENOMEM or -EIO.
 * Blocks: one read of 1 MiB.
 */
int layout_area_read(struct device *dev, struct layout_area *out);
/* The good slot with the highest seq, or NULL. */
const struct layout_slot *layout_area_newest(const struct layout_area *a);
void layout_area_release(struct layout_area *a);

/*
 * Writes copy @seq of pool @pool's layout (@len bytes of @text) to slot
 * @seq % 2 of @dev and syncs it.  0, -EFBIG if @len > LAYOUT_TEXT_MAX,
 * or -errno.  Blocks on the device.
 */
int layout_area_write(struct device *dev, const struct uuid *pool, uint64_t seq,
		      const char *text, size_t len);

#endif
