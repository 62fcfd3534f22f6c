/*
 * tests/unit/test_log.c: rate-limited error lines.  A failing database
 * fails every retried commit alike: the log must say so once, not once
 * per retry, and still show a new error at once.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static char path[] = "/tmp/mapperfs-test-log.XXXXXX";

/* Lines of the log file that contain @needle. */
static int lines_with(const char *needle)
{
	FILE *f = fopen(path, "re");
	char line[1024];
	int n = 0;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

static void setup(void)
{
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(log_to_file(path), 0);
}

static void teardown(void)
{
	unlink(path);
	strcpy(path, "/tmp/mapperfs-test-log.XXXXXX");
}

START_TEST(a_line_repeated_by_every_retry_is_logged_once)
{
	static struct log_limit limit;

	for (int i = 0; i < 36; i++)
		log_error_limited(&limit, "pool database: disk I/O error (SQLite code %d)", 778);
	ck_assert_int_eq(lines_with("disk I/O error"), 1);
}
END_TEST

START_TEST(a_new_line_is_logged_at_once_up_to_the_burst)
{
	static struct log_limit limit;

	log_error_limited(&limit, "block %d failed", 0);
	log_error_limited(&limit, "block %d failed", 0);
	for (int i = 1; i < 2 * LOG_LIMIT_BURST; i++)
		log_error_limited(&limit, "block %d failed", i);
	ck_assert_int_eq(lines_with(" failed"), LOG_LIMIT_BURST);
}
END_TEST

static Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("limited");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_line_repeated_by_every_retry_is_logged_once);
	tcase_add_test(tc, a_new_line_is_logged_at_once_up_to_the_burst);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(log_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
