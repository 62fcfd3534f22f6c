/*
 * tests/unit/test_thin_map.c: the hot cache's pages, and readers that
 * walk them with atomic loads while one writer replaces them.
 */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>

#include "rcu.h"
#include "thin_map.h"

#define ROUNDS		5000
#define READERS		3
#define SLOTS		4

START_TEST(new_leaf_is_all_holes_with_one_reference)
{
	struct thin_leaf *l = thin_leaf_new(7);

	ck_assert_ptr_nonnull(l);
	ck_assert_int_eq(atomic_load(&l->refs), 1);
	ck_assert_int_eq(l->id, 7);
	for (unsigned int i = 0; i < THIN_LEAF_ENTRIES; i++)
		ck_assert_uint_eq(atomic_load(&l->e[i]), 0);
	thin_leaf_free(l);
}
END_TEST

START_TEST(leaf_copy_keeps_entries_and_drops_the_provisioning_flag)
{
	struct thin_leaf *l = thin_leaf_new(1), *c;

	atomic_store(&l->e[3], 42);
	atomic_store(&l->e[4], 17 | THIN_PROVISIONING);
	c = thin_leaf_copy(l, 2);
	ck_assert_uint_eq(atomic_load(&c->e[3]), 42);
	ck_assert_uint_eq(atomic_load(&c->e[4]), 17);
	ck_assert_int_eq(atomic_load(&c->refs), 1);
	thin_leaf_free(l);
	thin_leaf_free(c);
}
END_TEST

START_TEST(dir_copy_grows_and_takes_a_reference_on_every_leaf)
{
	struct thin_dir *d = thin_dir_new(1, 2), *c;
	struct thin_leaf *l = thin_leaf_new(2);

	atomic_store(&d->leaf[1], l);
	c = thin_dir_copy(d, 3, 5);
	ck_assert_uint_eq(c->nr, 5);
	ck_assert_ptr_eq(atomic_load(&c->leaf[1]), l);
	ck_assert_ptr_null(atomic_load(&c->leaf[4]));
	ck_assert_int_eq(atomic_load(&l->refs), 2);
	free(d);
	free(c);
	thin_leaf_free(l);
}
END_TEST

START_TEST(dir_entry_of_a_missing_leaf_is_a_hole)
{
	struct thin_dir *d = thin_dir_new(1, 2);
	uint32_t e = 1;

	ck_assert(thin_dir_lookup(d, 600, &e));
	ck_assert_uint_eq(e, 0);
	free(d);
}
END_TEST

/* A leaf whose entries are not loaded is a miss, not a hole, until filled. */
START_TEST(stub_leaf_misses_until_filled)
{
	struct thin_dir *d = thin_dir_new(1, 2);
	struct thin_leaf *l = thin_leaf_stub(4);
	struct thin_leaf_rec rec = { .id = 4 };
	uint32_t e;

	atomic_store(&d->leaf[1], l);
	ck_assert(!thin_leaf_resident(l));
	ck_assert(!thin_dir_lookup(d, THIN_LEAF_ENTRIES + 3, &e));
	rec.map[3] = 42 | THIN_PROVISIONING;
	ck_assert_int_eq(thin_leaf_fill(l, &rec), 0);
	ck_assert(thin_leaf_resident(l));
	ck_assert(thin_dir_lookup(d, THIN_LEAF_ENTRIES + 3, &e));
	ck_assert_uint_eq(e, 42);
	free(d);
	thin_leaf_free(l);
}
END_TEST

START_TEST(leaf_record_drops_the_provisioning_flag)
{
	struct thin_leaf *l = thin_leaf_new(9);
	struct thin_leaf_rec rec;

	atomic_store(&l->e[0], 5 | THIN_PROVISIONING);
	thin_leaf_record(l, &rec);
	ck_assert_int_eq(rec.id, 9);
	ck_assert_uint_eq(rec.map[0], 5);
	thin_leaf_free(l);
}
END_TEST

/*
 * The writer publishes, round after round, a fresh leaf in every slot
 * whose entries all hold the round number, and frees the old one after a
 * grace period.  A reader must never see a leaf that is half filled, nor
 * one freed under it (ASan/TSan would see that), nor a round going back.
 */
static struct thin_dir *shared_dir;
static _Atomic bool done;

static void *reader(void *arg)
{
	uint32_t last[SLOTS] = { 0 };
	long bad = 0;

	(void)arg;
	urcu_memb_register_thread();
	while (!atomic_load(&done)) {
		rcu_read_begin();
		for (unsigned int s = 0; s < SLOTS; s++) {
			struct thin_leaf *l = atomic_load_explicit(&shared_dir->leaf[s],
								   memory_order_acquire);
			uint32_t first = l ? atomic_load_explicit(&l->e[0], memory_order_acquire) : 0;

			for (unsigned int i = 1; l && i < THIN_LEAF_ENTRIES; i += 37)
				if (atomic_load_explicit(&l->e[i], memory_order_acquire) != first)
					bad++;
			if (first < last[s])
				bad++;
			last[s] = first;
		}
		rcu_read_end();
	}
	urcu_memb_unregister_thread();
	return (void *)bad;
}

START_TEST(readers_see_whole_leaves_while_one_writer_replaces_them)
{
	pthread_t t[READERS];

	urcu_memb_register_thread();
	shared_dir = thin_dir_new(1, SLOTS);
	atomic_store(&done, false);
	for (int i = 0; i < READERS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, reader, NULL), 0);
	for (uint32_t round = 1; round <= ROUNDS; round++) {
		unsigned int s = round % SLOTS;
		struct thin_leaf *l = thin_leaf_new(round), *old;

		for (unsigned int i = 0; i < THIN_LEAF_ENTRIES; i++)
			atomic_init(&l->e[i], round);
		old = atomic_exchange_explicit(&shared_dir->leaf[s], l, memory_order_acq_rel);
		if (old) {
			rcu_wait_readers();
			thin_leaf_free(old);
		}
	}
	atomic_store(&done, true);
	for (int i = 0; i < READERS; i++) {
		void *bad;

		pthread_join(t[i], &bad);
		ck_assert_int_eq((long)bad, 0);
	}
	for (unsigned int s = 0; s < SLOTS; s++)
		thin_leaf_free(atomic_load(&shared_dir->leaf[s]));
	free(shared_dir);
	urcu_memb_unregister_thread();
}
END_TEST

static Suite *thin_map_suite(void)
{
	Suite *suite = suite_create("thin_map");
	TCase *tc = tcase_create("thin_map");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, new_leaf_is_all_holes_with_one_reference);
	tcase_add_test(tc, leaf_copy_keeps_entries_and_drops_the_provisioning_flag);
	tcase_add_test(tc, dir_copy_grows_and_takes_a_reference_on_every_leaf);
	tcase_add_test(tc, dir_entry_of_a_missing_leaf_is_a_hole);
	tcase_add_test(tc, stub_leaf_misses_until_filled);
	tcase_add_test(tc, leaf_record_drops_the_provisioning_flag);
	tcase_add_test(tc, readers_see_whole_leaves_while_one_writer_replaces_them);
	suite_add_tcase(suite, tc);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(thin_map_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
