/*
 * core/io/layout_area.h: the copies of the pool's layout that every raw
 * device carries, as LVM keeps its metadata on every physical volume, so
 * that a pool whose database is lost can be rebuilt from its devices
 * (`mapperctl recover`).
 *
 * Between the label (the first LABEL_SIZE bytes) and the data (from
 * DEVICE_DATA_OFFSET) lie two slots of LAYOUT_SLOT_SIZE bytes.  A copy is a
 * header (magic, pool uuid, sequence number, lengths, how the text is
 * stored, the stored bytes' crc32, the header's crc32) and the layout text
 * (layout.h), deflated by zlib: the text of 10,000 thin volumes is 2 MB,
 * four times the slot, and so repetitive that it deflates some 30 times.
 * Copies written before compression (the header's version byte, the last
 * of the magic, is 0) hold the text as it is, and read as well.  A text
 * too big even deflated leaves a marker instead (LAYOUT_SLOT_OVERFLOW):
 * its number and size, no text, so that a reader knows the copy beside it
 * is stale rather than take it for the pool's layout.
 *
 * A copy goes to the slot that does not hold the device's last good copy
 * (the caller keeps which: slot N % 2 while every copy fits), so a write
 * torn by a power cut leaves one damaged slot and the previous layout in
 * the other.
 *
 * No volume's request reaches these bytes (extents start at
 * DEVICE_DATA_OFFSET), so they are read and written through the device's
 * buffered descriptor, like the label.
 */
#ifndef MAPPERFS_LAYOUT_AREA_H
#define MAPPERFS_LAYOUT_AREA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "label.h"
#include "uuid.h"

struct device;

#define LAYOUT_SLOT_SIZE	((DEVICE_DATA_OFFSET - LABEL_SIZE) / 2)	/* bytes */
#define LAYOUT_SLOT_HEADER	64					/* bytes */
#define LAYOUT_STORED_MAX	(LAYOUT_SLOT_SIZE - LAYOUT_SLOT_HEADER)	/* bytes */
/*
 * The most a copy's text may be, deflated or not: what a reader inflates
 * at most, whatever a hostile header says (deflate can reach 1000:1).
 */
#define LAYOUT_INFLATE_CAP	64
#define LAYOUT_TEXT_MAX		((size_t)LAYOUT_STORED_MAX * LAYOUT_INFLATE_CAP)	/* bytes */

enum layout_slot_state {
	LAYOUT_SLOT_EMPTY,		/* no copy was ever written there */
	LAYOUT_SLOT_GOOD,
	LAYOUT_SLOT_DAMAGED,		/* a checksum fails, or the text does not inflate */
	LAYOUT_SLOT_OVERFLOW,		/* layout seq (len bytes) did not fit: no text */
};

struct layout_slot {
	enum layout_slot_state state;
	struct uuid pool;		/* GOOD, OVERFLOW; DAMAGED if its header is whole */
	uint64_t seq;			/* the same */
	char *text;			/* GOOD: malloc'ed, NUL-terminated */
	size_t len;			/* bytes of text (OVERFLOW: that did not fit) */
	size_t stored;			/* bytes it takes in the slot, after the header */
};

struct layout_area {
	struct layout_slot slot[2];
};

/*
 * Reads both slots of @dev.  0 (each slot's state set;
 * a device too small for the area reads as empty), -ENOMEM or -EIO.
 * Blocks: one read of 1 MiB, and inflating up to LAYOUT_TEXT_MAX.
 */
int layout_area_read(struct device *dev, struct layout_area *out);
/*
 * Decodes one slot's bytes (@size of them at @buf, LAYOUT_SLOT_SIZE as
 * read; fewer read as the rest zero) into @s: 0, its state set, or
 * -ENOMEM.  Any bytes at all are safe: the text is inflated into at most
 * LAYOUT_TEXT_MAX bytes.  Cost: O(LAYOUT_TEXT_MAX) at worst.
 */
int layout_slot_decode(const uint8_t *buf, size_t size, struct layout_slot *s);
/* The good slot with the highest seq, or NULL. */
const struct layout_slot *layout_area_newest(const struct layout_area *a);
/* An overflow marker newer than every good slot (they are stale), or NULL. */
const struct layout_slot *layout_area_overflow(const struct layout_area *a);
/* Which slot holds the newest good copy: 0 or 1 (0 if none). */
unsigned int layout_area_newest_slot(const struct layout_area *a);
void layout_area_release(struct layout_area *a);

/* One copy as it goes on every device: the slot's header and stored bytes. */
struct layout_copy {
	uint8_t *buf;			/* malloc'ed */
	size_t len;			/* bytes of buf: LAYOUT_SLOT_HEADER + stored */
	size_t stored;			/* bytes after the header */
	bool overflow;			/* a marker: the text did not fit */
};

/*
 * Copy @seq of pool @pool's layout (@len bytes of @text), deflated, into
 * @out: 0, -EFBIG if it does not fit a slot even deflated (@out is then
 * the marker that says so), or -ENOMEM.  Cost: deflating @len bytes
 * (some 10 ms a MB); does not block.
 */
int layout_copy_make(const struct uuid *pool, uint64_t seq, const char *text, size_t len,
		     struct layout_copy *out);
void layout_copy_release(struct layout_copy *c);

/*
 * Writes @c to slot @slot (0 or 1) of @dev and syncs it.  0 or -errno.
 * Blocks on the device.
 */
int layout_area_write(struct device *dev, unsigned int slot, const struct layout_copy *c);

#endif
