/*
 * tests/unit/test_thin_blocks.c: a set of data blocks, listed while small
 * and summarised word by word past THIN_BLOCKS_LISTED: either way a walk
 * gives every member once, and an emptied set has no bit left.
 */
#include <check.h>
#include <stdlib.h>

#include "thin_blocks.h"

#define MAX_BLOCKS	(1u << 20)

static struct thin_blocks s;

static void setup(void)
{
	ck_assert_int_eq(thin_blocks_init(&s, MAX_BLOCKS), 0);
}

static void teardown(void)
{
	thin_blocks_exit(&s);
}

/* How many members a walk gives, each checked to be in the bitmap. */
static uint64_t walk_count(void)
{
	struct thin_blocks_walk w = THIN_BLOCKS_WALK_INIT;
	uint64_t word, mask, n = 0, strays = 0;

	while (thin_blocks_next(&s, &w, &word, &mask)) {
		strays += !mask;
		for (uint64_t m = mask; m; m &= m - 1)
			strays += !thin_blocks_has(&s, (uint32_t)(word * 64 + (uint64_t)__builtin_ctzll(m)));
		n += (uint64_t)__builtin_popcountll(mask);
	}
	ck_assert_uint_eq(strays, 0);
	return n;
}

static void assert_no_bit_left(void)
{
	uint64_t any = 0;

	for (uint32_t b = 0; b < MAX_BLOCKS; b += 64)
		any |= sparse_bits_word(&s.bits, b / 64);
	ck_assert_uint_eq(any, 0);
}

START_TEST(small_set_is_listed_and_walked_member_by_member)
{
	thin_blocks_add(&s, 7);
	thin_blocks_add(&s, 300000);
	thin_blocks_add(&s, 7);		/* once only */
	ck_assert(s.listed);
	ck_assert_uint_eq(s.nr, 2);
	ck_assert(thin_blocks_has(&s, 300000));
	ck_assert(!thin_blocks_has(&s, 8));
	ck_assert_uint_eq(walk_count(), 2);
	thin_blocks_clear(&s);
	ck_assert_uint_eq(s.nr, 0);
	ck_assert(!thin_blocks_has(&s, 7));
	ck_assert(!thin_blocks_has(&s, 300000));
}
END_TEST

START_TEST(set_past_the_list_walks_its_words_in_block_order)
{
	struct thin_blocks_walk w = THIN_BLOCKS_WALK_INIT;
	uint64_t n = 3 * THIN_BLOCKS_LISTED, word, mask, last = 0;
	bool first = true;

	for (uint64_t b = n; b-- > 0;)	/* backwards: the order must not matter */
		thin_blocks_add(&s, (uint32_t)(3 * b));
	ck_assert(!s.listed);
	ck_assert_ptr_null(s.list);
	ck_assert_uint_eq(s.nr, n);
	while (thin_blocks_next(&s, &w, &word, &mask)) {
		ck_assert(first || word > last);
		first = false;
		last = word;
	}
	ck_assert_uint_eq(walk_count(), n);
	thin_blocks_clear(&s);
	ck_assert_uint_eq(s.nr, 0);
	ck_assert(s.listed);
	assert_no_bit_left();
	ck_assert_uint_eq(walk_count(), 0);
}
END_TEST

START_TEST(emptied_set_lists_again)
{
	for (uint32_t b = 0; b <= THIN_BLOCKS_LISTED; b++)
		thin_blocks_add(&s, b);
	ck_assert(!s.listed);
	thin_blocks_clear(&s);
	thin_blocks_add(&s, 5);
	ck_assert(s.listed);
	ck_assert_uint_eq(s.nr_listed, 1);
	ck_assert_uint_eq(walk_count(), 1);
}
END_TEST

START_TEST(whole_words_added_at_once_pass_the_list_too)
{
	for (uint64_t word = 0; word < 2 * THIN_BLOCKS_LISTED / 64; word++)
		thin_blocks_add_word(&s, word, ~0ull);
	ck_assert(!s.listed);
	ck_assert_uint_eq(s.nr, 2 * THIN_BLOCKS_LISTED);
	ck_assert_uint_eq(walk_count(), 2 * THIN_BLOCKS_LISTED);
}
END_TEST

START_TEST(sorted_list_walks_in_block_order)
{
	struct thin_blocks_walk w = THIN_BLOCKS_WALK_INIT;
	uint32_t in[] = { 900, 3, 64, 65, 1 };
	uint64_t word, mask, prev = 0;

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		thin_blocks_add(&s, in[i]);
	thin_blocks_sort(&s);
	while (thin_blocks_next(&s, &w, &word, &mask)) {
		uint64_t b = word * 64 + (uint64_t)__builtin_ctzll(mask);

		ck_assert_uint_ge(b, prev);
		prev = b;
	}
	ck_assert_uint_eq(prev, 900);
}
END_TEST

START_TEST(swapped_sets_trade_members)
{
	struct thin_blocks t;

	ck_assert_int_eq(thin_blocks_init(&t, MAX_BLOCKS), 0);
	thin_blocks_add(&s, 11);
	thin_blocks_swap(&s, &t);
	ck_assert_uint_eq(s.nr, 0);
	ck_assert(!thin_blocks_has(&s, 11));
	ck_assert(thin_blocks_has(&t, 11));
	thin_blocks_exit(&t);
}
END_TEST

static Suite *thin_blocks_suite(void)
{
	Suite *suite = suite_create("thin_blocks");
	TCase *tc = tcase_create("thin_blocks");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, small_set_is_listed_and_walked_member_by_member);
	tcase_add_test(tc, set_past_the_list_walks_its_words_in_block_order);
	tcase_add_test(tc, emptied_set_lists_again);
	tcase_add_test(tc, whole_words_added_at_once_pass_the_list_too);
	tcase_add_test(tc, sorted_list_walks_in_block_order);
	tcase_add_test(tc, swapped_sets_trade_members);
	suite_add_tcase(suite, tc);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(thin_blocks_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
