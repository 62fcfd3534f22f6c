/*
 * fuzz_send_stream: send streams, as `mapperctl receive` reads them from
 * a pipe or a file: send_reader_begin(), then send_reader_next() to the
 * end record and send_reader_finish().
 *
 * Contract: every call returns 0, -EBADMSG or -ENODATA (the input ends),
 * the last two with a reason; a record's range is 4 KiB aligned, inside
 * the volume and after the one before; a data record fits its buffer.
 * And a stream that parses whole is the one the writer makes of what was
 * parsed, byte for byte: every field has one meaning, so nothing a
 * receiver accepts differs from what a sender could have sent.  (The
 * rest of a stream, SEND_RESUMED, parses only after send_reader_resume,
 * which a receive calls with its own place: alone it is refused.)
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "send_stream.h"

/* What was parsed, written again: the records kept for it. */
struct parsed {
	struct send_header h;
	struct send_writer w;
	int fd;
};

static void check_error(int e, const char *why)
{
	FUZZ_CHECK(e == -EBADMSG || e == -ENODATA);
	FUZZ_CHECK(why[0]);
}

/* Writes @rec (data in @buf) again, as a sender would have. */
static void rewrite(struct parsed *p, const struct send_record *rec, const void *buf)
{
	int e = rec->type == SEND_DATA ? send_writer_data(&p->w, rec->offset, buf, rec->length) :
		rec->type == SEND_HOLE ? send_writer_hole(&p->w, rec->offset, rec->length) :
		send_writer_end(&p->w);

	FUZZ_CHECK(e == 0);
}

/* The bytes written again equal the input's. */
static void check_same(const struct parsed *p, const uint8_t *data, size_t size)
{
	uint8_t *again = malloc(size + 1);

	FUZZ_CHECK(again);
	FUZZ_CHECK(p->w.bytes == size);
	FUZZ_CHECK(pread(p->fd, again, size + 1, 0) == (ssize_t)size);
	FUZZ_CHECK(!memcmp(again, data, size));
	free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[SEND_WHY_LEN] = "";
	struct parsed p = { .fd = memfd_create("again", MFD_CLOEXEC) };
	struct send_record rec = { .type = SEND_DATA };
	struct send_reader r;
	int fd = fuzz_memfd(data, size), e;
	uint64_t next = 0;
	void *buf = malloc(SEND_DATA_MAX);

	FUZZ_CHECK(buf && p.fd >= 0);
	e = send_reader_begin(&r, fd, &p.h, NULL, why);
	if (!e)
		FUZZ_CHECK(send_writer_begin(&p.w, p.fd, &p.h, NULL) == 0);
	while (!e && rec.type != SEND_END) {
		e = send_reader_next(&r, &rec, buf, why);
		if (e)
			break;
		if (rec.type != SEND_END) {
			FUZZ_CHECK(rec.offset % SEND_ALIGN == 0 && rec.length % SEND_ALIGN == 0);
			FUZZ_CHECK(rec.offset >= next && rec.length);
			FUZZ_CHECK(rec.offset + rec.length <= p.h.volume_size);
			FUZZ_CHECK(rec.type == SEND_HOLE || rec.length <= SEND_DATA_MAX);
			next = rec.offset + rec.length;
		}
		rewrite(&p, &rec, buf);
	}
	if (!e)
		e = send_reader_finish(&r, why);
	if (e)
		check_error(e, why);
	else
		check_same(&p, data, size);
	free(buf);
	close(p.fd);
	close(fd);
	return 0;
}
