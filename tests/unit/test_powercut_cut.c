/*
 * tests/unit/test_powercut_cut.c: what powercut-replay builds for a cut
 * (tests/powercut/cut.h), on small logs written with the write log's
 * own calls.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cut.h"
#include "wlog.h"
#include "writelog.h"

static char dir[] = "/tmp/test_powercut_cut.XXXXXX";
static char root[200], log_dir[200], base[200], out[200], file[256];

static void make_dirs(void)
{
	strcpy(dir, "/tmp/test_powercut_cut.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(root, sizeof(root), "%s/pool", dir);
	snprintf(log_dir, sizeof(log_dir), "%s/log", dir);
	snprintf(base, sizeof(base), "%s/base", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(file, sizeof(file), "%s/d0.img", root);
	ck_assert_int_eq(mkdir(base, 0700), 0);
	ck_assert_int_eq(mkdir(out, 0700), 0);
	ck_assert_int_eq(writelog_start(log_dir, 0), 0);
}

static void remove_dirs(void)
{
	char cmd[300];

	writelog_stop();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Byte 0 of out/d0.img after a cut at @pos with @policy (-1: no file). */
static int first_byte(uint64_t pos, enum cut_policy policy)
{
	struct cut_files files;
	struct cut_stats st;
	struct wlog w;
	char path[300];
	unsigned char c = 0;
	int fd, r;

	ck_assert_int_eq(wlog_open(log_dir, &w), 0);
	ck_assert_int_eq(cut_files_load(&w, root, &files), 0);
	ck_assert_int_eq(cut_build(&files, base, out, pos, 1, policy, &st), 0);
	cut_files_release(&files);
	wlog_close(&w);
	snprintf(path, sizeof(path), "%s/d0.img", out);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	r = pread(fd, &c, 1, 0) == 1 ? c : 0;
	close(fd);
	unlink(path);
	return r;
}

START_TEST(a_write_is_durable_once_a_completed_flush_was_issued_after_it)
{
	uint64_t f = writelog_file(file);
	char one = 1;

	writelog_write(f, writelog_now(), 0, &one, 1);		/* position 2 */
	writelog_flush(f, writelog_now());			/* 3: covers it */
	writelog_stop();
	ck_assert_int_eq(first_byte(3, CUT_NOTHING_LANDS), 0);	/* flush not done */
	ck_assert_int_eq(first_byte(3, CUT_ALL_LAND), 1);
	ck_assert_int_eq(first_byte(4, CUT_NOTHING_LANDS), 1);
}
END_TEST

/*
 * The replay took the last completed flush's issue point; two threads'
 * flushes of one device can complete in the other order than they were
 * issued, and it then lost writes the first one had made durable.
 */
START_TEST(a_flush_completing_late_does_not_undo_an_earlier_ones_cover)
{
	uint64_t f = writelog_file(file), early;
	char one = 1;

	early = writelog_now();					/* issued at 2 */
	writelog_write(f, writelog_now(), 0, &one, 1);		/* 2 */
	writelog_flush(f, writelog_now());			/* 3, issued 3: covers it */
	writelog_flush(f, early);				/* 4, issued 2: does not */
	writelog_stop();
	ck_assert_int_eq(first_byte(5, CUT_NOTHING_LANDS), 1);
}
END_TEST

START_TEST(an_unflushed_write_issued_by_the_cut_may_land_one_issued_after_may_not)
{
	uint64_t f = writelog_file(file), issued;
	char one = 1;

	issued = writelog_now();				/* 2 */
	writelog_flush(writelog_file(file), writelog_now());	/* 3, 4: unrelated */
	writelog_write(f, issued, 0, &one, 1);			/* 5, in flight since 2 */
	writelog_stop();
	ck_assert_int_eq(first_byte(2, CUT_ALL_LAND), 1);
	ck_assert_int_eq(first_byte(1, CUT_ALL_LAND), -1);	/* before the FILE record */
}
END_TEST

static Suite *cut_suite(void)
{
	Suite *s = suite_create("powercut_cut");
	TCase *tc = tcase_create("cut");

	tcase_add_checked_fixture(tc, make_dirs, remove_dirs);
	tcase_add_test(tc, a_write_is_durable_once_a_completed_flush_was_issued_after_it);
	tcase_add_test(tc, a_flush_completing_late_does_not_undo_an_earlier_ones_cover);
	tcase_add_test(tc, an_unflushed_write_issued_by_the_cut_may_land_one_issued_after_may_not);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cut_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
