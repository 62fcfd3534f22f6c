#include "layout_area.h"

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "device.h"
#include "writelog.h"

/* The magic's 15 letters; the byte after them is the header's version. */
static const char layout_magic[15] = "MAPPERFS-LAYOUT";

#define HEADER_TEXT	0	/* before compression: the text as it is */
#define HEADER_V2	2	/* struct slot_header_v2 */

/*
 * zlib's level 1: on the text of 10,000 thin volumes (1.6 MB) it deflates
 * within 6% of level 6 (84-119 KB against 82-112) in 3.5-7 ms against
 * 7-8.5 (docs/scale.md).
 */
#define DEFLATE_LEVEL	1

/* What every copy before compression carries. */
struct slot_header_text {
	char magic[15];
	uint8_t version;		/* HEADER_TEXT */
	uint8_t pool[16];
	uint64_t seq_le;
	uint64_t len_le;		/* bytes of text */
	uint32_t text_crc_le;
	uint32_t header_crc_le;		/* crc32 of the bytes before it */
} __attribute__((packed));

enum layout_encoding {
	ENCODING_NONE,			/* an overflow marker: nothing stored */
	ENCODING_DEFLATE,		/* a zlib stream */
};

struct slot_header_v2 {
	char magic[15];
	uint8_t version;		/* HEADER_V2 */
	uint8_t pool[16];
	uint64_t seq_le;
	uint32_t stored_le;		/* bytes after the header */
	uint32_t text_len_le;		/* bytes of text they stand for */
	uint32_t encoding_le;		/* enum layout_encoding */
	uint32_t stored_crc_le;		/* crc32 of the stored bytes */
	uint32_t header_crc_le;		/* crc32 of the bytes before it */
} __attribute__((packed));

_Static_assert(sizeof(struct slot_header_text) <= LAYOUT_SLOT_HEADER, "slot header too big");
_Static_assert(sizeof(struct slot_header_v2) <= LAYOUT_SLOT_HEADER, "slot header too big");
_Static_assert(LAYOUT_TEXT_MAX < UINT32_MAX, "a text's length is 32 bits");

static uint64_t slot_offset(unsigned int i)
{
	return LABEL_SIZE + (uint64_t)i * LAYOUT_SLOT_SIZE;
}

static int take_text(struct layout_slot *s, const uint8_t *text, size_t len)
{
	s->text = malloc(len + 1);
	if (!s->text)
		return -ENOMEM;
	memcpy(s->text, text, len);
	s->text[len] = 0;
	s->len = len;
	s->stored = len;
	s->state = LAYOUT_SLOT_GOOD;
	return 0;
}

static int decode_text(const uint8_t *buf, struct layout_slot *s)
{
	const struct slot_header_text *h = (const void *)buf;
	uint64_t len;

	if (le32toh(h->header_crc_le) != label_crc32(h, offsetof(struct slot_header_text,
								   header_crc_le)))
		return 0;
	memcpy(s->pool.b, h->pool, 16);
	s->seq = le64toh(h->seq_le);
	len = le64toh(h->len_le);
	if (len > LAYOUT_STORED_MAX ||
	    le32toh(h->text_crc_le) != label_crc32(buf + LAYOUT_SLOT_HEADER, len))
		return 0;
	return take_text(s, buf + LAYOUT_SLOT_HEADER, len);
}

/*
 * Inflates @stored bytes at @in into exactly @text_len bytes of text for
 * @s; a stream that ends early, late, or is not zlib leaves @s DAMAGED.
 */
static int inflate_text(const uint8_t *in, size_t stored, size_t text_len,
			struct layout_slot *s)
{
	z_stream z = { 0 };
	char *text = malloc(text_len + 1);
	int zr;

	if (!text)
		return -ENOMEM;
	if (inflateInit(&z) != Z_OK) {
		free(text);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)stored;
	z.next_out = (Bytef *)text;
	z.avail_out = (uInt)text_len;
	zr = inflate(&z, Z_FINISH);
	inflateEnd(&z);
	if (zr != Z_STREAM_END || z.total_out != text_len || z.total_in != stored) {
		free(text);
		return zr == Z_MEM_ERROR ? -ENOMEM : 0;
	}
	text[text_len] = 0;
	s->text = text;
	s->len = text_len;
	s->stored = stored;
	s->state = LAYOUT_SLOT_GOOD;
	return 0;
}

static int decode_v2(const uint8_t *buf, struct layout_slot *s)
{
	const struct slot_header_v2 *h = (const void *)buf;
	size_t stored, text_len;

	if (le32toh(h->header_crc_le) != label_crc32(h, offsetof(struct slot_header_v2,
								   header_crc_le)))
		return 0;
	memcpy(s->pool.b, h->pool, 16);
	s->seq = le64toh(h->seq_le);
	stored = le32toh(h->stored_le);
	text_len = le32toh(h->text_len_le);
	if (stored > LAYOUT_STORED_MAX ||
	    le32toh(h->stored_crc_le) != label_crc32(buf + LAYOUT_SLOT_HEADER, stored))
		return 0;
	switch (le32toh(h->encoding_le)) {
	case ENCODING_NONE:
		if (stored)
			return 0;
		s->len = text_len;
		s->state = LAYOUT_SLOT_OVERFLOW;
		return 0;
	case ENCODING_DEFLATE:
		if (text_len > LAYOUT_TEXT_MAX)
			return 0;
		return inflate_text(buf + LAYOUT_SLOT_HEADER, stored, text_len, s);
	default:			/* a form of after this code */
		return 0;
	}
}

int layout_slot_decode(const uint8_t *buf, size_t size, struct layout_slot *s)
{
	uint8_t *whole = NULL;
	int r = 0;

	memset(s, 0, sizeof(*s));
	if (size < LAYOUT_SLOT_SIZE) {
		whole = calloc(1, LAYOUT_SLOT_SIZE);
		if (!whole)
			return -ENOMEM;
		memcpy(whole, buf, size);
		buf = whole;
	}
	if (memcmp(buf, layout_magic, sizeof(layout_magic)))
		goto out;
	s->state = LAYOUT_SLOT_DAMAGED;
	if (buf[sizeof(layout_magic)] == HEADER_TEXT)
		r = decode_text(buf, s);
	else if (buf[sizeof(layout_magic)] == HEADER_V2)
		r = decode_v2(buf, s);
out:
	free(whole);
	return r;
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
			r = layout_slot_decode(buf, LAYOUT_SLOT_SIZE, &out->slot[i]);
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

const struct layout_slot *layout_area_overflow(const struct layout_area *a)
{
	const struct layout_slot *good = layout_area_newest(a);

	for (unsigned int i = 0; i < 2; i++)
		if (a->slot[i].state == LAYOUT_SLOT_OVERFLOW && (!good || a->slot[i].seq > good->seq))
			return &a->slot[i];
	return NULL;
}

unsigned int layout_area_newest_slot(const struct layout_area *a)
{
	const struct layout_slot *good = layout_area_newest(a);

	return good == &a->slot[1];
}

void layout_area_release(struct layout_area *a)
{
	for (unsigned int i = 0; i < 2; i++)
		free(a->slot[i].text);
	memset(a, 0, sizeof(*a));
}

/*
 * Deflates @len bytes of @text into the @room bytes at @out: the bytes
 * it took, or 0 if they do not fit.
 */
static size_t deflate_into(const char *text, size_t len, uint8_t *out, size_t room)
{
	z_stream z = { 0 };
	int zr;

	if (deflateInit(&z, DEFLATE_LEVEL) != Z_OK)
		return 0;
	z.next_in = (Bytef *)text;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)room;
	zr = deflate(&z, Z_FINISH);
	deflateEnd(&z);
	return zr == Z_STREAM_END ? z.total_out : 0;
}

int layout_copy_make(const struct uuid *pool, uint64_t seq, const char *text, size_t len,
		     struct layout_copy *out)
{
	struct slot_header_v2 *h;
	size_t stored = 0;

	memset(out, 0, sizeof(*out));
	out->buf = calloc(1, LAYOUT_SLOT_SIZE);
	if (!out->buf)
		return -ENOMEM;
	if (len <= LAYOUT_TEXT_MAX)
		stored = deflate_into(text, len, out->buf + LAYOUT_SLOT_HEADER, LAYOUT_STORED_MAX);
	out->overflow = !stored;
	out->stored = stored;
	out->len = LAYOUT_SLOT_HEADER + stored;
	h = (void *)out->buf;
	memcpy(h->magic, layout_magic, sizeof(h->magic));
	h->version = HEADER_V2;
	memcpy(h->pool, pool->b, 16);
	h->seq_le = htole64(seq);
	h->stored_le = htole32((uint32_t)stored);
	h->text_len_le = htole32(len > UINT32_MAX ? UINT32_MAX : (uint32_t)len);
	h->encoding_le = htole32(stored ? ENCODING_DEFLATE : ENCODING_NONE);
	h->stored_crc_le = htole32(label_crc32(out->buf + LAYOUT_SLOT_HEADER, stored));
	h->header_crc_le = htole32(label_crc32(h, offsetof(struct slot_header_v2, header_crc_le)));
	return stored ? 0 : -EFBIG;
}

void layout_copy_release(struct layout_copy *c)
{
	free(c->buf);
	memset(c, 0, sizeof(*c));
}

int layout_area_write(struct device *dev, unsigned int slot, const struct layout_copy *c)
{
	uint64_t off = slot_offset(slot & 1);
	uint64_t issued = dev->log_file ? writelog_now() : 0;

	if (device_write_at(dev, c->buf, c->len, off))
		return -EIO;
	if (dev->log_file) {
		writelog_write(dev->log_file, issued, off, c->buf, c->len);
		device_note_write(dev);		/* after its record: device.h */
	}
	return device_sync(dev);
}
