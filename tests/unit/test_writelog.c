/*
 * tests/unit/test_writelog.c: the write log records what the devices
 * persist, in one global order, and nothing when it is off.
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device.h"
#include "engine.h"
#include "segs.h"
#include "writelog.h"

#define THREADS		4
#define PER_THREAD	500

static char dir[] = "/tmp/test_writelog.XXXXXX";
static char log_dir[256], dev_path[256];

static void make_dir(void)
{
	strcpy(dir, "/tmp/test_writelog.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(log_dir, sizeof(log_dir), "%s/log", dir);
	snprintf(dev_path, sizeof(dev_path), "%s/dev.img", dir);
}

static void remove_dir(void)
{
	char cmd[PATH_MAX + 16];

	writelog_stop();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* The whole of LOG_DIR/@name; *len bytes, malloc'ed. */
static void *slurp(const char *name, size_t *len)
{
	char path[PATH_MAX];
	struct stat st;
	void *buf;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", log_dir, name);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	ck_assert_int_eq(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

static struct writelog_rec *records(size_t *nr)
{
	size_t len;
	struct writelog_rec *r = slurp("log", &len);

	*nr = len / sizeof(*r);
	ck_assert_uint_eq(len % sizeof(*r), 0);
	return r;
}

START_TEST(records_each_write_and_flush_with_its_position_and_payload)
{
	char payload[512], *data;
	struct writelog_rec *r;
	uint64_t file, issued;
	size_t nr, data_len;

	memset(payload, 0x5a, sizeof(payload));
	ck_assert_int_eq(writelog_start(log_dir, 0), 0);
	file = writelog_file("/pool/d0.img");
	issued = writelog_now();
	writelog_write(file, issued, 4096, payload, sizeof(payload));
	writelog_flush(file, writelog_now());
	writelog_stop();

	r = records(&nr);
	data = slurp("data", &data_len);
	ck_assert_uint_eq(nr, 4);
	ck_assert_uint_eq(r[0].type, WRITELOG_HEADER);
	ck_assert(r[0].off == WRITELOG_MAGIC);
	ck_assert_uint_eq(r[1].type, WRITELOG_FILE);
	ck_assert_uint_eq(file, 1);
	ck_assert_int_eq(memcmp(data + r[1].data, "/pool/d0.img", r[1].len), 0);
	ck_assert_uint_eq(r[2].type, WRITELOG_WRITE);
	ck_assert_uint_eq(r[2].seq, 2);
	ck_assert_uint_eq(r[2].issued, 2);
	ck_assert_uint_eq(r[2].off, 4096);
	ck_assert_uint_eq(r[2].len, sizeof(payload));
	ck_assert_int_eq(memcmp(data + r[2].data, payload, sizeof(payload)), 0);
	ck_assert_uint_eq(r[3].type, WRITELOG_FLUSH);
	ck_assert_uint_eq(r[3].issued, 3);	/* covers the write at 2 */
	free(r);
	free(data);
}
END_TEST

static void *writer(void *arg)
{
	uint64_t file = *(uint64_t *)arg;
	char byte = 1;

	for (int i = 0; i < PER_THREAD; i++)
		writelog_write(file, writelog_now(), (uint64_t)i, &byte, 1);
	return NULL;
}

START_TEST(positions_are_one_order_across_threads)
{
	pthread_t t[THREADS];
	struct writelog_rec *r;
	uint64_t files[THREADS];
	size_t nr;

	ck_assert_int_eq(writelog_start(log_dir, 0), 0);
	for (int i = 0; i < THREADS; i++)
		files[i] = writelog_file("/pool/d.img");
	for (int i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, writer, &files[i]), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	writelog_stop();

	r = records(&nr);
	ck_assert_uint_eq(nr, 1 + THREADS + THREADS * PER_THREAD);
	for (size_t i = 1; i < nr; i++) {
		ck_assert_uint_eq(r[i].seq, i);		/* no hole, no clash */
		ck_assert_uint_le(r[i].issued, r[i].seq);
	}
	free(r);
}
END_TEST

START_TEST(a_log_started_again_goes_on_after_its_last_record)
{
	struct writelog_rec *r;
	size_t nr;

	ck_assert_int_eq(writelog_start(log_dir, 0), 0);
	ck_assert_uint_eq(writelog_file("/pool/pool.db"), 1);
	writelog_stop();
	ck_assert_int_eq(writelog_start(log_dir, 0), 0);
	ck_assert_uint_eq(writelog_now(), 2);
	ck_assert_uint_eq(writelog_file("/pool/pool.db"), 2);
	writelog_stop();
	r = records(&nr);
	ck_assert_uint_eq(nr, 3);
	free(r);
}
END_TEST

static void make_device(struct device **dev)
{
	int fd = open(dev_path, O_RDWR | O_CREAT, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 1 << 20), 0);
	close(fd);
	ck_assert_int_eq(device_open(dev_path, 1, dev), 0);
}

START_TEST(device_writes_zeroing_and_flushes_are_recorded)
{
	struct engine e;
	struct device *dev;
	struct segs segs;
	struct writelog_rec *r;
	void *buf;
	size_t nr;

	ck_assert_int_eq(writelog_start(log_dir, 0), 0);
	make_device(&dev);
	ck_assert_uint_eq(dev->log_file, 1);
	ck_assert_int_eq(engine_init(&e, 8), 0);
	ck_assert_int_eq(posix_memalign(&buf, 4096, 8192), 0);
	memset(buf, 7, 8192);
	segs_init(&segs);
	ck_assert_int_eq(segs_push(&segs, dev, 65536, 4096, 0), 0);
	ck_assert_int_eq(segs_push(&segs, dev, 131072, 4096, 4096), 0);
	ck_assert_int_eq(engine_write(&e, &segs, buf), 0);
	ck_assert_int_eq(engine_sync(&e, &dev, 1), 0);
	ck_assert_int_eq(device_zero(dev, 65536, 4096, 1), 0);
	ck_assert_int_eq(device_sync(dev), 0);
	segs_release(&segs);
	engine_exit(&e);
	device_close(dev);
	free(buf);
	writelog_stop();

	r = records(&nr);
	ck_assert_uint_eq(nr, 7);
	ck_assert_uint_eq(r[2].type, WRITELOG_WRITE);
	ck_assert_uint_eq(r[3].type, WRITELOG_WRITE);
	ck_assert_uint_eq(r[2].off + r[3].off, 65536 + 131072);
	ck_assert_uint_eq(r[4].type, WRITELOG_FLUSH);
	ck_assert_uint_eq(r[4].issued, 4);	/* after both writes */
	ck_assert_uint_eq(r[5].type, WRITELOG_ZERO);
	ck_assert_uint_eq(r[5].off, 65536);
	ck_assert_uint_eq(r[5].len, 4096);
	ck_assert_uint_eq(r[6].type, WRITELOG_FLUSH);
	for (size_t i = 2; i < nr; i++)
		ck_assert_uint_eq(r[i].file, 1);
	free(r);
}
END_TEST

START_TEST(nothing_is_recorded_when_off)
{
	struct device *dev;

	make_device(&dev);
	ck_assert_uint_eq(dev->log_file, 0);
	ck_assert(!writelog_on());
	ck_assert_uint_eq(writelog_now(), 0);
	ck_assert(!writelog_broken(WRITELOG_BREAK_COMMIT_BEFORE_FLUSH));
	ck_assert_int_eq(device_sync(dev), 0);
	device_close(dev);
	ck_assert_int_ne(access(log_dir, F_OK), 0);
}
END_TEST

START_TEST(deliberate_bugs_are_on_only_when_asked_for)
{
	ck_assert_int_eq(writelog_start(log_dir, WRITELOG_BREAK_REUSE_BEFORE_COMMIT), 0);
	ck_assert(writelog_broken(WRITELOG_BREAK_REUSE_BEFORE_COMMIT));
	ck_assert(!writelog_broken(WRITELOG_BREAK_COMMIT_BEFORE_FLUSH));
	writelog_stop();
	ck_assert(!writelog_broken(WRITELOG_BREAK_REUSE_BEFORE_COMMIT));
}
END_TEST

static Suite *writelog_suite(void)
{
	Suite *s = suite_create("writelog");
	TCase *tc = tcase_create("log");

	tcase_add_checked_fixture(tc, make_dir, remove_dir);
	tcase_add_test(tc, records_each_write_and_flush_with_its_position_and_payload);
	tcase_add_test(tc, positions_are_one_order_across_threads);
	tcase_add_test(tc, a_log_started_again_goes_on_after_its_last_record);
	tcase_add_test(tc, device_writes_zeroing_and_flushes_are_recorded);
	tcase_add_test(tc, nothing_is_recorded_when_off);
	tcase_add_test(tc, deliberate_bugs_are_on_only_when_asked_for);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(writelog_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
