/*
 * The slab hands out distinct, aligned objects of its size, from more than
 * one chunk; gives a freed object to the next caller, whatever thread
 * freed it; and holds no more memory than the most objects live at once.
 */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "slab.h"

#define OBJ	2048u
#define MANY	(3 * SLAB_CHUNK_BYTES / OBJ + 7)	/* past three chunks */

static struct slab slab = SLAB_INIT(OBJ);
static void *objs[MANY];

START_TEST(objects_are_distinct_aligned_and_whole)
{
	for (unsigned int i = 0; i < MANY; i++) {
		objs[i] = slab_alloc(&slab);
		ck_assert_ptr_nonnull(objs[i]);
		ck_assert_uint_eq((uintptr_t)objs[i] % 16, 0);
		memset(objs[i], (int)(i & 0xff), OBJ);	/* a whole object is writable */
	}
	for (unsigned int i = 0; i < MANY; i++) {
		const unsigned char *b = objs[i];

		/* No object overlaps another: each still holds its own byte. */
		ck_assert_uint_eq(b[0], i & 0xff);
		ck_assert_uint_eq(b[OBJ - 1], i & 0xff);
	}
	for (unsigned int i = 0; i < MANY; i++)
		slab_free(&slab, objs[i]);
	slab_free(&slab, NULL);
}
END_TEST

/* Every object freed is handed out again before a new one is carved. */
START_TEST(freed_objects_come_back_before_new_ones)
{
	char *carve_before;

	for (unsigned int i = 0; i < 100; i++)
		objs[i] = slab_alloc(&slab);
	for (unsigned int i = 0; i < 100; i++)
		slab_free(&slab, objs[i]);
	carve_before = slab.carve;
	for (unsigned int i = 0; i < 100; i++) {
		void *o = slab_alloc(&slab);

		ck_assert_ptr_eq(o, objs[99 - i]);
	}
	ck_assert_ptr_eq(slab.carve, carve_before);
	for (unsigned int i = 0; i < 100; i++)
		slab_free(&slab, objs[i]);
}
END_TEST

/* Loaded on one thread, freed on another (a pool's worker): reused. */
static void *free_all(void *arg)
{
	(void)arg;
	for (unsigned int i = 0; i < 1000; i++)
		slab_free(&slab, objs[i]);
	return NULL;
}

START_TEST(objects_freed_on_another_thread_are_reused)
{
	pthread_t t;
	char *carve_before = NULL;

	for (unsigned int round = 0; round < 20; round++) {
		for (unsigned int i = 0; i < 1000; i++)
			objs[i] = slab_alloc(&slab);
		if (round == 1)
			carve_before = slab.carve;
		ck_assert_int_eq(pthread_create(&t, NULL, free_all, NULL), 0);
		ck_assert_int_eq(pthread_join(t, NULL), 0);
	}
	/* After the first rounds, no memory is added: the peak is enough. */
	ck_assert_ptr_eq(slab.carve, carve_before);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("slab");
	TCase *tc = tcase_create("slab");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, objects_are_distinct_aligned_and_whole);
	tcase_add_test(tc, freed_objects_come_back_before_new_ones);
	tcase_add_test(tc, objects_freed_on_another_thread_are_reused);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);	/* the cases share one slab, in order */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
