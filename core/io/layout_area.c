#include "layout_area.h"

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device.h"
#include "writelog.h"

static const char layout_magic[16] = "MAPPERFS-LAYOUT";

struct slot_header {
	char magic[16];
	uint8_t pool[16];
	uint64_t seq_le;
	uint64_t len_le;
	uint32_t text_crc_le;
	uint32_t header_crc_le;		/* crc32 of the bytes before it */
} __attribute__((packed));

_Static_assert(sizeof(struct slot_header) <= LAYOUT_SLOT_HEADER, "slot header too big");

static uint64_t slot_offset(unsigned int i)
{
	return LABEL_SIZE + (uint64_t)i * LAYOUT_SLOT_SIZE;
}

static int decode_slot(const uint8_t *buf, struct layout_slot *s)
{
	const struct slot_header *h = (const void *)buf;
	uint64_t len;

	memset(s, 0, sizeof(*s));
	if (memcmp(h->magic, layout_magic, sizeof(h->magic)))
		return 0;
	s->state = LAYOUT_SLOT_DAMAGED;
	if (le32toh(h->header_crc_le) != label_crc32(h, offsetof(struct slot_header, header_crc_le)))
		return 0;
	memcpy(s->pool.b, h->pool, 16);
	s->seq = le64toh(h->seq_le);
	len = le64toh(h->len_le);
	if (len > LAYOUT_TEXT_MAX ||
	    le32toh(h->text_crc_le) != label_crc32(buf + LAYOUT_SLOT_HEADER, len))
		return 0;
	s->text = malloc(len + 1);
	if (!s->text)
		return -ENOMEM;
	memcpy(s->text, buf + LAYOUT_SLOT_HEADER, len);
	s->text[len] = 0;
	s->len = len;
	s->state = LAYOUT_SLOT_GOOD;
	return 0;
}

int layout_area_read(struct device *dev, struct layout_area *out)
{
	uint8_t *buf = malloc(LAYOUT_SLOT_SIZE);
	int r = 0;

	memset(out, 0, sizeof(*out));
	if (!buf)
		return -ENOMEM;
	for (unsigned int i = 0; i < 2 && !r; i++) {
		int n = device_read_at(dev, buf, LAYOUT_SLOT_SIZE, slot_offset(i));

		if (n && n != -ENODATA)
			r = -EIO;
		else if (!n)
			r = decode_slot(buf, &out->slot[i]);
	}
	free(buf);
	if (r)
		layout_area_release(out);
	return r;
}

const struct layout_slot *layout_area_newest(const struct layout_area *a)
{
	const struct layout_slot *best = NULL;

	for (unsigned int i = 0; i < 2; i++)
		if (a->slot[i].state == LAYOUT_SLOT_GOOD && (!best || a->slot[i].seq > best->seq))
			best = &a->slot[i];
	return best;
}

void layout_area_release(struct layout_area *a)
{
	for (unsigned int i = 0; i < 2; i++)
		free(a->slot[i].text);
	memset(a, 0, sizeof(*a));
}

int layout_area_write(struct device *dev, const struct uuid *pool, uint64_t seq,
		      const char *text, size_t len)
{
	uint64_t off = slot_offset(seq % 2);
	uint64_t issued = dev->log_file ? writelog_now() : 0;
	struct slot_header *h;
	size_t total = LAYOUT_SLOT_HEADER + len;
	uint8_t *buf;
	int r = 0;

	if (len > LAYOUT_TEXT_MAX)
		return -EFBIG;
	buf = calloc(1, total);
	if (!buf)
		return -ENOMEM;
	h = (void *)buf;
	memcpy(h->magic, layout_magic, sizeof(h->magic));
	memcpy(h->pool, pool->b, 16);
	h->seq_le = htole64(seq);
	h->len_le = htole64(len);
	memcpy(buf + LAYOUT_SLOT_HEADER, text, len);
	h->text_crc_le = htole32(label_crc32(buf + LAYOUT_SLOT_HEADER, len));
	h->header_crc_le = htole32(label_crc32(h, offsetof(struct slot_header, header_crc_le)));
	if (device_write_at(dev, buf, total, off))
		r = -EIO;
	else if (dev->log_file)
		writelog_write(dev->log_file, issued, off, buf, total);
	free(buf);
	return r ? r : device_sync(dev);
}
