/*
 * The packed region table: entry widths, packing across words, and that
 * concurrent readers never see an entry that no writer stored.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "switch_table.h"

static struct switch_table *make(uint64_t regions, unsigned int paths)
{
	struct switch_table *t;

	ck_assert_int_eq(switch_table_create(regions, paths, &t), 0);
	return t;
}

START_TEST(entry_takes_the_fewest_bits_that_hold_the_paths)
{
	static const unsigned int paths[] = { 2, 3, 4, 5, 16, 17, 256 };
	static const unsigned int bits[] = { 1, 2, 2, 3, 4, 5, 8 };

	for (unsigned int i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct switch_table *t = make(1000, paths[i]);

		ck_assert_uint_eq(switch_table_bits(paths[i]), bits[i]);
		ck_assert_uint_eq(t->bits, bits[i]);
		ck_assert_uint_eq(t->per_word, 64 / bits[i]);
		ck_assert_uint_eq(t->nr_words, (1000 + 64 / bits[i] - 1) / (64 / bits[i]));
		switch_table_destroy(t);
	}
}
END_TEST

START_TEST(every_entry_reads_back_what_was_set_for_every_width)
{
	static const unsigned int paths[] = { 2, 3, 4, 5, 16, 17, 256 };
	uint64_t wrong = 0;

	for (unsigned int i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct switch_table *t = make(4099, paths[i]);

		for (uint64_t r = 0; r < t->nr_regions; r++)
			switch_table_set(t, r, (unsigned int)((r * 7 + 3) % paths[i]));
		for (uint64_t r = 0; r < t->nr_regions; r++)
			wrong += switch_table_get(t, r) != (r * 7 + 3) % paths[i];
		switch_table_destroy(t);
	}
	ck_assert_uint_eq(wrong, 0);
}
END_TEST

START_TEST(three_bit_entries_never_straddle_a_word)
{
	struct switch_table *t = make(64, 5);

	ck_assert_uint_eq(t->per_word, 21);
	ck_assert_int_eq(t->per_word_shift, -1);
	switch_table_set(t, 20, 4);
	switch_table_set(t, 21, 3);
	ck_assert_uint_eq(atomic_load(&t->words[0]) >> 60, 4);
	ck_assert_uint_eq(atomic_load(&t->words[1]) & 7, 3);
	switch_table_destroy(t);
}
END_TEST

START_TEST(new_table_is_round_robin_like_dm_switch)
{
	struct switch_table *t = make(100, 3);
	uint64_t wrong = 0;

	switch_table_round_robin(t);
	for (uint64_t r = 0; r < 100; r++)
		wrong += switch_table_get(t, r) != r % 3;
	ck_assert_uint_eq(wrong, 0);
	switch_table_destroy(t);
}
END_TEST

START_TEST(create_refuses_one_path_too_many_paths_and_no_region)
{
	struct switch_table *t;

	ck_assert_int_eq(switch_table_create(10, 1, &t), -EINVAL);
	ck_assert_int_eq(switch_table_create(10, 257, &t), -EINVAL);
	ck_assert_int_eq(switch_table_create(0, 2, &t), -EINVAL);
	ck_assert_int_eq(switch_table_create(SWITCH_REGIONS_MAX + 1, 2, &t), -EINVAL);
}
END_TEST

START_TEST(export_and_import_round_trip)
{
	struct switch_table *a = make(1000, 17), *b = make(1000, 17);
	uint8_t *buf = malloc(a->nr_words * 8);
	uint64_t wrong = 0;

	for (uint64_t r = 0; r < 1000; r++)
		switch_table_set(a, r, (unsigned int)(r * r % 17));
	switch_table_export(a, buf);
	ck_assert_int_eq(switch_table_import(b, buf, a->nr_words * 8), 0);
	for (uint64_t r = 0; r < 1000; r++)
		wrong += switch_table_get(b, r) != r * r % 17;
	ck_assert_uint_eq(wrong, 0);
	free(buf);
	switch_table_destroy(a);
	switch_table_destroy(b);
}
END_TEST

START_TEST(import_refuses_a_wrong_length_or_a_path_past_the_end)
{
	struct switch_table *t = make(10, 3);
	uint8_t buf[8] = { 0x03 };	/* region 0 -> path 3 of 3 */

	ck_assert_int_eq(switch_table_import(t, buf, 7), -EUCLEAN);
	ck_assert_int_eq(switch_table_import(t, buf, 8), -EUCLEAN);
	buf[0] = 0x02;
	ck_assert_int_eq(switch_table_import(t, buf, 8), 0);
	ck_assert_uint_eq(switch_table_get(t, 0), 2);
	switch_table_destroy(t);
}
END_TEST

START_TEST(copy_words_stores_only_what_differs_and_count_sums_paths)
{
	struct switch_table *live = make(1000, 4), *staged;
	uint64_t counts[4];

	switch_table_round_robin(live);
	ck_assert_int_eq(switch_table_clone(live, &staged), 0);
	switch_table_set(staged, 999, 0);
	ck_assert_uint_eq(switch_table_copy_words(live, staged), 1);
	ck_assert_uint_eq(switch_table_get(live, 999), 0);
	switch_table_count(live, counts);
	ck_assert_uint_eq(counts[0], 251);
	ck_assert_uint_eq(counts[3], 249);
	switch_table_destroy(staged);
	switch_table_destroy(live);
}
END_TEST

/*
 * Readers and one writer: the writer flips the table between all 1s and
 * all 2s (of 3 paths, 2 bits: 01 and 10), by whole words and by single
 * entries; a torn entry would show as 0 or 3.
 */
#define RACE_REGIONS	4096
#define RACE_ROUNDS	2000

struct race {
	struct switch_table *t;
	atomic_int stop;
	_Atomic uint64_t bad;		/* summed over the readers */
};

static void *race_reader(void *arg)
{
	struct race *rc = arg;
	uint64_t bad = 0;

	while (!atomic_load(&rc->stop)) {
		for (uint64_t r = 0; r < RACE_REGIONS; r++) {
			unsigned int p = switch_table_get(rc->t, r);

			bad += p != 1 && p != 2;
		}
	}
	atomic_fetch_add(&rc->bad, bad);
	return NULL;
}

START_TEST(concurrent_readers_never_see_a_torn_entry)
{
	struct race rc = { .t = make(RACE_REGIONS, 3) };
	struct switch_table *ones = make(RACE_REGIONS, 3), *twos = make(RACE_REGIONS, 3);
	pthread_t th[3];

	for (uint64_t r = 0; r < RACE_REGIONS; r++) {
		switch_table_set(ones, r, 1);
		switch_table_set(twos, r, 2);
		switch_table_set(rc.t, r, 1);
	}
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, race_reader, &rc), 0);
	for (int round = 0; round < RACE_ROUNDS; round++) {
		struct switch_table *src = round % 2 ? ones : twos;

		switch_table_copy_words(rc.t, src);
		for (uint64_t r = round; r < RACE_REGIONS; r += 97)
			switch_table_set(rc.t, r, round % 2 ? 2 : 1);
	}
	atomic_store(&rc.stop, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	ck_assert_uint_eq(atomic_load(&rc.bad), 0);
	switch_table_destroy(ones);
	switch_table_destroy(twos);
	switch_table_destroy(rc.t);
}
END_TEST

static Suite *switch_table_suite(void)
{
	Suite *s = suite_create("switch_table");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, entry_takes_the_fewest_bits_that_hold_the_paths);
	tcase_add_test(tc, every_entry_reads_back_what_was_set_for_every_width);
	tcase_add_test(tc, three_bit_entries_never_straddle_a_word);
	tcase_add_test(tc, new_table_is_round_robin_like_dm_switch);
	tcase_add_test(tc, create_refuses_one_path_too_many_paths_and_no_region);
	tcase_add_test(tc, export_and_import_round_trip);
	tcase_add_test(tc, import_refuses_a_wrong_length_or_a_path_past_the_end);
	tcase_add_test(tc, copy_words_stores_only_what_differs_and_count_sums_paths);
	tcase_add_test(tc, concurrent_readers_never_see_a_torn_entry);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(switch_table_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
