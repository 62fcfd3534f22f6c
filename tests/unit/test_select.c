/*
 * tests/unit/test_select.c: --select expressions (tools/select.h) parsed
 * and evaluated over a table of test rows, each field of each type.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "select.h"

struct row {
	const char *name;
	uint64_t size;
	int32_t pct;			/* -1: none */
	bool ro;
	int64_t created;
	struct tags tags;
};

static void get_name(const void *r, struct field_value *out)
{
	out->s = ((const struct row *)r)->name;
}

static void get_size(const void *r, struct field_value *out)
{
	out->n = (int64_t)((const struct row *)r)->size;
}

static void get_pct(const void *r, struct field_value *out)
{
	out->n = ((const struct row *)r)->pct;
	out->none = out->n < 0;
}

static void get_ro(const void *r, struct field_value *out)
{
	out->n = ((const struct row *)r)->ro;
}

static void get_created(const void *r, struct field_value *out)
{
	out->n = ((const struct row *)r)->created;
}

static void get_tags(const void *r, struct field_value *out)
{
	out->tags = &((const struct row *)r)->tags;
}

static const struct report_field fields[] = {
	{ "name", "NAME", "", FIELD_STRING, 0, get_name, NULL },
	{ "size", "SIZE", "", FIELD_SIZE, 0, get_size, NULL },
	{ "data_percent", "DATA%", "", FIELD_PERCENT, 0, get_pct, NULL },
	{ "read_only", "RO", "", FIELD_BOOL, 0, get_ro, NULL },
	{ "created", "CREATED", "", FIELD_TIME, 0, get_created, NULL },
	{ "tags", "TAGS", "", FIELD_TAGS, 0, get_tags, NULL },
};
#define NR_FIELDS (sizeof(fields) / sizeof(fields[0]))

static struct row big_vm, small_db;

static void make_rows(void)
{
	big_vm = (struct row){ .name = "vm-big", .size = 2ull << 30, .pct = 1250,
			       .created = 1738324800 /* 2025-01-31T12:00:00Z */ };
	small_db = (struct row){ .name = "db", .size = 100ull << 20, .pct = -1, .ro = true,
				 .created = 1700000000 };
	ck_assert_int_eq(tags_add(&big_vm.tags, "vm"), 0);
	ck_assert_int_eq(tags_add(&big_vm.tags, "prod"), 0);
	ck_assert_int_eq(tags_add(&small_db.tags, "db"), 0);
}

static void free_rows(void)
{
	tags_release(&big_vm.tags);
	tags_release(&small_db.tags);
}

/* Which rows @expr keeps: 1 for big_vm, 2 for small_db, 3 for both. */
static int kept(const char *expr)
{
	char why[SELECT_ERROR_LEN] = "";
	struct select *s = NULL;
	int r;

	r = select_parse(expr, fields, NR_FIELDS, &s, why);
	ck_assert_msg(r == 0, "'%s' refused: %s", expr, why);
	r = select_match(s, &big_vm) | select_match(s, &small_db) << 1;
	select_free(s);
	return r;
}

/* The message @expr is refused with. */
static const char *refused(const char *expr)
{
	static char why[SELECT_ERROR_LEN];
	struct select *s = NULL;

	ck_assert_int_eq(select_parse(expr, fields, NR_FIELDS, &s, why), -EINVAL);
	ck_assert_ptr_null(s);
	ck_assert_ptr_null(strchr(why, '\n'));
	return why;
}

START_TEST(sizes_compare_in_bytes_with_any_unit)
{
	ck_assert_int_eq(kept("size > 1G"), 1);
	ck_assert_int_eq(kept("size>1g"), 1);
	ck_assert_int_eq(kept("size <= 100M"), 2);
	ck_assert_int_eq(kept("size == 104857600"), 2);
	ck_assert_int_eq(kept("size = 2GiB"), 1);
	ck_assert_int_eq(kept("size != 2G"), 2);
	ck_assert_int_eq(kept("size >= 100m"), 3);
	ck_assert_int_eq(kept("size < 100m"), 0);
}
END_TEST

START_TEST(strings_compare_as_strings_or_as_regular_expressions)
{
	ck_assert_int_eq(kept("name == vm-big"), 1);
	ck_assert_int_eq(kept("name = 'db'"), 2);
	ck_assert_int_eq(kept("name != \"db\""), 1);
	ck_assert_int_eq(kept("name < e"), 2);
	ck_assert_int_eq(kept("name =~ '^vm-'"), 1);
	ck_assert_int_eq(kept("name !~ b"), 0);
	ck_assert_int_eq(kept("name =~ 'g$|^d'"), 3);
}
END_TEST

START_TEST(at_tag_is_true_for_a_row_that_carries_it)
{
	ck_assert_int_eq(kept("@vm"), 1);
	ck_assert_int_eq(kept("@db"), 2);
	ck_assert_int_eq(kept("@nothing"), 0);
	ck_assert_int_eq(kept("!@vm"), 2);
}
END_TEST

START_TEST(and_binds_tighter_than_or_and_parentheses_group)
{
	ck_assert_int_eq(kept("size > 1G && @vm"), 1);
	ck_assert_int_eq(kept("size > 1G && @db"), 0);
	ck_assert_int_eq(kept("@db || size > 1G && @prod"), 3);
	ck_assert_int_eq(kept("(@db || size > 1G) && @prod"), 1);
	ck_assert_int_eq(kept("!(@db || @vm)"), 0);
	ck_assert_int_eq(kept("! ! @db"), 2);
	ck_assert_int_eq(kept("  ( ( @db ) )  "), 2);
}
END_TEST

START_TEST(percentages_yes_no_and_times_read_by_their_type)
{
	ck_assert_int_eq(kept("data_percent > 12.4"), 1);
	ck_assert_int_eq(kept("data_percent == 12.5%"), 1);
	ck_assert_int_eq(kept("data_percent < 13"), 1);
	ck_assert_int_eq(kept("read_only == yes"), 2);
	ck_assert_int_eq(kept("read_only = 0"), 1);
	ck_assert_int_eq(kept("created >= 2025-01-31"), 1);
	ck_assert_int_eq(kept("created < 1738324800"), 2);
}
END_TEST

START_TEST(a_row_without_the_value_matches_no_comparison_on_it)
{
	ck_assert_int_eq(kept("data_percent >= 0"), 1);
	ck_assert_int_eq(kept("data_percent != 1"), 1);
	ck_assert_int_eq(kept("!(data_percent >= 0)"), 2);
}
END_TEST

START_TEST(bad_expressions_are_refused_naming_what_is_wrong)
{
	ck_assert_str_eq(refused("sise > 1G"), "unknown field 'sise' (-o help lists them)");
	ck_assert_str_eq(refused("size > 1Q"), "invalid size '1Q' for field 'size'");
	ck_assert_str_eq(refused("size >"), "a value expected at the end");
	ck_assert_str_eq(refused("size 1G"), "a comparison (==, !=, <, <=, >, >=, =~) expected at '1G'");
	ck_assert_str_eq(refused("(@vm"), "')' expected at the end");
	ck_assert_str_eq(refused("@vm)"), "unexpected ')'");
	ck_assert_str_eq(refused("@vm &&"), "a field, '@TAG', '!' or '(' expected at the end");
	ck_assert_str_eq(refused("@"), "a tag after '@' expected at the end");
	ck_assert_str_eq(refused(""), "a field, '@TAG', '!' or '(' expected at the end");
	ck_assert_str_eq(refused("name == 'x"), "unterminated string at ''x'");
	ck_assert_str_eq(refused("size =~ 1"), "'=~' and '!~' take a string field: 'size' is a size");
	ck_assert_str_eq(refused("tags == vm"), "field 'tags' is a tag list: test a tag with @TAG");
	ck_assert_str_eq(refused("read_only == maybe"), "invalid yes/no 'maybe' for field 'read_only'");
	ck_assert_str_eq(refused("data_percent > 1.234"),
			 "invalid percentage '1.234' for field 'data_percent'");
	ck_assert_str_eq(refused("name =~ '('"),
			 "invalid regular expression '(': Unmatched ( or \\(");
}
END_TEST

START_TEST(deep_nesting_is_refused_not_recursed_into)
{
	char expr[400];

	memset(expr, '(', 300);
	strcpy(expr + 300, "@vm");
	ck_assert_str_eq(refused(expr), "expression nested too deeply");
	memset(expr, '!', 300);
	ck_assert_str_eq(refused(expr), "expression nested too deeply");
}
END_TEST

static Suite *select_suite(void)
{
	Suite *suite = suite_create("select");
	TCase *tc = tcase_create("parse and match");

	tcase_add_checked_fixture(tc, make_rows, free_rows);
	tcase_add_test(tc, sizes_compare_in_bytes_with_any_unit);
	tcase_add_test(tc, strings_compare_as_strings_or_as_regular_expressions);
	tcase_add_test(tc, at_tag_is_true_for_a_row_that_carries_it);
	tcase_add_test(tc, and_binds_tighter_than_or_and_parentheses_group);
	tcase_add_test(tc, percentages_yes_no_and_times_read_by_their_type);
	tcase_add_test(tc, a_row_without_the_value_matches_no_comparison_on_it);
	tcase_add_test(tc, bad_expressions_are_refused_naming_what_is_wrong);
	tcase_add_test(tc, deep_nesting_is_refused_not_recursed_into);
	suite_add_tcase(suite, tc);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(select_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
