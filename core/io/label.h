/*
 * core/io/label.h: the label at the start of every raw device.
 *
 * A pool writes a label on each raw device it registers: a magic string,
 * the pool's uuid, the device's uuid and the size the device had.  The
 * daemon reads it back before it serves a byte, so a device that moved,
 * shrank or was swapped for another is refused instead of written to.
 * The label sits in the first 4 KiB; data starts at DEVICE_DATA_OFFSET,
 * which keeps every extent 1 MiB aligned.
 */
#ifndef MAPPERFS_LABEL_H
#define MAPPERFS_LABEL_H

#include <stddef.h>
#include <stdint.h>

#include "uuid.h"

#define LABEL_SIZE		4096		/* bytes on disk */
#define DEVICE_DATA_OFFSET	(1u << 20)	/* bytes: first byte of data */

struct device_label {
	struct uuid pool;
	struct uuid device;
	uint64_t size;			/* bytes, when the device was added */
};

/* The CRC-32 (IEEE, zlib's) of @n bytes at @buf. */
uint32_t label_crc32(const void *buf, size_t n);

/* Encodes @l into @buf (LABEL_SIZE bytes, zero padded, checksummed). */
void label_encode(const struct device_label *l, void *buf);

/*
 * Decodes @buf.  Returns 0, -ENODATA if it holds no mapperfs label, or
 * -EBADMSG if it is a damaged one.
 */
int label_decode(const void *buf, struct device_label *l);

#endif
