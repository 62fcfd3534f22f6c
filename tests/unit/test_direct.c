/*
 * A device's data at any offset, length and buffer goes through its
 * O_DIRECT descriptor only: writes land byte-exact and leave no page of its
 * data area in the page cache; read-modify-writes racing each other,
 * whole-unit writes or zeroing lose nothing; the engine does a request of aligned
 * and unaligned segments, also while someone holds a range alone; a
 * memory-backed file is served buffered and mapped.  The files live in
 * /tmp (direct I/O where its file system has it) and /dev/shm; data goes
 * from DEVICE_DATA_OFFSET on, as on a raw device.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "device.h"
#include "direct.h"
#include "engine.h"
#include "rangelock.h"
#include "segs.h"

#define SIZE	(4u << 20)	/* bytes: a file */

static char path[64];

static struct device *open_file(const char *dir)
{
	struct device *dev;
	int fd;

	snprintf(path, sizeof(path), "%s/mapperfs-test-direct.XXXXXX", dir);
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, SIZE), 0);
	close(fd);
	ck_assert_int_eq(device_open(path, 1, &dev), 0);
	return dev;
}

static void close_file(struct device *dev)
{
	device_close(dev);
	unlink(path);
}

static void write_all(struct device *dev, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = direct_pwrite(dev, (const char *)buf + done, len - done, off + done);

		ck_assert_int_gt(n, 0);
		done += (size_t)n;
	}
}

static void read_all(struct device *dev, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = direct_pread(dev, (char *)buf + done, len - done, off + done);

		ck_assert_int_gt(n, 0);
		done += (size_t)n;
	}
}

/*
 * Pages of @dev's file past the label in the page cache (the label is
 * read through the buffered descriptor, with no read-ahead past it).
 */
static unsigned int cached_pages(struct device *dev)
{
	unsigned char vec[(SIZE - LABEL_SIZE) / 4096];
	unsigned int n = 0;
	char *p = mmap(NULL, SIZE, PROT_READ, MAP_SHARED, dev->fd, 0);

	ck_assert_ptr_ne(p, MAP_FAILED);
	ck_assert_int_eq(mincore(p + LABEL_SIZE, SIZE - LABEL_SIZE, vec), 0);
	munmap(p, SIZE);
	for (size_t i = 0; i < sizeof(vec); i++)
		n += vec[i] & 1;
	return n;
}

START_TEST(writes_at_any_offset_length_and_buffer_land_byte_exact_and_leave_no_cached_page)
{
	struct device *dev = open_file("/tmp");
	char *model = calloc(1, SIZE), *got = malloc(SIZE + 8), *src = malloc(20000);
	struct device_label l;

	if (dev->fd_direct < 0) {
		fprintf(stderr, "/tmp takes no O_DIRECT: nothing to check\n");
		goto out;
	}
	ck_assert_int_eq(device_label_read(dev, &l), -ENODATA);	/* reads the label area */
	srandom(25);
	for (int i = 0; i < 1000; i++) {
		uint64_t off = DEVICE_DATA_OFFSET + (uint64_t)random() % (SIZE - DEVICE_DATA_OFFSET - 20000);
		size_t len = 1 + (size_t)random() % (i % 10 ? 3000 : 19000);
		size_t skew = (size_t)random() % 8;

		for (size_t j = 0; j < len; j++)
			src[skew + j] = (char)random();
		write_all(dev, src + skew, len, off);
		memcpy(model + off, src + skew, len);
		if (i % 100 == 0) {
			skew = (size_t)random() % 8;
			read_all(dev, got + skew, len, off);
			ck_assert(memcmp(got + skew, model + off, len) == 0);
		}
	}
	read_all(dev, got + 3, SIZE - DEVICE_DATA_OFFSET, DEVICE_DATA_OFFSET);
	ck_assert(memcmp(got + 3, model + DEVICE_DATA_OFFSET, SIZE - DEVICE_DATA_OFFSET) == 0);
	ck_assert_uint_eq(cached_pages(dev), 0);
out:
	free(model);
	free(got);
	free(src);
	close_file(dev);
}
END_TEST

#define STRIDED	(1u << 20)	/* bytes the racing writers write, from DEVICE_DATA_OFFSET */

/*
 * Writes byte @c over [at + k * stride, + len) below STRIDED, meeting the
 * other writer at @meet before each write, so that the two write into
 * one unit at once every time.
 */
struct writer {
	struct device *dev;
	uint64_t at, stride, len;
	char c;				/* 0: zeroes with device_zero() */
	pthread_barrier_t *meet;
};

static void *write_strided(void *arg)
{
	struct writer *w = arg;
	char buf[4096];

	memset(buf, w->c, sizeof(buf));
	for (uint64_t off = w->at; off + w->len <= STRIDED; off += w->stride) {
		pthread_barrier_wait(w->meet);
		if (w->c)
			write_all(w->dev, buf, w->len, DEVICE_DATA_OFFSET + off);
		else
			ck_assert_int_eq(device_zero(w->dev, DEVICE_DATA_OFFSET + off, w->len, 0), 0);
	}
	return NULL;
}

static void run_two(struct writer *a, struct writer *b)
{
	pthread_barrier_t meet;
	pthread_t t;

	ck_assert_int_eq(pthread_barrier_init(&meet, NULL, 2), 0);
	a->meet = b->meet = &meet;
	ck_assert_int_eq(pthread_create(&t, NULL, write_strided, a), 0);
	write_strided(b);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	pthread_barrier_destroy(&meet);
}

START_TEST(two_writers_of_alternate_halves_of_every_unit_lose_nothing)
{
	struct device *dev = open_file("/tmp");
	uint64_t unit = dev->dio_off_align, half = unit / 2;
	struct writer a = { dev, 0, unit, half, 'a', NULL }, b = { dev, half, unit, half, 'b', NULL };
	char *got = malloc(STRIDED);

	if (dev->fd_direct < 0)
		goto out;
	run_two(&a, &b);
	read_all(dev, got, STRIDED, DEVICE_DATA_OFFSET);
	for (uint64_t i = 0; i < STRIDED; i++)
		ck_assert_msg(got[i] == (i % unit < half ? 'a' : 'b'), "byte %llu is %d",
			      (unsigned long long)i, got[i]);
out:
	free(got);
	close_file(dev);
}
END_TEST

START_TEST(a_writer_inside_units_undoes_nothing_of_a_writer_of_whole_units)
{
	struct device *dev = open_file("/tmp");
	uint64_t unit = dev->dio_off_align;
	struct writer whole = { dev, 0, unit, unit, 'w', NULL }, inside = { dev, 0, unit, 1, 'i', NULL };
	char *got = malloc(STRIDED);

	if (dev->fd_direct < 0)
		goto out;
	run_two(&whole, &inside);
	read_all(dev, got, STRIDED, DEVICE_DATA_OFFSET);
	for (uint64_t i = 0; i < STRIDED; i++)
		ck_assert_msg(got[i] == 'w' || (i % unit == 0 && got[i] == 'i'),
			      "byte %llu is %d", (unsigned long long)i, got[i]);
out:
	free(got);
	close_file(dev);
}
END_TEST

START_TEST(a_zeroing_of_half_a_unit_is_not_undone_by_a_write_of_the_other_half)
{
	struct device *dev = open_file("/tmp");
	uint64_t unit = dev->dio_off_align, half = unit / 2;
	struct writer a = { dev, 0, unit, half, 'a', NULL }, zero = { dev, half, unit, half, 0, NULL };
	char *got = malloc(STRIDED);

	if (dev->fd_direct < 0)
		goto out;
	memset(got, 'x', STRIDED);
	write_all(dev, got, STRIDED, DEVICE_DATA_OFFSET);
	run_two(&a, &zero);
	read_all(dev, got, STRIDED, DEVICE_DATA_OFFSET);
	for (uint64_t i = 0; i < STRIDED; i++)
		ck_assert_msg(got[i] == (i % unit < half ? 'a' : 0), "byte %llu is %d",
			      (unsigned long long)i, got[i]);
out:
	free(got);
	close_file(dev);
}
END_TEST

/* One request: an aligned piece, one inside a unit, one off its buffer. */
static void engine_write_mixed(struct device *dev, char *buf)
{
	struct engine e;
	struct segs s;

	ck_assert_int_eq(engine_init(&e, 8), 0);
	segs_init(&s);
	ck_assert_int_eq(segs_push(&s, dev, 1 << 20, 8192, 0), 0);
	ck_assert_int_eq(segs_push(&s, dev, (2 << 20) + 100, 1000, 8192), 0);
	ck_assert_int_eq(segs_push(&s, dev, 3 << 20, 4096, 8192 + 1000), 0);
	ck_assert_int_eq(engine_write(&e, &s, buf), 0);
	memset(buf, 0, 8192 + 1000 + 4096);
	ck_assert_int_eq(engine_read(&e, &s, buf), 0);
	segs_release(&s);
	engine_exit(&e);
}

static void check_mixed(struct device *dev, const char *want)
{
	char got[8192];

	read_all(dev, got, 8192, 1 << 20);
	ck_assert(memcmp(got, want, 8192) == 0);
	read_all(dev, got, 1000, (2 << 20) + 100);
	ck_assert(memcmp(got, want + 8192, 1000) == 0);
	read_all(dev, got, 4096, 3 << 20);
	ck_assert(memcmp(got, want + 9192, 4096) == 0);
}

START_TEST(the_engine_writes_aligned_and_unaligned_segments_of_one_request)
{
	struct device *dev = open_file("/tmp");
	char *buf, want[8192 + 1000 + 4096];
	struct rangelock_range far;

	ck_assert_int_eq(posix_memalign((void **)&buf, 4096, sizeof(want)), 0);
	for (size_t i = 0; i < sizeof(want); i++)
		want[i] = (char)(i * 7 + 1);
	memcpy(buf, want, sizeof(want));
	engine_write_mixed(dev, buf);
	ck_assert(memcmp(buf, want, sizeof(want)) == 0);	/* read back */
	check_mixed(dev, want);

	/* Someone alone elsewhere: the ring's writes are done one by one. */
	for (size_t i = 0; i < sizeof(want); i++)
		want[i] = (char)(i * 3 + 2);
	memcpy(buf, want, sizeof(want));
	rangelock_lock(dev->lock, &far, SIZE - 4096, 4096);
	engine_write_mixed(dev, buf);
	rangelock_unlock(dev->lock, &far);
	check_mixed(dev, want);
	free(buf);
	close_file(dev);
}
END_TEST

START_TEST(a_memory_backed_file_is_served_buffered_and_mapped)
{
	struct device *dev = open_file("/dev/shm");
	char got[300];

	ck_assert_int_eq(dev->fd_direct, -1);
	ck_assert_ptr_nonnull(dev->mem);
	write_all(dev, "a few bytes", 11, 12345);
	ck_assert(memcmp(dev->mem + 12345, "a few bytes", 11) == 0);
	read_all(dev, got, 11, 12345);
	ck_assert(memcmp(got, "a few bytes", 11) == 0);
	close_file(dev);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("direct");
	TCase *tc = tcase_create("direct");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, writes_at_any_offset_length_and_buffer_land_byte_exact_and_leave_no_cached_page);
	tcase_add_test(tc, two_writers_of_alternate_halves_of_every_unit_lose_nothing);
	tcase_add_test(tc, a_writer_inside_units_undoes_nothing_of_a_writer_of_whole_units);
	tcase_add_test(tc, a_zeroing_of_half_a_unit_is_not_undone_by_a_write_of_the_other_half);
	tcase_add_test(tc, the_engine_writes_aligned_and_unaligned_segments_of_one_request);
	tcase_add_test(tc, a_memory_backed_file_is_served_buffered_and_mapped);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
