/*
 * tests/unit/test_thin_alloc.c: block counts and the allocator, above
 * all that a block freed in a transaction is reused only after it
 * committed.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "thin_alloc.h"

static struct thin_alloc a;

static void setup(void)
{
	ck_assert_int_eq(thin_alloc_init(&a, 4), 0);
}

static void teardown(void)
{
	thin_alloc_exit(&a);
}

static void take_all(uint32_t *b)
{
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(thin_alloc_new(&a, &b[i]), 0);
}

START_TEST(allocator_hands_out_every_block_once_then_enospc)
{
	uint32_t b[4], x;

	take_all(b);
	for (int i = 0; i < 4; i++)
		for (int j = i + 1; j < 4; j++)
			ck_assert_uint_ne(b[i], b[j]);
	ck_assert_int_eq(thin_alloc_new(&a, &x), -ENOSPC);
	ck_assert_uint_eq(thin_alloc_refs(&a, b[2]), 1);
}
END_TEST

START_TEST(freed_block_is_not_reused_before_its_transaction_commits)
{
	uint32_t b[4], x;

	take_all(b);
	thin_alloc_put(&a, b[1]);
	ck_assert_uint_eq(thin_alloc_refs(&a, b[1]), 0);
	ck_assert_int_eq(thin_alloc_new(&a, &x), -ENOSPC);
	thin_alloc_gather(&a);
	ck_assert_int_eq(thin_alloc_new(&a, &x), -ENOSPC);
	thin_alloc_committed(&a);
	ck_assert_int_eq(thin_alloc_new(&a, &x), 0);
	ck_assert_uint_eq(x, b[1]);
}
END_TEST

START_TEST(block_freed_after_the_gather_waits_for_the_next_commit)
{
	uint32_t b[4], x;

	take_all(b);
	thin_alloc_gather(&a);
	thin_alloc_put(&a, b[0]);
	thin_alloc_committed(&a);
	ck_assert_int_eq(thin_alloc_new(&a, &x), -ENOSPC);
	thin_alloc_gather(&a);
	thin_alloc_committed(&a);
	ck_assert_int_eq(thin_alloc_new(&a, &x), 0);
}
END_TEST

START_TEST(failed_commit_keeps_its_freed_blocks_pending)
{
	uint32_t b[4], x;

	take_all(b);
	thin_alloc_put(&a, b[3]);
	thin_alloc_gather(&a);
	thin_alloc_abandoned(&a);
	ck_assert_int_eq(thin_alloc_new(&a, &x), -ENOSPC);
	ck_assert_uint_eq(a.pending.nr, 1);
	thin_alloc_gather(&a);
	thin_alloc_committed(&a);
	ck_assert_int_eq(thin_alloc_new(&a, &x), 0);
}
END_TEST

START_TEST(shared_block_is_freed_only_by_its_last_reference)
{
	uint32_t b[4], x;

	take_all(b);
	thin_alloc_get(&a, b[0]);
	thin_alloc_put(&a, b[0]);
	thin_alloc_gather(&a);
	thin_alloc_committed(&a);
	ck_assert_int_eq(thin_alloc_new(&a, &x), -ENOSPC);
	ck_assert_uint_eq(thin_alloc_refs(&a, b[0]), 1);
}
END_TEST

/*
 * The cut that showed it (tests/powercut): a snapshot's copy-on-write
 * dropped a block to count 1, the other volume wrote it in place before
 * the commit, and after a power cut the snapshot showed that write.
 */
START_TEST(block_unshared_is_exclusive_only_once_its_transaction_commits)
{
	uint32_t b[4];

	take_all(b);
	ck_assert(thin_alloc_exclusive(&a, b[0]));
	thin_alloc_get(&a, b[0]);
	ck_assert(!thin_alloc_exclusive(&a, b[0]));
	thin_alloc_put(&a, b[0]);
	ck_assert_uint_eq(thin_alloc_refs(&a, b[0]), 1);
	ck_assert(!thin_alloc_exclusive(&a, b[0]));
	thin_alloc_gather(&a);
	ck_assert(!thin_alloc_exclusive(&a, b[0]));
	thin_alloc_committed(&a);
	ck_assert(thin_alloc_exclusive(&a, b[0]));
}
END_TEST

START_TEST(block_unshared_again_after_the_gather_waits_for_the_next_commit)
{
	uint32_t b[4];

	take_all(b);
	thin_alloc_get(&a, b[1]);
	thin_alloc_get(&a, b[1]);
	thin_alloc_put(&a, b[1]);
	thin_alloc_gather(&a);
	thin_alloc_put(&a, b[1]);
	thin_alloc_committed(&a);
	ck_assert(!thin_alloc_exclusive(&a, b[1]));
	thin_alloc_gather(&a);
	thin_alloc_abandoned(&a);
	ck_assert(!thin_alloc_exclusive(&a, b[1]));
	thin_alloc_gather(&a);
	thin_alloc_committed(&a);
	ck_assert(thin_alloc_exclusive(&a, b[1]));
}
END_TEST

START_TEST(unpublished_block_returns_to_the_pool_at_once)
{
	uint32_t b[4], x;

	take_all(b);
	thin_alloc_unnew(&a, b[2]);
	ck_assert_int_eq(thin_alloc_new(&a, &x), 0);
	ck_assert_uint_eq(x, b[2]);
}
END_TEST

START_TEST(grown_pool_has_the_new_blocks_free)
{
	uint32_t b[4], x;

	take_all(b);
	ck_assert_int_eq(thin_alloc_grow(&a, 6), 0);
	ck_assert_uint_eq(a.nr_free, 2);
	ck_assert_int_eq(thin_alloc_new(&a, &x), 0);
	ck_assert_uint_ge(x, 4);
	ck_assert_int_eq(thin_alloc_grow(&a, 5), -EINVAL);
}
END_TEST

START_TEST(loaded_counts_give_the_free_count)
{
	thin_alloc_get(&a, 0);
	thin_alloc_get(&a, 0);
	thin_alloc_get(&a, 2);
	thin_alloc_loaded(&a);
	ck_assert_uint_eq(a.nr_free, 2);
	ck_assert_uint_eq(thin_alloc_refs(&a, 0), 2);
}
END_TEST

/*
 * Counts of three and more leave the two-bit field for the overflow and
 * come back, exactly, without touching the neighbours in the word.
 */
START_TEST(counts_past_two_are_exact_and_leave_neighbours_alone)
{
	uint32_t b[4];

	take_all(b);
	for (int i = 0; i < 999; i++)
		thin_alloc_get(&a, b[1]);
	ck_assert_uint_eq(thin_alloc_refs(&a, b[1]), 1000);
	ck_assert_uint_eq(thin_alloc_field(&a, b[1]), THIN_ALLOC_FIELD_MANY);
	ck_assert(!thin_alloc_exclusive(&a, b[1]));
	for (int i = 0; i < 998; i++)
		thin_alloc_put(&a, b[1]);
	ck_assert_uint_eq(thin_alloc_refs(&a, b[1]), 2);
	ck_assert_uint_eq(thin_alloc_field(&a, b[1]), 2);
	thin_alloc_put(&a, b[1]);
	ck_assert_uint_eq(thin_alloc_refs(&a, b[1]), 1);
	/* Dropped in the open transaction: exclusive only once it commits. */
	ck_assert(!thin_alloc_exclusive(&a, b[1]));
	thin_alloc_gather(&a);
	thin_alloc_committed(&a);
	ck_assert(thin_alloc_exclusive(&a, b[1]));
	for (int i = 0; i < 4; i++)
		if (i != 1)
			ck_assert_uint_eq(thin_alloc_refs(&a, b[i]), 1);
}
END_TEST

/* nr_shared counts the blocks of count 2 and more, through the overflow and back. */
START_TEST(shared_blocks_are_counted_as_counts_cross_two)
{
	uint32_t b[4];

	take_all(b);
	ck_assert_uint_eq(a.nr_shared, 0);
	thin_alloc_get(&a, b[0]);
	thin_alloc_get(&a, b[1]);
	ck_assert_uint_eq(a.nr_shared, 2);
	for (int i = 0; i < 5; i++)
		thin_alloc_get(&a, b[1]);
	ck_assert_uint_eq(a.nr_shared, 2);
	for (int i = 0; i < 5; i++)
		thin_alloc_put(&a, b[1]);
	ck_assert_uint_eq(a.nr_shared, 2);
	thin_alloc_put(&a, b[1]);
	thin_alloc_put(&a, b[2]);		/* 1 to 0: never shared */
	ck_assert_uint_eq(a.nr_shared, 1);
	thin_alloc_loaded(&a);			/* the recount agrees */
	ck_assert_uint_eq(a.nr_shared, 1);
	thin_alloc_put(&a, b[0]);
	ck_assert_uint_eq(a.nr_shared, 0);
}
END_TEST

/* The last block of a word and the first of the next are apart. */
START_TEST(fields_of_adjacent_words_are_apart)
{
	thin_alloc_exit(&a);
	ck_assert_int_eq(thin_alloc_init(&a, 2 * THIN_ALLOC_FIELDS_PER_WORD), 0);
	for (int i = 0; i < 5; i++)
		thin_alloc_get(&a, THIN_ALLOC_FIELDS_PER_WORD - 1);
	thin_alloc_get(&a, THIN_ALLOC_FIELDS_PER_WORD);
	thin_alloc_loaded(&a);
	ck_assert_uint_eq(thin_alloc_refs(&a, THIN_ALLOC_FIELDS_PER_WORD - 1), 5);
	ck_assert_uint_eq(thin_alloc_refs(&a, THIN_ALLOC_FIELDS_PER_WORD), 1);
	ck_assert_uint_eq(thin_alloc_refs(&a, THIN_ALLOC_FIELDS_PER_WORD - 2), 0);
	ck_assert_uint_eq(a.nr_free, 2 * THIN_ALLOC_FIELDS_PER_WORD - 2);
}
END_TEST

START_TEST(held_block_is_not_handed_out_until_released)
{
	uint32_t b[4], x;

	take_all(b);
	thin_alloc_put(&a, b[2]);
	thin_alloc_gather(&a);
	ck_assert_uint_eq(thin_alloc_hold_committed(&a), 1);
	ck_assert(thin_blocks_has(&a.held, b[2]));
	/* Being discarded: not free yet. */
	ck_assert_int_eq(thin_alloc_new(&a, &x), -ENOSPC);
	thin_alloc_release(&a, false);
	ck_assert_int_eq(thin_alloc_new(&a, &x), 0);
	ck_assert_uint_eq(x, b[2]);
}
END_TEST

START_TEST(trim_holds_only_free_blocks_and_gives_them_back)
{
	uint64_t next = 0;
	uint32_t b, x;

	ck_assert_int_eq(thin_alloc_new(&a, &b), 0);
	ck_assert_uint_eq(thin_alloc_hold_free(&a, &next, 2), 2);
	ck_assert(!thin_blocks_has(&a.held, b));
	ck_assert_uint_eq(a.nr_free, 1);
	ck_assert_int_eq(thin_alloc_new(&a, &x), 0);	/* the one not held */
	ck_assert_int_eq(thin_alloc_new(&a, &x), -ENOSPC);
	thin_alloc_release(&a, false);
	ck_assert_uint_eq(a.nr_free, 2);
	ck_assert_uint_eq(thin_alloc_hold_free(&a, &next, 2), 0);
	ck_assert_uint_eq(next, 4);
	thin_alloc_release(&a, false);
}
END_TEST

START_TEST(trim_leaves_out_blocks_discarded_until_they_are_used_again)
{
	uint64_t next = 0;
	uint32_t b, x;

	ck_assert_uint_eq(thin_alloc_hold_free(&a, &next, 4), 4);
	thin_alloc_release(&a, true);
	next = 0;
	ck_assert_uint_eq(thin_alloc_hold_free(&a, &next, 4), 0);
	thin_alloc_release(&a, false);
	ck_assert_int_eq(thin_alloc_new(&a, &b), 0);	/* used again... */
	thin_alloc_put(&a, b);
	thin_alloc_gather(&a);
	thin_alloc_committed(&a);			/* ... and freed, not passed down */
	next = 0;
	ck_assert_uint_eq(thin_alloc_hold_free(&a, &next, 4), 1);
	ck_assert(thin_blocks_has(&a.held, b));
	thin_alloc_release(&a, false);
	next = 0;
	ck_assert_uint_eq(thin_alloc_hold_free(&a, &next, 4), 1);	/* not discarded */
	thin_alloc_release(&a, false);
	ck_assert_int_eq(thin_alloc_new(&a, &x), 0);
}
END_TEST

/*
 * Removing the last volume of a large pool frees every block in one
 * transaction: past THIN_BLOCKS_LISTED the sets keep bits, not lists
 * (thin_blocks.h), and must keep the same rules.
 */
#define HUGE	(3 * THIN_BLOCKS_LISTED + 5)

/* A pool of HUGE blocks, every one mapped once. */
static void take_huge(void)
{
	uint32_t x, failed = 0;

	thin_alloc_exit(&a);
	ck_assert_int_eq(thin_alloc_init(&a, HUGE), 0);
	for (uint32_t i = 0; i < HUGE; i++)
		failed += thin_alloc_new(&a, &x) != 0 || x != i;
	for (uint32_t i = 0; i < HUGE; i++)
		thin_alloc_published(&a, i);
	ck_assert_uint_eq(failed, 0);
}

static void put_range(uint32_t first, uint32_t n)
{
	for (uint32_t b = first; b < first + n; b++)
		thin_alloc_put(&a, b);
}

/* Every block of the pool can be taken, and then none. */
static void assert_all_free(void)
{
	uint32_t x;

	uint64_t failed = 0;

	ck_assert_uint_eq(a.nr_free, a.nr_blocks);
	for (uint64_t i = 0; i < a.nr_blocks; i++)
		failed += thin_alloc_new(&a, &x) != 0;
	ck_assert_uint_eq(failed, 0);
	ck_assert_int_eq(thin_alloc_new(&a, &x), -ENOSPC);
}

/*
 * A stored space map gives a fresh allocator the counts it was gathered
 * from, and the free and shared counts with them, without a recount.
 */
START_TEST(a_stored_space_map_loads_its_counts_and_the_totals)
{
	struct thin_alloc b;

	take_huge();
	thin_alloc_get(&a, 7);				/* shared: 2 */
	for (int i = 0; i < 4; i++)
		thin_alloc_get(&a, 4100);		/* past a field: 5 */
	put_range(HUGE - 3, 3);				/* free once committed */
	thin_alloc_gather(&a);
	thin_alloc_committed(&a);
	thin_alloc_space_stale(&a);
	ck_assert_int_eq(thin_alloc_space_gather(&a), 0);
	ck_assert_int_eq(thin_alloc_init(&b, HUGE), 0);
	for (size_t i = 0; i < a.nr_space; i++)
		ck_assert_int_eq(thin_alloc_space_load(&b, &a.space[i]), 0);
	thin_alloc_space_done(&a, true, false);
	ck_assert_uint_eq(b.nr_free, 3);
	ck_assert_uint_eq(b.nr_shared, 2);
	ck_assert_uint_eq(thin_alloc_refs(&b, 4100), 5);
	ck_assert_uint_eq(thin_alloc_refs(&b, 7), 2);
	ck_assert_uint_eq(thin_alloc_refs(&b, HUGE - 1), 0);
	thin_alloc_loaded(&b);				/* a recount agrees */
	ck_assert_uint_eq(b.nr_free, 3);
	ck_assert_uint_eq(b.nr_shared, 2);
	thin_alloc_exit(&b);
}
END_TEST

START_TEST(failed_commit_after_a_huge_free_keeps_every_block_pending)
{
	uint32_t x;

	take_huge();
	put_range(0, HUGE);
	ck_assert(!a.pending.listed);
	ck_assert_uint_eq(a.pending.nr, HUGE);
	thin_alloc_gather(&a);
	ck_assert_uint_eq(a.pending.nr, 0);
	ck_assert_uint_eq(a.committing.nr, HUGE);
	thin_alloc_abandoned(&a);
	ck_assert_uint_eq(a.pending.nr, HUGE);
	ck_assert_uint_eq(a.committing.nr, 0);
	ck_assert_int_eq(thin_alloc_new(&a, &x), -ENOSPC);
	thin_alloc_gather(&a);
	thin_alloc_committed(&a);
	assert_all_free();
}
END_TEST

START_TEST(few_blocks_freed_after_a_huge_free_are_listed_and_commit_alone)
{
	uint32_t b[3];

	take_huge();
	put_range(0, HUGE);
	thin_alloc_gather(&a);
	thin_alloc_committed(&a);
	ck_assert_uint_eq(a.nr_free, HUGE);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(thin_alloc_new(&a, &b[i]), 0);
	for (int i = 0; i < 3; i++)
		thin_alloc_put(&a, b[i]);
	ck_assert(a.pending.listed);
	ck_assert_uint_eq(a.pending.nr_listed, 3);
	thin_alloc_gather(&a);
	ck_assert(a.committing.listed);
	thin_alloc_committed(&a);
	assert_all_free();
}
END_TEST

START_TEST(pool_grown_between_a_huge_free_and_its_commit_frees_both)
{
	uint32_t x;

	take_huge();
	put_range(0, HUGE);
	ck_assert_int_eq(thin_alloc_grow(&a, HUGE + 100), 0);
	ck_assert_uint_eq(a.nr_free, 100);
	for (int i = 0; i < 100; i++) {
		ck_assert_int_eq(thin_alloc_new(&a, &x), 0);
		ck_assert_uint_ge(x, HUGE);
		thin_alloc_published(&a, x);
	}
	put_range(HUGE, 100);
	thin_alloc_gather(&a);
	thin_alloc_abandoned(&a);
	ck_assert_int_eq(thin_alloc_grow(&a, HUGE + 200), 0);
	ck_assert_uint_eq(a.nr_free, 100);
	thin_alloc_gather(&a);
	thin_alloc_committed(&a);
	assert_all_free();
}
END_TEST

START_TEST(huge_sharing_broken_is_exclusive_only_once_committed)
{
	uint32_t shared = 0;

	take_huge();
	for (uint32_t i = 0; i < HUGE; i++)
		thin_alloc_get(&a, i);
	put_range(0, HUGE);
	ck_assert(!a.unshared.listed);
	for (uint32_t i = 0; i < HUGE; i += 997)
		ck_assert(!thin_alloc_exclusive(&a, i));
	thin_alloc_gather(&a);
	thin_alloc_abandoned(&a);
	ck_assert(!thin_alloc_exclusive(&a, HUGE - 1));
	thin_alloc_gather(&a);
	ck_assert(!thin_alloc_exclusive(&a, HUGE - 1));
	thin_alloc_committed(&a);
	for (uint32_t i = 0; i < HUGE; i++)
		shared += !thin_alloc_exclusive(&a, i);
	ck_assert_uint_eq(shared, 0);
}
END_TEST

START_TEST(huge_free_is_held_for_discard_in_block_order)
{
	struct thin_blocks_walk w = THIN_BLOCKS_WALK_INIT;
	uint64_t word, mask, n = 0, next = 0;
	uint32_t x;

	take_huge();
	put_range(0, HUGE);
	thin_alloc_gather(&a);
	ck_assert_uint_eq(thin_alloc_hold_committed(&a), HUGE);
	while (thin_blocks_next(&a.held, &w, &word, &mask)) {
		ck_assert_uint_eq(word * 64, n);	/* in order, none missing */
		n += (uint64_t)__builtin_popcountll(mask);
	}
	ck_assert_uint_eq(n, HUGE);
	ck_assert_int_eq(thin_alloc_new(&a, &x), -ENOSPC);
	thin_alloc_release(&a, true);
	ck_assert_uint_eq(thin_alloc_hold_free(&a, &next, 4), 0);	/* all discarded */
	thin_alloc_release(&a, false);
	assert_all_free();
}
END_TEST

/*
 * Blocks a commit passed down are marked discarded only while the marks
 * take fewer than THIN_ALLOC_PASSDOWN_MARK_PAGES pages; past that, trim
 * discards them (again), and marks what it discards whatever it takes.
 */
START_TEST(passdown_marks_are_kept_within_their_pages_and_trim_marks_all)
{
	uint32_t pages = THIN_ALLOC_PASSDOWN_MARK_PAGES + 8, per_page, unmarked = 0;
	uint64_t next;

	per_page = (uint32_t)(64u << a.discarded_bits.page_shift);
	thin_alloc_exit(&a);
	ck_assert_int_eq(thin_alloc_init(&a, (uint64_t)pages * per_page), 0);
	for (uint32_t pg = 0; pg < pages; pg++)
		thin_alloc_get(&a, pg * per_page);	/* one block a page, as loaded */
	thin_alloc_loaded(&a);
	for (uint32_t pg = 0; pg < pages; pg++)
		thin_alloc_put(&a, pg * per_page);
	thin_alloc_gather(&a);
	ck_assert_uint_eq(thin_alloc_hold_committed(&a), pages);
	thin_alloc_release(&a, true);
	ck_assert_uint_eq(a.discarded_bits.nr_pages_set, THIN_ALLOC_PASSDOWN_MARK_PAGES);
	for (uint32_t pg = 0; pg < pages; pg++)
		unmarked += !sparse_bits_test(&a.discarded_bits, pg * per_page);
	ck_assert_uint_eq(unmarked, pages - THIN_ALLOC_PASSDOWN_MARK_PAGES);
	/* A trim of the last page takes its unmarked block, and marks the page. */
	next = (uint64_t)(pages - 1) * per_page;
	ck_assert_uint_eq(thin_alloc_hold_free(&a, &next, per_page), per_page);
	ck_assert(thin_blocks_has(&a.held, (pages - 1) * per_page));
	thin_alloc_release(&a, true);
	ck_assert_uint_eq(a.discarded_bits.nr_pages_set, THIN_ALLOC_PASSDOWN_MARK_PAGES + 1);
	next = (uint64_t)(pages - 1) * per_page;
	ck_assert_uint_eq(thin_alloc_hold_free(&a, &next, per_page), 0);	/* all marked now */
	thin_alloc_release(&a, false);
	ck_assert_uint_eq(a.nr_free, a.nr_blocks);
}
END_TEST

static Suite *thin_alloc_suite(void)
{
	Suite *suite = suite_create("thin_alloc");
	TCase *tc = tcase_create("thin_alloc");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, allocator_hands_out_every_block_once_then_enospc);
	tcase_add_test(tc, freed_block_is_not_reused_before_its_transaction_commits);
	tcase_add_test(tc, block_freed_after_the_gather_waits_for_the_next_commit);
	tcase_add_test(tc, failed_commit_keeps_its_freed_blocks_pending);
	tcase_add_test(tc, shared_block_is_freed_only_by_its_last_reference);
	tcase_add_test(tc, block_unshared_is_exclusive_only_once_its_transaction_commits);
	tcase_add_test(tc, block_unshared_again_after_the_gather_waits_for_the_next_commit);
	tcase_add_test(tc, unpublished_block_returns_to_the_pool_at_once);
	tcase_add_test(tc, grown_pool_has_the_new_blocks_free);
	tcase_add_test(tc, loaded_counts_give_the_free_count);
	tcase_add_test(tc, counts_past_two_are_exact_and_leave_neighbours_alone);
	tcase_add_test(tc, shared_blocks_are_counted_as_counts_cross_two);
	tcase_add_test(tc, fields_of_adjacent_words_are_apart);
	tcase_add_test(tc, held_block_is_not_handed_out_until_released);
	tcase_add_test(tc, trim_holds_only_free_blocks_and_gives_them_back);
	tcase_add_test(tc, trim_leaves_out_blocks_discarded_until_they_are_used_again);
	tcase_add_test(tc, a_stored_space_map_loads_its_counts_and_the_totals);
	tcase_add_test(tc, failed_commit_after_a_huge_free_keeps_every_block_pending);
	tcase_add_test(tc, few_blocks_freed_after_a_huge_free_are_listed_and_commit_alone);
	tcase_add_test(tc, pool_grown_between_a_huge_free_and_its_commit_frees_both);
	tcase_add_test(tc, huge_sharing_broken_is_exclusive_only_once_committed);
	tcase_add_test(tc, huge_free_is_held_for_discard_in_block_order);
	tcase_add_test(tc, passdown_marks_are_kept_within_their_pages_and_trim_marks_all);
	suite_add_tcase(suite, tc);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(thin_alloc_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
