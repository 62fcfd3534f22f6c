#include "label.h"

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

static const char label_magic[16] = "MAPPERFS-LABEL1";

struct label_disk {
	char magic[16];
	uint8_t pool[16];
	uint8_t device[16];
	uint64_t size_le;
	uint32_t crc_le;		/* crc32 of the bytes before it */
} __attribute__((packed));

uint32_t label_crc32(const void *buf, size_t n)
{
	const uint8_t *p = buf;
	uint32_t crc = ~0u;

	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
	}
	return ~crc;
}

void label_encode(const struct device_label *l, void *buf)
{
	struct label_disk *d = buf;

	memset(buf, 0, LABEL_SIZE);
	memcpy(d->magic, label_magic, sizeof(d->magic));
	memcpy(d->pool, l->pool.b, 16);
	memcpy(d->device, l->device.b, 16);
	d->size_le = htole64(l->size);
	d->crc_le = htole32(label_crc32(buf, offsetof(struct label_disk, crc_le)));
}

int label_decode(const void *buf, struct device_label *l)
{
	const struct label_disk *d = buf;

	if (memcmp(d->magic, label_magic, sizeof(d->magic)))
		return -ENODATA;
	if (le32toh(d->crc_le) != label_crc32(buf, offsetof(struct label_disk, crc_le)))
		return -EBADMSG;
	memcpy(l->pool.b, d->pool, 16);
	memcpy(l->device.b, d->device, 16);
	l->size = le64toh(d->size_le);
	return 0;
}
