/*
 * dm-switch's set_region_mappings syntax: every form, every error, hex,
 * overflow, a million-region message, and the dump that reads back.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "switch_msg.h"
#include "switch_table.h"

static struct switch_table *make(uint64_t regions, unsigned int paths)
{
	struct switch_table *t;

	ck_assert_int_eq(switch_table_create(regions, paths, &t), 0);
	return t;
}

/* Applies a space-separated message; returns the result, why in @why. */
static int apply(struct switch_table *t, const char *msg, char *why, size_t len)
{
	char *text = strdup(msg), **argv;
	size_t argc;
	int r;

	ck_assert_int_eq(switch_msg_split(text, &argv, &argc), 0);
	why[0] = '\0';
	r = switch_msg_apply(t, argc, argv, why, len);
	free(argv);
	free(text);
	return r;
}

/* Check marks every passing assertion with a write: compare first. */
static void assert_table(const struct switch_table *t, const char *expect)
{
	char got[64] = "";

	for (uint64_t r = 0; r < t->nr_regions; r++)
		got[r] = (char)('0' + switch_table_get(t, r));
	ck_assert_str_eq(got, expect);
}

START_TEST(index_colon_path_sets_that_region)
{
	struct switch_table *t = make(8, 4);
	char why[200];

	ck_assert_int_eq(apply(t, "3:2 7:1", why, sizeof(why)), 0);
	assert_table(t, "00020001");
	switch_table_destroy(t);
}
END_TEST

START_TEST(colon_path_sets_the_region_after_the_last_named)
{
	struct switch_table *t = make(8, 4);
	char why[200];

	ck_assert_int_eq(apply(t, "2:1 :2 :3", why, sizeof(why)), 0);
	assert_table(t, "00123000");
	switch_table_destroy(t);
}
END_TEST

START_TEST(leading_colon_path_starts_at_region_one_as_dm_switch_does)
{
	struct switch_table *t = make(4, 4);
	char why[200];

	ck_assert_int_eq(apply(t, ":3", why, sizeof(why)), 0);
	assert_table(t, "0300");
	switch_table_destroy(t);
}
END_TEST

START_TEST(repeat_copies_the_last_n_regions_m_more_times)
{
	struct switch_table *t = make(12, 3);
	char why[200];

	ck_assert_int_eq(apply(t, "0:0 :1 :2 R3,9", why, sizeof(why)), 0);
	assert_table(t, "012012012012");
	switch_table_destroy(t);
}
END_TEST

START_TEST(repeat_counts_from_the_last_region_named_and_reads_the_table)
{
	struct switch_table *t = make(10, 4);
	char why[200];

	/* regions 0..1 were set by an earlier message; R2 reads them */
	ck_assert_int_eq(apply(t, "0:3 1:2", why, sizeof(why)), 0);
	ck_assert_int_eq(apply(t, "1:1 R2,4 :2", why, sizeof(why)), 0);
	assert_table(t, "3131312000");
	switch_table_destroy(t);
}
END_TEST

START_TEST(lower_case_r_and_hex_digits_in_either_case_are_accepted)
{
	struct switch_table *t = make(0x20, 16);
	char why[200];

	ck_assert_int_eq(apply(t, "1f:F A:b r1,1", why, sizeof(why)), 0);
	ck_assert_uint_eq(switch_table_get(t, 0x1f), 15);
	ck_assert_uint_eq(switch_table_get(t, 10), 11);
	ck_assert_uint_eq(switch_table_get(t, 11), 11);
	switch_table_destroy(t);
}
END_TEST

START_TEST(numbers_are_hexadecimal)
{
	struct switch_table *t = make(0x11, 2);
	char why[200];

	ck_assert_int_eq(apply(t, "10:1", why, sizeof(why)), 0);
	ck_assert_uint_eq(switch_table_get(t, 16), 1);
	ck_assert_uint_eq(switch_table_get(t, 10), 0);
	switch_table_destroy(t);
}
END_TEST

START_TEST(repeat_of_zero_times_changes_nothing)
{
	struct switch_table *t = make(4, 2);
	char why[200];

	ck_assert_int_eq(apply(t, "1:1 R1,0", why, sizeof(why)), 0);
	assert_table(t, "0100");
	switch_table_destroy(t);
}
END_TEST

/* Each bad message: the error names the argument and says why. */
static const struct {
	const char *msg;
	const char *why;
} bad[] = {
	{ "0:0 9:1", "argument 2 '9:1': region 0x9 is past the last (0x7)" },
	{ "7:1 :1", "argument 2 ':1': region 0x8 is past the last (0x7)" },
	{ "0:3", "argument 1 '0:3': path 0x3 does not exist (there are 3)" },
	{ "1:1 R3,1", "argument 2 'R3,1': repeats 3 regions but only 2 come before it" },
	{ "R0,1", "argument 1 'R0,1': repeats 0 regions" },
	{ "5:1 R1,3", "argument 2 'R1,3': writes up to region 0x8, past the last (0x7)" },
	{ "0:1 R1,ffffffffffffffff", "argument 2 'R1,ffffffffffffffff': writes up to region" },
	{ "0:10000000000000000", "argument 1 '0:10000000000000000': the path does not fit 64 bits" },
	{ "10000000000000000:0", "argument 1 '10000000000000000:0': the region does not fit 64 bits" },
	{ "0x1:1", "argument 1 '0x1:1': numbers are hexadecimal without '0x'" },
	{ "1:", "argument 1 '1:': expected INDEX:PATH, :PATH or Rn,m" },
	{ ":", "argument 1 ':': expected" },
	{ "1", "argument 1 '1': expected" },
	{ "1:2x", "argument 1 '1:2x': expected" },
	{ "g:1", "argument 1 'g:1': expected" },
	{ "R", "argument 1 'R': expected" },
	{ "R,1", "argument 1 'R,1': expected" },
	{ "R1,", "argument 1 'R1,': expected" },
	{ "R1", "argument 1 'R1': expected" },
	{ "R1,1,", "argument 1 'R1,1,': expected" },
	{ "1:-1", "argument 1 '1:-1': expected" },
	{ "", "argument 1 '': expected" },
};

START_TEST(bad_argument_is_rejected_by_name)
{
	struct switch_table *t = make(8, 3);
	char *argv[2] = { NULL, NULL };
	char why[200];
	size_t argc;
	char *text;
	int r;

	/* "" cannot come through split; pass it as it is */
	text = strdup(bad[_i].msg);
	if (!*text) {
		argv[0] = text;
		argc = 1;
		r = switch_msg_apply(t, argc, argv, why, sizeof(why));
	} else {
		r = apply(t, text, why, sizeof(why));
	}
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_msg(!strncmp(why, bad[_i].why, strlen(bad[_i].why)),
		      "for '%s' got \"%s\"", bad[_i].msg, why);
	free(text);
	switch_table_destroy(t);
}
END_TEST

START_TEST(long_argument_is_shortened_in_the_error)
{
	struct switch_table *t = make(8, 3);
	char arg[100], why[200];
	char *argv[1] = { arg };

	memset(arg, '1', sizeof(arg) - 2);
	arg[sizeof(arg) - 2] = 'z';
	arg[sizeof(arg) - 1] = '\0';
	ck_assert_int_eq(switch_msg_apply(t, 1, argv, why, sizeof(why)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "...'"));
	switch_table_destroy(t);
}
END_TEST

/*
 * @n regions, one argument each, over 3 paths: a pseudo-random pattern,
 * applied and checked.  Returns the seconds the apply took.
 */
static double apply_pattern(uint32_t n)
{
	struct switch_table *t = make(n, 3);
	char **argv = malloc(n * sizeof(*argv));
	char *text = malloc((size_t)n * 8);
	struct timespec a, b;
	uint32_t wrong = 0;
	char why[200];
	char *p = text;

	for (uint32_t r = 0; r < n; r++) {
		argv[r] = p;
		p += sprintf(p, r ? ":%x" : "0:%x", (r * 2654435761u >> 7) % 3) + 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	ck_assert_int_eq(switch_msg_apply(t, n, argv, why, sizeof(why)), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	for (uint32_t r = 0; r < n; r++)
		wrong += switch_table_get(t, r) != (r * 2654435761u >> 7) % 3;
	ck_assert_uint_eq(wrong, 0);
	free(text);
	free(argv);
	switch_table_destroy(t);
	return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

#define MILLION	(1u << 20)

/*
 * A million-region message applies in time linear in its arguments: per
 * region, no more than 4 times what a 64K one costs, measured side by side
 * (a quadratic apply would cost 16 times; no wall-clock bound, which a
 * loaded machine breaks).  The best of three of each.
 */
START_TEST(million_region_message_applies_in_linear_time)
{
	double small = 1e9, large = 1e9;

	for (int i = 0; i < 3; i++) {
		double s = apply_pattern(MILLION / 16), l = apply_pattern(MILLION);

		small = s < small ? s : small;
		large = l < large ? l : large;
	}
	ck_assert_msg(large / MILLION <= 4 * small / (MILLION / 16),
		      "1M regions took %.3f s, 64K %.3f s: not linear", large, small);
}
END_TEST

/* Dumps @t, applies the dump to a zeroed table, and compares. */
static size_t dump_round_trip(const struct switch_table *t)
{
	struct switch_table *u = make(t->nr_regions, t->nr_paths);
	char *text = NULL, **argv, why[200];
	size_t len, argc, wrong = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_int_eq(switch_msg_dump(t, f), 0);
	fclose(f);
	ck_assert_int_eq(switch_msg_split(text, &argv, &argc), 0);
	ck_assert_int_eq(switch_msg_apply(u, argc, argv, why, sizeof(why)), 0);
	for (uint64_t r = 0; r < t->nr_regions; r++)
		wrong += switch_table_get(u, r) != switch_table_get(t, r);
	ck_assert_uint_eq(wrong, 0);
	free(argv);
	free(text);
	switch_table_destroy(u);
	return argc;
}

START_TEST(dump_of_a_periodic_table_is_a_few_arguments)
{
	struct switch_table *t = make(MILLION, 3);

	switch_table_round_robin(t);
	ck_assert_uint_eq(dump_round_trip(t), 4);	/* 0:0 :1 :2 R3,ffffd */
	switch_table_destroy(t);
}
END_TEST

START_TEST(dump_of_an_irregular_table_reads_back_the_same)
{
	struct switch_table *t = make(100000, 17);

	for (uint64_t r = 0; r < t->nr_regions; r++)
		switch_table_set(t, r, (unsigned int)(r * r / 1000 % 17));
	dump_round_trip(t);
	switch_table_destroy(t);
}
END_TEST

START_TEST(split_takes_any_white_space)
{
	char text[] = "  0:1\t:2\n\nR2,3 \r\n";
	char **argv;
	size_t argc;

	ck_assert_int_eq(switch_msg_split(text, &argv, &argc), 0);
	ck_assert_uint_eq(argc, 3);
	ck_assert_str_eq(argv[2], "R2,3");
	free(argv);
}
END_TEST

static Suite *switch_msg_suite(void)
{
	Suite *s = suite_create("switch_msg");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, index_colon_path_sets_that_region);
	tcase_add_test(tc, colon_path_sets_the_region_after_the_last_named);
	tcase_add_test(tc, leading_colon_path_starts_at_region_one_as_dm_switch_does);
	tcase_add_test(tc, repeat_copies_the_last_n_regions_m_more_times);
	tcase_add_test(tc, repeat_counts_from_the_last_region_named_and_reads_the_table);
	tcase_add_test(tc, lower_case_r_and_hex_digits_in_either_case_are_accepted);
	tcase_add_test(tc, numbers_are_hexadecimal);
	tcase_add_test(tc, repeat_of_zero_times_changes_nothing);
	tcase_add_loop_test(tc, bad_argument_is_rejected_by_name, 0,
			    sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, long_argument_is_shortened_in_the_error);
	tcase_add_test(tc, million_region_message_applies_in_linear_time);
	tcase_add_test(tc, dump_of_a_periodic_table_is_a_few_arguments);
	tcase_add_test(tc, dump_of_an_irregular_table_reads_back_the_same);
	tcase_add_test(tc, split_takes_any_white_space);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(switch_msg_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
