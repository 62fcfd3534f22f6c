/*
 * core/util/send_stream.c: writing and parsing send streams
 * (send_stream.h has the format and why).
 *
 * The parser trusts nothing it reads: a length is checked against its
 * bound before anything is read for it, so a hostile stream costs at most
 * one record's buffer, and every field has one meaning (reserved bytes
 * are zero, ranges aligned and in order), so that a stream that parses
 * is one a sender could have written.
 */
#include "send_stream.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#define HEADER_FIXED	68u	/* bytes of the header before the names */
#define HEADER_MAX	(HEADER_FIXED + 2 * SEND_NAME_MAX + 8 + 4)	/* a resumed one's */

static uint32_t crc_add(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {			/* zlib takes an unsigned int per call */
		unsigned int n = len > (1u << 30) ? 1u << 30 : (unsigned int)len;

		crc = (uint32_t)crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return crc;
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

/* -ECANCELED if @cancel says the stream is to stop, else 0 (also without @cancel). */
static int stopping(const struct send_cancel *cancel)
{
	return cancel && cancel->cancelled(cancel->arg) ? -ECANCELED : 0;
}

/*
 * Waits until @fd is ready for @events, asking @cancel first and every
 * SEND_POLL_MS: a stream that flows is stopped between two reads or
 * writes, one that stalls within SEND_POLL_MS.  0 (also at once without
 * @cancel: the read or write then blocks), -ECANCELED, or -errno.
 */
static int wait_ready(int fd, short events, const struct send_cancel *cancel)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int n, e;

	while (!(e = stopping(cancel)) && cancel) {
		n = poll(&pfd, 1, SEND_POLL_MS);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
	return e;
}

/* ---- writing --------------------------------------------------------- */

/*
 * Makes writes to w->fd (not a regular file) never block, so that a full
 * pipe is waited for in poll(), where w->cancel is asked: a file
 * description of its own, non-blocking (O_NONBLOCK on the caller's would
 * change it for every process that shares it); else, for what cannot be
 * opened again (a socket), RWF_NOWAIT on each write.
 */
static void open_nonblocking(struct send_writer *w)
{
	char path[40];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", w->fd);
	w->own_fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (w->own_fd >= 0)
		w->fd = w->own_fd;
	else
		w->nowait = true;
	w->polls = true;
}

void send_writer_release(struct send_writer *w)
{
	if (w->own_fd >= 0)
		close(w->own_fd);
	w->own_fd = -1;
}

/* Writes @len bytes of @buf to the file, whatever the stream's place. */
static int write_out(struct send_writer *w, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		struct iovec iov = { .iov_base = (void *)p, .iov_len = len };
		int e = w->polls ? wait_ready(w->fd, POLLOUT, w->cancel) : stopping(w->cancel);
		ssize_t n;

		if (e)
			return e;
		n = w->nowait ? pwritev2(w->fd, &iov, 1, -1, RWF_NOWAIT) : write(w->fd, p, len);
		if (n < 0 && w->nowait && errno == EOPNOTSUPP) {
			w->nowait = false;	/* a file that cannot say: block */
			continue;
		}
		if (n < 0 && (errno == EINTR || (w->polls && errno == EAGAIN)))
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static size_t encode_header(const struct send_header *h, uint8_t *buf);

/*
 * @len bytes of the stream from @buf, into its checksum if @summed:
 * written, but for a resumed stream only from w->resume_at on.
 */
static int write_all(struct send_writer *w, const void *buf, size_t len, bool summed)
{
	uint64_t skip = w->bytes < w->resume_at ? w->resume_at - w->bytes : 0;
	uint8_t resumed[HEADER_MAX];
	int r;

	if (summed)
		w->crc = crc_add(w->crc, buf, len);
	w->bytes += len;
	if (skip >= len)
		return 0;
	if (w->header_owed) {
		w->header_owed = false;
		r = write_out(w, resumed, encode_header(&w->resumed, resumed) + 4);
		if (r)
			return r;
	}
	return write_out(w, (const uint8_t *)buf + skip, len - skip);
}

/* Writes one record: its header, @payload_len bytes of @payload, its crc. */
static int write_record(struct send_writer *w, enum send_record_type type, uint64_t off,
			uint64_t len, const void *payload, uint32_t payload_len)
{
	uint8_t head[SEND_RECORD_HEADER], tail[4];
	uint32_t crc;
	int r;

	put32(head, type);
	put32(head + 4, payload_len);
	put64(head + 8, off);
	put64(head + 16, len);
	crc = crc_add(crc_add(0, head, sizeof(head)), payload, payload_len);
	put32(tail, crc);
	r = write_all(w, head, sizeof(head), true);
	if (!r && payload_len)
		r = write_all(w, payload, payload_len, true);
	if (!r)
		r = write_all(w, tail, sizeof(tail), false);
	return r;
}

/* A range the format holds: aligned, after the last, inside the volume. */
static bool range_ok(uint64_t next, uint64_t size, uint64_t off, uint64_t len)
{
	return len && !(off % SEND_ALIGN) && !(len % SEND_ALIGN) && off >= next &&
	       off <= size && len <= size - off;
}

/*
 * @h in the stream's bytes, into @buf (HEADER_MAX): the bytes before the
 * header's crc32, which follows them.  Returns their count.
 */
static size_t encode_header(const struct send_header *h, uint8_t *buf)
{
	size_t src = strnlen(h->source_name, SEND_NAME_MAX);
	size_t base = strnlen(h->base_name, SEND_NAME_MAX);
	size_t len = HEADER_FIXED + src + base + (h->flags & SEND_RESUMED ? 8 : 0);

	memcpy(buf, SEND_MAGIC, 8);
	put32(buf + 8, SEND_VERSION);
	put32(buf + 12, (uint32_t)(len + 4));
	put32(buf + 16, h->flags);
	put32(buf + 20, h->block_size);
	put64(buf + 24, h->volume_size);
	memcpy(buf + 32, h->source.b, 16);
	memcpy(buf + 48, h->base.b, 16);
	buf[64] = (uint8_t)src;
	buf[65] = (uint8_t)base;
	buf[66] = buf[67] = 0;
	memcpy(buf + HEADER_FIXED, h->source_name, src);
	memcpy(buf + HEADER_FIXED + src, h->base_name, base);
	if (h->flags & SEND_RESUMED)
		put64(buf + HEADER_FIXED + src + base, h->resume_at);
	put32(buf + len, crc_add(0, buf, len));
	return len;
}

/* The header of the whole stream that resumed header @h is the rest of. */
static struct send_header whole_header(const struct send_header *h)
{
	struct send_header whole = *h;

	whole.flags &= ~(uint32_t)SEND_RESUMED;
	whole.resume_at = 0;
	return whole;
}

int send_writer_begin(struct send_writer *w, int fd, const struct send_header *h,
		      const struct send_cancel *cancel)
{
	struct send_header whole = whole_header(h);
	uint8_t buf[HEADER_MAX];
	size_t len = encode_header(&whole, buf);
	struct stat st;
	int r;

	*w = (struct send_writer){ .fd = fd, .own_fd = -1, .cancel = cancel,
				   .volume_size = h->volume_size };
	if (cancel && !fstat(fd, &st) && !S_ISREG(st.st_mode))
		open_nonblocking(w);
	if (h->volume_size % SEND_ALIGN)
		return -EINVAL;
	if (h->flags & SEND_RESUMED) {	/* its own header, then the rest */
		if (h->resume_at < len + 4)
			return -EINVAL;
		w->resume_at = h->resume_at;
		w->resumed = *h;
		w->header_owed = true;
	}
	r = write_all(w, buf, len, true);
	return r ? r : write_all(w, buf + len, 4, false);
}

int send_writer_data(struct send_writer *w, uint64_t off, const void *buf, uint64_t len)
{
	const uint8_t *p = buf;
	int r = 0;

	if (!range_ok(w->next, w->volume_size, off, len))
		return -EINVAL;
	while (len && !r) {
		uint32_t n = len > SEND_DATA_MAX ? SEND_DATA_MAX : (uint32_t)len;

		r = write_record(w, SEND_DATA, off, n, p, n);
		w->records++;
		w->data_bytes += n;
		p += n;
		off += n;
		len -= n;
	}
	w->next = off;
	return r;
}

int send_writer_hole(struct send_writer *w, uint64_t off, uint64_t len)
{
	int r;

	if (!range_ok(w->next, w->volume_size, off, len))
		return -EINVAL;
	r = write_record(w, SEND_HOLE, off, len, NULL, 0);
	w->records++;
	w->hole_bytes += len;
	w->next = off + len;
	return r;
}

int send_writer_end(struct send_writer *w)
{
	uint8_t payload[SEND_END_PAYLOAD];
	int r;

	put64(payload, w->records);
	put64(payload + 8, w->data_bytes);
	put32(payload + 16, w->crc);
	put32(payload + 20, 0);
	r = write_record(w, SEND_END, 0, 0, payload, sizeof(payload));
	return r || !w->header_owed ? r : -ERANGE;
}

/* ---- reading --------------------------------------------------------- */

static int bad(char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(char *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, SEND_WHY_LEN, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

/*
 * Reads exactly @len bytes, into the stream's checksum if @summed: 0,
 * -ENODATA at the end of the input (then @why says where, @what naming
 * what was cut short), or -errno.
 */
static int read_all(struct send_reader *r, void *buf, size_t len, bool summed, const char *what,
		    char *why)
{
	uint8_t *p = buf;
	size_t want = len;

	while (len) {
		int e = wait_ready(r->fd, POLLIN, r->cancel);
		ssize_t n = e ? -1 : read(r->fd, p, len);

		if (e)
			return e;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n) {
			r->partial = want - len;
			snprintf(why, SEND_WHY_LEN, "the stream stops inside %s, %zu bytes after byte %llu",
				 what, r->partial, (unsigned long long)r->pos);
			return -ENODATA;
		}
		p += n;
		len -= (size_t)n;
	}
	if (summed)
		r->crc = crc_add(r->crc, buf, want);
	return 0;
}

/* A name of the header: printable, no NUL. */
static int copy_name(char *out, const uint8_t *p, size_t n, const char *what, char *why)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] > 0x7e)
			return bad(why, "the stream's %s name is not printable text", what);
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

static int check_header(const uint8_t *buf, struct send_header *h, char *why)
{
	static const struct uuid none;
	uint32_t bs = h->block_size = get32(buf + 20);
	bool incremental;

	h->flags = get32(buf + 16);
	incremental = h->flags & SEND_INCREMENTAL;
	h->volume_size = get64(buf + 24);
	memcpy(h->source.b, buf + 32, 16);
	memcpy(h->base.b, buf + 48, 16);
	if (h->flags & ~(uint32_t)(SEND_INCREMENTAL | SEND_RESUMED))
		return bad(why, "the stream has flags 0x%x this version does not know", h->flags);
	if (bs < SEND_ALIGN || bs > (1u << 30) || (bs & (bs - 1)))
		return bad(why, "the stream's block size %u is not a power of two from 4 KiB to 1 GiB",
			   bs);
	if (!h->volume_size || h->volume_size % SEND_ALIGN || h->volume_size > (1ull << 62))
		return bad(why, "the stream's volume size %llu is not a positive multiple of 4 KiB",
			   (unsigned long long)h->volume_size);
	if (uuid_equal(&h->source, &none))
		return bad(why, "the stream names no source volume");
	if (incremental == (bool)uuid_equal(&h->base, &none))
		return bad(why, "the stream's base does not agree with its flags");
	if (buf[66] || buf[67] || buf[64] > SEND_NAME_MAX || buf[65] > SEND_NAME_MAX ||
	    !buf[64] || incremental != (buf[65] != 0))
		return bad(why, "the stream's header has names of the wrong length");
	return 0;
}

/*
 * A resumed stream's header @buf, read and checked: the reader stands
 * where the whole stream's header ends, with its crc32, until
 * send_reader_resume puts it at h->resume_at.
 */
static int begin_resumed(struct send_reader *r, struct send_header *h, const uint8_t *buf,
			 char *why)
{
	struct send_header whole = whole_header(h);
	uint8_t whole_buf[HEADER_MAX];
	size_t len = encode_header(&whole, whole_buf);

	h->resume_at = get64(buf + HEADER_FIXED + buf[64] + buf[65]);
	if (h->resume_at < len + 4)
		return bad(why, "the stream resumes at byte %llu, inside its header",
			   (unsigned long long)h->resume_at);
	r->crc = crc_add(0, whole_buf, len);
	r->pos = len + 4;
	r->resume_at = h->resume_at;
	return 0;
}

int send_reader_begin(struct send_reader *r, int fd, struct send_header *h,
		      const struct send_cancel *cancel, char *why)
{
	uint8_t buf[HEADER_MAX];
	uint32_t len;
	int e;

	*r = (struct send_reader){ .fd = fd, .cancel = cancel };
	memset(h, 0, sizeof(*h));
	e = read_all(r, buf, HEADER_FIXED, true, "its header", why);
	if (e == -ENODATA && memcmp(buf, SEND_MAGIC, r->partial < 8 ? r->partial : 8))
		e = -EBADMSG;	/* too short, and not one anyway */
	else if (e)
		return e;
	if (e || memcmp(buf, SEND_MAGIC, 8))
		return bad(why, "not a mapperfs send stream (its first bytes are not \"" SEND_MAGIC "\")");
	h->version = get32(buf + 8);
	if (h->version != SEND_VERSION)
		return bad(why, "the stream is of version %u; this mapperctl reads version %u",
			   h->version, SEND_VERSION);
	len = get32(buf + 12);
	if (len != HEADER_FIXED + (uint32_t)buf[64] + buf[65] + 4 +
		   (get32(buf + 16) & SEND_RESUMED ? 8 : 0) ||
	    buf[64] > SEND_NAME_MAX || buf[65] > SEND_NAME_MAX)
		return bad(why, "the stream's header length %u does not fit its names", len);
	e = read_all(r, buf + HEADER_FIXED, len - HEADER_FIXED - 4, true, "its header", why);
	if (!e)
		e = read_all(r, buf + len - 4, 4, false, "its header", why);
	if (e)
		return e;
	if (get32(buf + len - 4) != crc_add(0, buf, len - 4))
		return bad(why, "the stream's header fails its checksum");
	e = check_header(buf, h, why);
	if (!e)
		e = copy_name(h->source_name, buf + HEADER_FIXED, buf[64], "source", why);
	if (!e)
		e = copy_name(h->base_name, buf + HEADER_FIXED + buf[64], buf[65], "base", why);
	if (e)
		return e;
	r->pos = len;
	r->volume_size = h->volume_size;
	return h->flags & SEND_RESUMED ? begin_resumed(r, h, buf, why) : 0;
}

/* The end record's payload against what came before it. */
static int check_end(struct send_reader *r, const uint8_t *p, uint32_t stream_crc,
		     struct send_record *rec, char *why)
{
	rec->end_records = get64(p);
	rec->end_data_bytes = get64(p + 8);
	if (get32(p + 16) != stream_crc)
		return bad(why, "the stream fails its checksum (its records passed theirs)");
	if (rec->end_records != r->records || rec->end_data_bytes != r->data_bytes || get32(p + 20))
		return bad(why, "the stream's end says %llu records and %llu bytes of data, it had %llu and %llu",
			   (unsigned long long)rec->end_records,
			   (unsigned long long)rec->end_data_bytes,
			   (unsigned long long)r->records, (unsigned long long)r->data_bytes);
	r->ended = true;
	return 0;
}

/* The header of a record at r->pos: type and lengths in range. */
static int check_record_header(struct send_reader *r, const struct send_record *rec,
			       uint32_t payload_len, char *why)
{
	unsigned long long at = (unsigned long long)r->pos;

	switch (rec->type) {
	case SEND_DATA:
		if (payload_len != rec->length || !payload_len || payload_len > SEND_DATA_MAX)
			return bad(why, "the data record at byte %llu has a bad length", at);
		break;
	case SEND_HOLE:
		if (payload_len)
			return bad(why, "the hole record at byte %llu carries data", at);
		break;
	case SEND_END:
		if (payload_len != SEND_END_PAYLOAD || rec->offset || rec->length)
			return bad(why, "the end record at byte %llu is malformed", at);
		return 0;
	default:
		return bad(why, "the record at byte %llu is of unknown type %u", at, rec->type);
	}
	if (!range_ok(r->next, r->volume_size, rec->offset, rec->length))
		return bad(why, "the record at byte %llu has a range (%llu+%llu) out of order, "
			   "unaligned or past the volume's end", at,
			   (unsigned long long)rec->offset, (unsigned long long)rec->length);
	return 0;
}

/* send_reader_next, but r->crc may have taken a part of a record it failed on. */
static int next_record(struct send_reader *r, struct send_record *rec, void *buf, char *why)
{
	uint8_t head[SEND_RECORD_HEADER], tail[4], end[SEND_END_PAYLOAD];
	uint32_t stream_crc = r->crc, payload_len, crc;
	uint8_t *payload;
	int e;

	if (r->ended)
		return bad(why, "the stream goes on past its end record");
	if (r->resume_at)
		return bad(why, "the stream is the rest of one from byte %llu on: it goes only onto "
			   "a receive that stopped there", (unsigned long long)r->resume_at);
	e = read_all(r, head, sizeof(head), true, "a record", why);
	if (e)
		return e;
	*rec = (struct send_record){ .type = (enum send_record_type)get32(head),
				     .offset = get64(head + 8), .length = get64(head + 16) };
	payload_len = get32(head + 4);
	e = check_record_header(r, rec, payload_len, why);
	if (e)
		return e;
	payload = rec->type == SEND_END ? end : buf;
	e = read_all(r, payload, payload_len, true, "a record", why);
	if (!e)
		e = read_all(r, tail, sizeof(tail), false, "a record", why);
	if (e)
		return e;
	crc = crc_add(crc_add(0, head, sizeof(head)), payload, payload_len);
	if (get32(tail) != crc)
		return bad(why, "the record at byte %llu fails its checksum",
			   (unsigned long long)r->pos);
	if (rec->type == SEND_END)
		e = check_end(r, end, stream_crc, rec, why);
	else {
		r->records++;
		r->data_bytes += rec->type == SEND_DATA ? rec->length : 0;
		r->next = rec->offset + rec->length;
	}
	r->pos += sizeof(head) + payload_len + sizeof(tail);
	return e;
}

int send_reader_next(struct send_reader *r, struct send_record *rec, void *buf, char *why)
{
	uint32_t crc = r->crc;
	int e = next_record(r, rec, buf, why);

	if (e)
		r->crc = crc;	/* of the bytes up to r->pos, the last boundary */
	return e;
}

int send_reader_finish(struct send_reader *r, char *why)
{
	uint8_t byte;
	ssize_t n;
	int e;

	do {
		e = wait_ready(r->fd, POLLIN, r->cancel);
		if (e)
			return e;
		n = read(r->fd, &byte, 1);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n ? bad(why, "bytes follow the stream's end record") : 0;
}

void send_reader_place(const struct send_reader *r, struct send_place *out)
{
	*out = (struct send_place){ .pos = r->pos, .crc = r->crc, .records = r->records,
				    .data_bytes = r->data_bytes, .next = r->next };
}

int send_reader_resume(struct send_reader *r, const struct send_place *at, void *buf,
		       char *why)
{
	struct send_record rec;
	int e;

	if (at->pos < r->pos || at->next > r->volume_size)
		return bad(why, "the place to resume from (byte %llu) is not in the stream",
			   (unsigned long long)at->pos);
	if (r->resume_at && r->resume_at != at->pos) {
		snprintf(why, SEND_WHY_LEN, "the stream goes on from byte %llu, but the receive "
			 "stopped at byte %llu: send it with --resume-at %llu",
			 (unsigned long long)r->resume_at, (unsigned long long)at->pos,
			 (unsigned long long)at->pos);
		return -ESTALE;
	}
	if (r->resume_at || lseek(r->fd, (off_t)at->pos, SEEK_SET) == (off_t)at->pos) {
		r->resume_at = 0;
		r->pos = at->pos;
		r->crc = at->crc;
		r->records = at->records;
		r->data_bytes = at->data_bytes;
		r->next = at->next;
		return 0;
	}
	while (r->pos < at->pos) {
		e = send_reader_next(r, &rec, buf, why);
		if (e)
			return e;
		if (rec.type == SEND_END)
			break;
	}
	if (r->pos != at->pos || r->crc != at->crc || r->records != at->records) {
		snprintf(why, SEND_WHY_LEN, "it is not the stream whose receive stopped at byte "
			 "%llu (its bytes differ up to there)", (unsigned long long)at->pos);
		return -ESTALE;
	}
	return 0;
}
