/*
 * tests/unit/test_send_stream.c: the send stream's writer and parser
 * (core/util/send_stream.h): what one writes the other reads back; every
 * flipped byte and every cut is refused as such; a reader's place takes
 * a second reader on from there, and only on the same stream, and so
 * does the rest of a stream written from there alone; a pipe that stays
 * silent ends the stream when the caller says so.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "send_stream.h"

#define VOLUME_SIZE	(64ull << 20)
#define DATA_LEN	(SEND_DATA_MAX + 8192)	/* two records */

static void *data_buf(uint8_t seed)
{
	uint8_t *p = malloc(DATA_LEN);

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < DATA_LEN; i++)
		p[i] = (uint8_t)(i * 31 + seed);
	return p;
}

static struct send_header header(bool incremental)
{
	struct send_header h = { .version = SEND_VERSION, .block_size = 65536,
				 .volume_size = VOLUME_SIZE };

	memset(h.source.b, 0x5a, sizeof(h.source.b));
	strcpy(h.source_name, "vm1-mon");
	if (incremental) {
		h.flags = SEND_INCREMENTAL;
		memset(h.base.b, 0xa5, sizeof(h.base.b));
		strcpy(h.base_name, "vm1-sun");
	}
	return h;
}

/*
 * A memfd holding a stream: data at 1 MiB (@seed), a hole after it, and
 * @len_small bytes of data at 32 MiB; or only its rest from byte
 * @resume_at on, if not 0.  *len gets the whole stream's length.
 */
static int make_stream_from(uint8_t seed, uint32_t len_small, uint64_t resume_at, size_t *len)
{
	int fd = memfd_create("stream", MFD_CLOEXEC);
	struct send_header h = header(true);
	struct send_writer w;
	void *d = data_buf(seed);

	ck_assert_int_ge(fd, 0);
	if (resume_at) {
		h.flags |= SEND_RESUMED;
		h.resume_at = resume_at;
	}
	ck_assert_int_eq(send_writer_begin(&w, fd, &h, NULL), 0);
	ck_assert_int_eq(send_writer_data(&w, 1 << 20, d, DATA_LEN), 0);
	ck_assert_int_eq(send_writer_hole(&w, (1 << 20) + DATA_LEN, 65536), 0);
	ck_assert_int_eq(send_writer_data(&w, 32 << 20, d, len_small), 0);
	ck_assert_int_eq(send_writer_end(&w), 0);
	ck_assert_uint_eq(w.records, 4);
	ck_assert_uint_eq(w.data_bytes, DATA_LEN + len_small);
	*len = (size_t)w.bytes;
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	free(d);
	return fd;
}

static int make_stream(uint8_t seed, uint32_t len_small, size_t *len)
{
	return make_stream_from(seed, len_small, 0, len);
}

/* Reads a whole stream: 0, or the first error (and @why). */
static int read_stream(int fd, char *why)
{
	struct send_header h;
	struct send_reader r;
	struct send_record rec;
	void *buf = malloc(SEND_DATA_MAX);
	int e = send_reader_begin(&r, fd, &h, NULL, why);

	while (!e) {
		e = send_reader_next(&r, &rec, buf, why);
		if (!e && rec.type == SEND_END)
			break;
	}
	if (!e)
		e = send_reader_finish(&r, why);
	free(buf);
	return e;
}

/* A copy of the first @len bytes of @fd's stream, @flip (an offset) xor 0x01, or none if -1. */
static int altered(int fd, size_t len, long flip)
{
	int copy = memfd_create("altered", MFD_CLOEXEC);
	uint8_t *p = malloc(len);

	ck_assert_int_eq(pread(fd, p, len, 0), (ssize_t)len);
	if (flip >= 0)
		p[flip] ^= 0x01;
	ck_assert_int_eq(write(copy, p, len), (ssize_t)len);
	ck_assert_int_eq(lseek(copy, 0, SEEK_SET), 0);
	free(p);
	return copy;
}

START_TEST(what_the_writer_writes_the_reader_reads_back)
{
	size_t len;
	int fd = make_stream(7, 4096, &len);
	uint8_t *want = data_buf(7), *buf = malloc(SEND_DATA_MAX);
	struct send_header h;
	struct send_reader r;
	struct send_record rec;
	char why[SEND_WHY_LEN];

	ck_assert_int_eq(send_reader_begin(&r, fd, &h, NULL, why), 0);
	ck_assert_str_eq(h.source_name, "vm1-mon");
	ck_assert_str_eq(h.base_name, "vm1-sun");
	ck_assert_uint_eq(h.flags, SEND_INCREMENTAL);
	ck_assert_uint_eq(h.volume_size, VOLUME_SIZE);
	ck_assert_int_eq(send_reader_next(&r, &rec, buf, why), 0);
	ck_assert_int_eq(rec.type, SEND_DATA);
	ck_assert_uint_eq(rec.offset, 1 << 20);
	ck_assert_uint_eq(rec.length, SEND_DATA_MAX);
	ck_assert_int_eq(memcmp(buf, want, SEND_DATA_MAX), 0);
	ck_assert_int_eq(send_reader_next(&r, &rec, buf, why), 0);
	ck_assert_uint_eq(rec.length, 8192);
	ck_assert_int_eq(memcmp(buf, want + SEND_DATA_MAX, 8192), 0);
	ck_assert_int_eq(send_reader_next(&r, &rec, buf, why), 0);
	ck_assert_int_eq(rec.type, SEND_HOLE);
	ck_assert_uint_eq(rec.length, 65536);
	ck_assert_int_eq(send_reader_next(&r, &rec, buf, why), 0);
	ck_assert_uint_eq(rec.offset, 32 << 20);
	ck_assert_int_eq(send_reader_next(&r, &rec, buf, why), 0);
	ck_assert_int_eq(rec.type, SEND_END);
	ck_assert_uint_eq(rec.end_records, 4);
	ck_assert_uint_eq(r.pos, len);
	ck_assert_int_eq(send_reader_finish(&r, why), 0);
	free(want);
	free(buf);
	close(fd);
}
END_TEST

START_TEST(every_flipped_byte_is_refused_as_malformed)
{
	size_t len;
	int fd = make_stream(3, 4096, &len);
	char why[SEND_WHY_LEN];

	/*
	 * Every byte of the first and last 200, one in ~10,000 between: each
	 * try reads the whole 1 MiB stream again, and 1,460 tries (one in 997)
	 * outlasted Check's 60 s under ThreadSanitizer on a loaded machine.
	 */
	for (long at = 0; at < (long)len; at += at < 200 || at > (long)len - 200 ? 1 : 9973) {
		int copy = altered(fd, len, at);

		why[0] = '\0';
		ck_assert_msg(read_stream(copy, why) == -EBADMSG, "byte %ld flipped was not refused", at);
		ck_assert(why[0]);
		close(copy);
	}
	close(fd);
}
END_TEST

START_TEST(every_cut_is_refused_as_cut_short)
{
	size_t len;
	int fd = make_stream(3, 4096, &len);
	char why[SEND_WHY_LEN];

	for (size_t cut = 0; cut < len; cut += cut < 200 || cut > len - 200 ? 1 : 10007) {	/* as above */
		int copy = altered(fd, cut, -1);

		ck_assert_msg(read_stream(copy, why) == -ENODATA, "a cut at %zu was not seen", cut);
		close(copy);
	}
	close(fd);
}
END_TEST

START_TEST(a_byte_after_the_end_is_refused)
{
	size_t len;
	int fd = make_stream(3, 4096, &len);
	char why[SEND_WHY_LEN];

	ck_assert_int_eq(lseek(fd, 0, SEEK_END), (off_t)len);
	ck_assert_int_eq(write(fd, "x", 1), 1);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_int_eq(read_stream(fd, why), -EBADMSG);
	ck_assert_str_eq(why, "bytes follow the stream's end record");
	close(fd);
}
END_TEST

START_TEST(the_writer_refuses_ranges_the_format_cannot_hold)
{
	struct send_header h = header(false);
	struct send_writer w;
	int fd = memfd_create("w", MFD_CLOEXEC);
	char b[8192] = { 0 };

	ck_assert_int_eq(send_writer_begin(&w, fd, &h, NULL), 0);
	ck_assert_int_eq(send_writer_data(&w, 100, b, 4096), -EINVAL);	/* unaligned */
	ck_assert_int_eq(send_writer_data(&w, 8192, b, 100), -EINVAL);
	ck_assert_int_eq(send_writer_hole(&w, VOLUME_SIZE - 4096, 8192), -EINVAL);	/* past the end */
	ck_assert_int_eq(send_writer_data(&w, 8192, b, 8192), 0);
	ck_assert_int_eq(send_writer_hole(&w, 0, 4096), -EINVAL);	/* before the last */
	ck_assert_int_eq(send_writer_hole(&w, 8192, 0), -EINVAL);	/* empty */
	close(fd);
}
END_TEST

/* A reader of @fd's stream stopped after its first @n records: its place. */
static struct send_place place_after(int fd, int n)
{
	struct send_header h;
	struct send_reader r;
	struct send_record rec;
	struct send_place at;
	void *buf = malloc(SEND_DATA_MAX);
	char why[SEND_WHY_LEN];

	ck_assert_int_eq(send_reader_begin(&r, fd, &h, NULL, why), 0);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(send_reader_next(&r, &rec, buf, why), 0);
	send_reader_place(&r, &at);
	free(buf);
	return at;
}

/* Resumes a reader of @fd at @at and reads to the end: 0 or the error. */
static int resume_and_finish(int fd, const struct send_place *at, char *why)
{
	struct send_header h;
	struct send_reader r;
	struct send_record rec;
	void *buf = malloc(SEND_DATA_MAX);
	int e = send_reader_begin(&r, fd, &h, NULL, why);

	if (!e)
		e = send_reader_resume(&r, at, buf, why);
	while (!e) {
		e = send_reader_next(&r, &rec, buf, why);
		if (!e && rec.type == SEND_END)
			break;
	}
	free(buf);
	return e;
}

/* @fd's bytes through a pipe, which cannot seek, written by a child. */
static int as_pipe(int fd, size_t len)
{
	int p[2];
	pid_t child;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (!child) {
		uint8_t *b = malloc(len);

		close(p[0]);
		_exit(!b || pread(fd, b, len, 0) != (ssize_t)len ||
		      write(p[1], b, len) != (ssize_t)len);
	}
	close(p[1]);
	return p[0];
}

/* Closes the pipe of as_pipe and reaps its writer. */
static void close_pipe(int fd)
{
	close(fd);
	while (wait(NULL) > 0)
		;
}

START_TEST(a_place_takes_a_reader_on_in_a_file_and_in_a_pipe)
{
	size_t len;
	int fd = make_stream(9, 4096, &len), pipe_fd;
	struct send_place at = place_after(fd, 2);
	char why[SEND_WHY_LEN];

	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_int_eq(resume_and_finish(fd, &at, why), 0);
	pipe_fd = as_pipe(fd, len);
	ck_assert_int_eq(resume_and_finish(pipe_fd, &at, why), 0);
	close_pipe(pipe_fd);
	close(fd);
}
END_TEST

START_TEST(a_place_in_another_stream_is_refused_in_a_pipe)
{
	size_t len, other_len;
	int fd = make_stream(9, 4096, &len), other = make_stream(10, 4096, &other_len), pipe_fd;
	struct send_place at = place_after(fd, 2);
	char why[SEND_WHY_LEN];

	pipe_fd = as_pipe(other, other_len);
	ck_assert_int_eq(resume_and_finish(pipe_fd, &at, why), -ESTALE);
	close_pipe(pipe_fd);
	close(other);
	close(fd);
}
END_TEST

START_TEST(the_rest_of_a_stream_goes_on_only_where_the_reader_stopped)
{
	size_t len, rest_len;
	int fd = make_stream(5, 4096, &len);
	struct send_place at = place_after(fd, 2), other;
	int rest = make_stream_from(5, 4096, at.pos, &rest_len);
	off_t rest_size = lseek(rest, 0, SEEK_END);
	uint8_t *whole = malloc(len), *tail = malloc(len);
	struct send_header h;
	struct send_reader r;
	struct send_record rec;
	char why[SEND_WHY_LEN];
	void *buf = malloc(SEND_DATA_MAX);
	size_t head;

	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	other = place_after(fd, 1);
	ck_assert_uint_eq(rest_len, len);
	head = (size_t)rest_size - (len - at.pos);	/* its own header */
	ck_assert_int_eq(pread(fd, whole, len, 0), (ssize_t)len);
	ck_assert_int_eq(pread(rest, tail, (size_t)rest_size, 0), rest_size);
	ck_assert_int_eq(memcmp(tail + head, whole + at.pos, len - at.pos), 0);

	ck_assert_int_eq(lseek(rest, 0, SEEK_SET), 0);
	ck_assert_int_eq(send_reader_begin(&r, rest, &h, NULL, why), 0);
	ck_assert_uint_eq(h.resume_at, at.pos);
	ck_assert_int_eq(send_reader_next(&r, &rec, buf, why), -EBADMSG);	/* not resumed */
	ck_assert_int_eq(lseek(rest, 0, SEEK_SET), 0);
	ck_assert_int_eq(resume_and_finish(rest, &other, why), -ESTALE);
	ck_assert_int_eq(lseek(rest, 0, SEEK_SET), 0);
	ck_assert_int_eq(resume_and_finish(rest, &at, why), 0);
	free(buf);
	free(whole);
	free(tail);
	close(rest);
	close(fd);
}
END_TEST

static bool never(void *arg)
{
	(void)arg;
	return false;
}

static bool asked_twice(void *arg)
{
	int *asked = arg;

	return ++*asked >= 2;
}

START_TEST(a_silent_pipe_ends_the_stream_when_cancel_says_so)
{
	struct send_cancel cancel = { .cancelled = asked_twice };
	struct send_header h = header(false);
	struct send_writer w;
	struct send_reader r;
	char why[SEND_WHY_LEN];
	void *d = data_buf(1);
	int p[2], asked = 0;

	cancel.arg = &asked;
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	ck_assert_int_eq(send_reader_begin(&r, p[0], &h, &cancel, why), -ECANCELED);
	ck_assert_int_eq(asked, 2);
	asked = 0;
	h = header(false);		/* the reader cleared it */
	cancel.cancelled = never;	/* asked before each write too */
	ck_assert_int_eq(send_writer_begin(&w, p[1], &h, &cancel), 0);
	cancel.cancelled = asked_twice;
	asked = 0;
	ck_assert_int_eq(send_writer_data(&w, 0, d, DATA_LEN), -ECANCELED);	/* nobody reads */
	ck_assert_int_eq(asked, 2);
	send_writer_release(&w);
	close(p[0]);
	close(p[1]);
	free(d);
}
END_TEST

static bool asked_thrice(void *arg)
{
	int *asked = arg;

	return ++*asked >= 3;
}

START_TEST(a_flowing_stream_ends_between_reads_when_cancel_says_so)
{
	struct send_cancel cancel = { .cancelled = never };
	char why[SEND_WHY_LEN];
	struct send_record rec;
	struct send_header h;
	struct send_reader r;
	void *buf = malloc(SEND_DATA_MAX);
	size_t len;
	int fd = make_stream(1, 8192, &len), asked = 0, e;

	cancel.arg = &asked;
	ck_assert_int_eq(send_reader_begin(&r, fd, &h, &cancel, why), 0);
	cancel.cancelled = asked_thrice;
	do
		e = send_reader_next(&r, &rec, buf, why);
	while (!e && rec.type != SEND_END);
	ck_assert_int_eq(e, -ECANCELED);	/* a file never stalls: asked between reads */
	ck_assert_int_eq(asked, 3);
	ck_assert_uint_lt(r.pos, len);
	free(buf);
	close(fd);
}
END_TEST

START_TEST(a_resume_past_the_end_writes_nothing_at_all)
{
	size_t len;
	int whole = make_stream(1, 8192, &len);
	int fd = memfd_create("rest", MFD_CLOEXEC);
	struct send_header h = header(true);
	struct send_writer w;
	void *d = data_buf(1);

	h.flags |= SEND_RESUMED;
	h.resume_at = len;
	ck_assert_int_eq(send_writer_begin(&w, fd, &h, NULL), 0);
	ck_assert_int_eq(send_writer_data(&w, 1 << 20, d, DATA_LEN), 0);
	ck_assert_int_eq(send_writer_hole(&w, (1 << 20) + DATA_LEN, 65536), 0);
	ck_assert_int_eq(send_writer_data(&w, 32 << 20, d, 8192), 0);
	ck_assert_int_eq(send_writer_end(&w), -ERANGE);
	ck_assert_uint_eq(w.bytes, len);
	ck_assert_int_eq(lseek(fd, 0, SEEK_END), 0);
	free(d);
	close(fd);
	close(whole);
}
END_TEST

static Suite *send_stream_suite(void)
{
	Suite *suite = suite_create("send_stream");
	TCase *tc = tcase_create("write and read");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, what_the_writer_writes_the_reader_reads_back);
	tcase_add_test(tc, every_flipped_byte_is_refused_as_malformed);
	tcase_add_test(tc, every_cut_is_refused_as_cut_short);
	tcase_add_test(tc, a_byte_after_the_end_is_refused);
	tcase_add_test(tc, the_writer_refuses_ranges_the_format_cannot_hold);
	tcase_add_test(tc, a_place_takes_a_reader_on_in_a_file_and_in_a_pipe);
	tcase_add_test(tc, a_place_in_another_stream_is_refused_in_a_pipe);
	tcase_add_test(tc, a_silent_pipe_ends_the_stream_when_cancel_says_so);
	tcase_add_test(tc, a_flowing_stream_ends_between_reads_when_cancel_says_so);
	tcase_add_test(tc, a_resume_past_the_end_writes_nothing_at_all);
	tcase_add_test(tc, the_rest_of_a_stream_goes_on_only_where_the_reader_stopped);
	suite_add_tcase(suite, tc);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(send_stream_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
