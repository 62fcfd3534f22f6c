/*
 * tests/unit/test_log.c: rate-limited error lines.  A failing database
 * fails every retried commit alike: the log must say so once, not once
 * per retry, and still show a new error at once.
 */
#include <check.h>
#include <regex.h>
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

/* An administrator reads when each line happened, and how bad it is. */
START_TEST(a_file_line_starts_with_utc_time_and_level)
{
	static const char *const want[] = {
		"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z info: served 1\n$",
		"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z warning: slow 2\n$",
	};
	FILE *f;
	char line[1024];
	regex_t re;

	log_info("served %d", 1);
	log_warn("slow %d", 2);
	f = fopen(path, "re");
	ck_assert_ptr_nonnull(f);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
		ck_assert_int_eq(regcomp(&re, want[i], REG_EXTENDED | REG_NOSUB), 0);
		ck_assert_msg(regexec(&re, line, 0, NULL, 0) == 0, "line '%s'", line);
		regfree(&re);
	}
	fclose(f);
}
END_TEST

static Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("limited");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_line_repeated_by_every_retry_is_logged_once);
	tcase_add_test(tc, a_new_line_is_logged_at_once_up_to_the_burst);
	tcase_add_test(tc, a_file_line_starts_with_utc_time_and_level);
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
