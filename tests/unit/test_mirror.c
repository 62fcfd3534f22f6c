/*
 * The mirror target over real files: a write lands on every leg, its
 * region's bit is set in the log before it, a log that comes back with
 * bits set is resynced from the first leg, a leg being replaced is
 * rebuilt, and the cleaner clears the bits of idle regions.
 */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "device.h"
#include "engine.h"
#include "linear.h"
#include "mirror.h"
#include "rcu.h"
#include "volume.h"

#define MiB (1024u * 1024u)
#define SIZE (8 * MiB)		/* four regions */

struct fixture {
	char dir[64], leg_path[3][96], log_path[96];
	struct device *dev[3];
	struct engine e;
};

static struct fixture f;

static void setup(void)
{
	urcu_memb_register_thread();
	strcpy(f.dir, "/tmp/mapperfs-test-mirror.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(f.dir));
	for (int i = 0; i < 3; i++) {
		int fd;

		snprintf(f.leg_path[i], sizeof(f.leg_path[i]), "%s/leg%d", f.dir, i);
		fd = open(f.leg_path[i], O_RDWR | O_CREAT, 0600);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(ftruncate(fd, SIZE), 0);
		close(fd);
		ck_assert_int_eq(device_open(f.leg_path[i], i + 1, &f.dev[i]), 0);
	}
	snprintf(f.log_path, sizeof(f.log_path), "%s/log", f.dir);
	ck_assert_int_eq(engine_init(&f.e, 8), 0);
}

static void teardown(void)
{
	engine_exit(&f.e);
	for (int i = 0; i < 3; i++) {
		device_close(f.dev[i]);
		unlink(f.leg_path[i]);
	}
	unlink(f.log_path);
	rmdir(f.dir);
	urcu_memb_unregister_thread();
}

static struct target *leg(int i)
{
	struct linear_seg s = { f.dev[i], 0, SIZE };
	struct target *t;

	ck_assert_int_eq(linear_create(&s, 1, &t), 0);
	return t;
}

/* A mirror of legs 0 and 1, over a new log or the one on disk. */
static struct volume *open_mirror(bool new_log)
{
	int fd = open(f.log_path, O_RDWR | O_CREAT | O_NOFOLLOW, 0600);
	const char *names[] = { "leg0", "leg1" };
	struct target *legs[] = { leg(0), leg(1) }, *t;
	struct mirror_log *log;
	struct volume *v;

	ck_assert_int_ge(fd, 0);
	if (new_log)
		ck_assert_int_eq(mirror_log_create(fd, 2, MIRROR_REGION_SIZE,
						   SIZE / MIRROR_REGION_SIZE, false, &log), 0);
	else
		ck_assert_int_eq(mirror_log_open(fd, 2, SIZE / MIRROR_REGION_SIZE, &log), 0);
	ck_assert_int_eq(mirror_create("m", SIZE, legs, names, 2, log, 0, &t), 0);
	ck_assert_int_eq(mirror_start(t), 0);
	ck_assert_int_eq(volume_create(1, "m", SIZE, t, &v), 0);
	return v;
}

static void file_read(const char *path, void *buf, size_t len, off_t off)
{
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, buf, len, off), (ssize_t)len);
	close(fd);
}

static void file_write(const char *path, const void *buf, size_t len, off_t off)
{
	int fd = open(path, O_WRONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, buf, len, off), (ssize_t)len);
	close(fd);
}

/* The log's bits, byte 0 (regions 0..7). */
static uint8_t log_bits(void)
{
	uint8_t b;

	file_read(f.log_path, &b, 1, MIRROR_LOG_HEADER);
	return b;
}

/* Waits for the mirror's thread to bring every region in sync (bounded). */
static void wait_in_sync(struct volume *v)
{
	struct mirror_status s;

	for (int i = 0; i < 5000; i++) {
		mirror_status(v->target, &s);
		if (s.sync_done == s.sync_total)
			return;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	ck_abort_msg("not in sync after 5 s: %llu of %llu regions",
		     (unsigned long long)s.sync_done, (unsigned long long)s.sync_total);
}

START_TEST(a_write_lands_on_both_legs_after_its_bit)
{
	struct volume *v = open_mirror(true);
	char buf[8192], got[8192];

	ck_assert_uint_eq(log_bits(), 0);
	memset(buf, 0x5a, sizeof(buf));
	ck_assert_int_eq(volume_write(v, &f.e, buf, 3 * MiB, sizeof(buf)), sizeof(buf));
	ck_assert_uint_eq(log_bits(), 1u << 1);		/* region 1 of 2 MiB */
	for (int i = 0; i < 2; i++) {
		file_read(f.leg_path[i], got, sizeof(got), 3 * MiB);
		ck_assert_mem_eq(got, buf, sizeof(buf));
	}
	/* Written again: the fast path, both legs still. */
	memset(buf, 0xa5, sizeof(buf));
	ck_assert_int_eq(volume_write(v, &f.e, buf, 3 * MiB, sizeof(buf)), sizeof(buf));
	file_read(f.leg_path[1], got, sizeof(got), 3 * MiB);
	ck_assert_mem_eq(got, buf, sizeof(buf));
	memset(got, 0, sizeof(got));
	ck_assert_int_eq(volume_read(v, &f.e, got, 3 * MiB, sizeof(got)), sizeof(got));
	ck_assert_mem_eq(got, buf, sizeof(buf));
	volume_destroy(v);
}
END_TEST

START_TEST(a_log_with_bits_set_is_resynced_from_the_first_leg_only_there)
{
	struct volume *v = open_mirror(true);
	char buf[4096], got[4096];
	struct mirror_status s;

	memset(buf, 1, sizeof(buf));
	ck_assert_int_eq(volume_write(v, &f.e, buf, 0, sizeof(buf)), sizeof(buf));
	volume_destroy(v);			/* as if killed: the bit stays */
	ck_assert_uint_eq(log_bits(), 1);
	/* The legs differ in region 0 (leg 0 won) and in region 2 (not logged). */
	memset(buf, 2, sizeof(buf));
	file_write(f.leg_path[0], buf, sizeof(buf), 8192);
	file_write(f.leg_path[0], buf, sizeof(buf), 4 * MiB);

	v = open_mirror(false);
	wait_in_sync(v);
	/* The pass counts what it copied once it ends, after the last region. */
	for (int i = 0; i < 5000; i++) {
		mirror_status(v->target, &s);
		if (s.resynced)
			break;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	ck_assert_uint_eq(s.resynced, 1);
	file_read(f.leg_path[1], got, sizeof(got), 8192);
	ck_assert_mem_eq(got, buf, sizeof(buf));
	file_read(f.leg_path[1], got, sizeof(got), 4 * MiB);
	ck_assert_uint_eq((unsigned char)got[0], 0);	/* a clean region is not copied */
	volume_destroy(v);
}
END_TEST

START_TEST(a_replaced_leg_is_rebuilt_whole)
{
	struct volume *v = open_mirror(true);
	char buf[4096], got[4096];
	struct mirror_status s;

	memset(buf, 7, sizeof(buf));
	ck_assert_int_eq(volume_write(v, &f.e, buf, SIZE - sizeof(buf), sizeof(buf)), sizeof(buf));
	ck_assert_int_eq(mirror_replace_leg(v->target, 1, leg(2), "leg2"), 0);
	wait_in_sync(v);
	mirror_status(v->target, &s);
	ck_assert_uint_eq(s.leg_state[1], MIRROR_LEG_IN_SYNC);
	file_read(f.leg_path[2], got, sizeof(got), SIZE - sizeof(got));
	ck_assert_mem_eq(got, buf, sizeof(buf));
	volume_destroy(v);
}
END_TEST

START_TEST(the_last_in_sync_leg_is_never_failed)
{
	struct volume *v = open_mirror(true);
	struct mirror_status s;

	ck_assert_int_eq(mirror_fail_leg(v->target, 0, "test"), 0);
	ck_assert_int_eq(mirror_fail_leg(v->target, 1, "test"), -EBUSY);
	mirror_status(v->target, &s);
	ck_assert_uint_eq(s.leg_state[0], MIRROR_LEG_FAILED);
	ck_assert_uint_eq(s.leg_state[1], MIRROR_LEG_IN_SYNC);
	volume_destroy(v);
	v = open_mirror(false);			/* and it stays failed */
	mirror_status(v->target, &s);
	ck_assert_uint_eq(s.leg_state[0], MIRROR_LEG_FAILED);
	volume_destroy(v);
}
END_TEST

START_TEST(a_damaged_log_is_refused)
{
	char junk[64];
	int fd;
	struct mirror_log *log;

	volume_destroy(open_mirror(true));
	memset(junk, 0xff, sizeof(junk));
	file_write(f.log_path, junk, sizeof(junk), 16);
	fd = open(f.log_path, O_RDWR);
	ck_assert_int_eq(mirror_log_open(fd, 2, SIZE / MIRROR_REGION_SIZE, &log), -EUCLEAN);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mirror");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_write_lands_on_both_legs_after_its_bit);
	tcase_add_test(tc, a_log_with_bits_set_is_resynced_from_the_first_leg_only_there);
	tcase_add_test(tc, a_replaced_leg_is_rebuilt_whole);
	tcase_add_test(tc, the_last_in_sync_leg_is_never_failed);
	tcase_add_test(tc, a_damaged_log_is_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
