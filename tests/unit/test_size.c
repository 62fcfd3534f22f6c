/*
 * tests/unit/test_size.c: sizes as typed on the command line and as
 * printed back.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "size.h"

static uint64_t parsed(const char *s)
{
	uint64_t v = 12345;

	ck_assert_int_eq(parse_size(s, &v), 0);
	return v;
}

static int refused(const char *s)
{
	uint64_t v = 12345;
	int r = parse_size(s, &v);

	ck_assert_uint_eq(v, 12345);	/* untouched on failure */
	return r;
}

START_TEST(plain_number_is_bytes)
{
	ck_assert_uint_eq(parsed("4096"), 4096);
	ck_assert_uint_eq(parsed("1"), 1);
	ck_assert_uint_eq(parsed("007"), 7);
}
END_TEST

START_TEST(suffixes_are_powers_of_1024)
{
	ck_assert_uint_eq(parsed("64K"), 64ull << 10);
	ck_assert_uint_eq(parsed("3M"), 3ull << 20);
	ck_assert_uint_eq(parsed("2G"), 2ull << 30);
	ck_assert_uint_eq(parsed("5T"), 5ull << 40);
}
END_TEST

START_TEST(suffixes_take_any_case_and_an_optional_ib)
{
	ck_assert_uint_eq(parsed("64k"), 64ull << 10);
	ck_assert_uint_eq(parsed("1g"), 1ull << 30);
	ck_assert_uint_eq(parsed("1GiB"), 1ull << 30);
	ck_assert_uint_eq(parsed("1mib"), 1ull << 20);
}
END_TEST

START_TEST(kb_kib_and_k_are_the_same_as_lvm_takes_them)
{
	ck_assert_uint_eq(parsed("4KB"), 4096);
	ck_assert_uint_eq(parsed("4kb"), 4096);
	ck_assert_uint_eq(parsed("4KiB"), 4096);
	ck_assert_uint_eq(parsed("1GB"), 1ull << 30);
	ck_assert_uint_eq(parsed("2P"), 2ull << 50);
	ck_assert_uint_eq(parsed("7E"), 7ull << 60);
	ck_assert_uint_eq(parsed("8s"), 4096);
	ck_assert_uint_eq(parsed("4096B"), 4096);
}
END_TEST

START_TEST(decimals_that_are_whole_bytes_are_exact)
{
	ck_assert_uint_eq(parsed("1.5G"), 3ull << 29);
	ck_assert_uint_eq(parsed("0.5K"), 512);
	ck_assert_uint_eq(parsed("1.25M"), 1310720);
	ck_assert_uint_eq(parsed("2.0"), 2);
	ck_assert_int_eq(refused("1.3K"), -EDOM);
	ck_assert_int_eq(refused("1.5"), -EDOM);
	ck_assert_int_eq(refused("0.000000000000000000000001E"), -EDOM);
	ck_assert_int_eq(refused("1."), -EINVAL);
	ck_assert_int_eq(refused(".5G"), -EINVAL);
}
END_TEST

START_TEST(zero_parses_and_callers_judge_it)
{
	ck_assert_uint_eq(parsed("0"), 0);
	ck_assert_uint_eq(parsed("0G"), 0);
}
END_TEST

START_TEST(negative_decimal_empty_and_junk_are_invalid)
{
	ck_assert_int_eq(refused("-1"), -EINVAL);
	ck_assert_int_eq(refused(""), -EINVAL);
	ck_assert_int_eq(refused("abc"), -EINVAL);
	ck_assert_int_eq(refused("1Q"), -EINVAL);
	ck_assert_int_eq(refused("1GiBB"), -EINVAL);
	ck_assert_int_eq(refused("1 G"), -EINVAL);
	ck_assert_int_eq(refused(" 1"), -EINVAL);
	ck_assert_int_eq(refused("1.5.2G"), -EINVAL);
	ck_assert_int_eq(refused("G"), -EINVAL);
	ck_assert_int_eq(refused("+1"), -EINVAL);
}
END_TEST

START_TEST(sizes_from_2_to_the_63_are_too_large)
{
	ck_assert_uint_eq(parsed("9223372036854775807"), (uint64_t)INT64_MAX);
	ck_assert_int_eq(refused("9223372036854775808"), -ERANGE);
	ck_assert_int_eq(refused("99999999999999999999999"), -ERANGE);
	ck_assert_uint_eq(parsed("8388607T"), 8388607ull << 40);
	ck_assert_int_eq(refused("8388608T"), -ERANGE);
	ck_assert_int_eq(refused("99999999T"), -ERANGE);
	ck_assert_int_eq(refused("8E"), -ERANGE);
	ck_assert_int_eq(refused("8.0E"), -ERANGE);
	ck_assert_uint_eq(parsed("7.5E"), 15ull << 59);
}
END_TEST

START_TEST(format_prints_bytes_below_1k)
{
	char buf[SIZE_STR_LEN];

	ck_assert_str_eq(format_size(0, buf), "0 B");
	ck_assert_str_eq(format_size(1023, buf), "1023 B");
}
END_TEST

START_TEST(format_picks_the_largest_unit_with_two_decimals)
{
	char buf[SIZE_STR_LEN];

	ck_assert_str_eq(format_size(1024, buf), "1.00 KiB");
	ck_assert_str_eq(format_size(3ull << 29, buf), "1.50 GiB");
	ck_assert_str_eq(format_size(100ull << 20, buf), "100.00 MiB");
	ck_assert_str_eq(format_size(1ull << 40, buf), "1.00 TiB");
	ck_assert_str_eq(format_size(UINT64_MAX, buf), "16.00 EiB");
}
END_TEST

START_TEST(format_rounded_down_stays_below_a_total_it_is_short_of)
{
	char buf[SIZE_STR_LEN];

	ck_assert_str_eq(format_size((10ull << 30) - 1, buf), "10.00 GiB");
	ck_assert_str_eq(format_size_rounded((10ull << 30) - 1, SIZE_DOWN, buf), "9.99 GiB");
	ck_assert_str_eq(format_size_rounded(10ull << 30, SIZE_DOWN, buf), "10.00 GiB");
	ck_assert_str_eq(format_size_rounded(1023, SIZE_DOWN, buf), "1023 B");
	ck_assert_str_eq(format_size_rounded(UINT64_MAX, SIZE_DOWN, buf), "15.99 EiB");
}
END_TEST

START_TEST(format_rounded_up_shows_any_use)
{
	char buf[SIZE_STR_LEN];

	ck_assert_str_eq(format_size((1ull << 30) + 1, buf), "1.00 GiB");
	ck_assert_str_eq(format_size_rounded((1ull << 30) + 1, SIZE_UP, buf), "1.01 GiB");
	ck_assert_str_eq(format_size_rounded(1ull << 30, SIZE_UP, buf), "1.00 GiB");
	ck_assert_str_eq(format_size_rounded(3ull << 29, SIZE_UP, buf), "1.50 GiB");
	ck_assert_str_eq(format_size_rounded(1025, SIZE_NEAREST, buf), format_size(1025, buf));
}
END_TEST

static Suite *size_suite(void)
{
	Suite *suite = suite_create("size");
	TCase *tc = tcase_create("parse and format");

	tcase_add_test(tc, plain_number_is_bytes);
	tcase_add_test(tc, suffixes_are_powers_of_1024);
	tcase_add_test(tc, suffixes_take_any_case_and_an_optional_ib);
	tcase_add_test(tc, kb_kib_and_k_are_the_same_as_lvm_takes_them);
	tcase_add_test(tc, decimals_that_are_whole_bytes_are_exact);
	tcase_add_test(tc, zero_parses_and_callers_judge_it);
	tcase_add_test(tc, negative_decimal_empty_and_junk_are_invalid);
	tcase_add_test(tc, sizes_from_2_to_the_63_are_too_large);
	tcase_add_test(tc, format_prints_bytes_below_1k);
	tcase_add_test(tc, format_picks_the_largest_unit_with_two_decimals);
	tcase_add_test(tc, format_rounded_down_stays_below_a_total_it_is_short_of);
	tcase_add_test(tc, format_rounded_up_shows_any_use);
	suite_add_tcase(suite, tc);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(size_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
