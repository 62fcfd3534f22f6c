/*
 * The slab hands out distinct, aligned objects of its size, from more than
 * one chunk; gives a freed object to the next caller, whatever thread
 * freed it; holds no more memory than the most objects live at once; and
 * gives the OS back the pages only free objects cover when trimmed.  A
 * huge slab's chunks are 2 MiB-aligned mappings of zeros (bigmem.h), and
 * it is never trimmed.
 */
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <sanitizer/asan_interface.h>

#include "bigmem.h"
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

static bool resident(const void *p)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char vec = 0;

	ck_assert_int_eq(mincore((void *)((uintptr_t)p & ~(uintptr_t)(page - 1)), 1, &vec), 0);
	return vec & 1;
}

/*
 * Two 2 KiB objects a page: a page both of whose objects are free goes
 * back; one with an object still live stays, and so does its free one,
 * which is handed out first; trimmed objects come next, writable, before
 * anything new is carved.
 */
START_TEST(trim_gives_back_only_pages_that_free_objects_cover)
{
	static struct slab fresh = SLAB_INIT(OBJ);
	unsigned int pages = SLAB_CHUNK_BYTES / 4096, whole = 0;
	char *carve_before;

	if (sysconf(_SC_PAGESIZE) != 4096)
		return;
	for (unsigned int i = 0; i < 2 * pages; i++) {
		objs[i] = slab_alloc(&fresh);
		memset(objs[i], 1, OBJ);	/* every page resident */
	}
	ck_assert_uint_eq(slab_trim(&fresh), 0);	/* nothing free yet */
	/* Pages 0, 3, 6, ... wholly free; the others keep their second object. */
	for (unsigned int pg = 0; pg < pages; pg++) {
		slab_free(&fresh, objs[2 * pg]);
		if (pg % 3 == 0) {
			slab_free(&fresh, objs[2 * pg + 1]);
			whole++;
		}
	}
	ck_assert_uint_eq(slab_trim(&fresh), whole * 4096);
	for (unsigned int pg = 0; pg < pages; pg++)
		ck_assert(resident(objs[2 * pg]) == (pg % 3 != 0));
	ck_assert_uint_eq(fresh.nr_trimmed, 2 * whole);
	ck_assert_uint_eq(slab_trim(&fresh), 0);	/* trimmed once is trimmed */
#ifdef __SANITIZE_ADDRESS__
	ck_assert(__asan_address_is_poisoned(objs[0]));	/* a use after free, still */
	ck_assert(__asan_address_is_poisoned((char *)objs[1] + OBJ - 1));
#endif

	carve_before = fresh.carve;
	for (unsigned int i = 0; i < pages - whole; i++) {
		char *o = slab_alloc(&fresh);

		size_t off = (size_t)(o - (char *)objs[0]);

		/* The half-free pages' free objects first, where they were. */
		ck_assert(off % 4096 == 0 && off / 4096 % 3 != 0);
		ck_assert(resident(o));
	}
	for (unsigned int i = 0; i < 2 * whole; i++) {
		char *o = slab_alloc(&fresh);

		ck_assert_uint_eq(o[0], 0);	/* a trimmed page reads zeros */
		memset(o, 2, OBJ);
#ifdef __SANITIZE_ADDRESS__
		ck_assert(!__asan_region_is_poisoned(o, OBJ));
#endif
	}
	ck_assert_ptr_eq(fresh.carve, carve_before);
	ck_assert_uint_eq(fresh.nr_trimmed, 0);
	ck_assert_ptr_ne(slab_alloc(&fresh), NULL);	/* then a new chunk */
	ck_assert_ptr_ne(fresh.carve, carve_before);
}
END_TEST

START_TEST(a_huge_slab_carves_aligned_chunks_and_keeps_them)
{
	static struct slab huge = SLAB_INIT_HUGE(48);
	size_t per_chunk = BIGMEM_ALIGN / 48;
	char *first = slab_alloc(&huge), *o = first;

	ck_assert_ptr_nonnull(first);
	ck_assert_uint_eq((uintptr_t)first % BIGMEM_ALIGN, 0);	/* a chunk starts it */
	for (size_t i = 1; i <= per_chunk; i++) {
		o = slab_alloc(&huge);
		ck_assert_ptr_nonnull(o);
		ck_assert_uint_eq((uintptr_t)o % 16, 0);
		for (unsigned int j = 0; j < 48; j++)
			ck_assert_uint_eq((unsigned char)o[j], 0);	/* fresh: zeros */
		memset(o, 0xa5, 48);
	}
	ck_assert_uint_eq((uintptr_t)o % BIGMEM_ALIGN, 0);	/* the last one began a second */
	slab_free(&huge, first);
	ck_assert_uint_eq(slab_trim(&huge), 0);
	ck_assert_ptr_eq(slab_alloc(&huge), first);
}
END_TEST

START_TEST(bigmem_maps_aligned_zeros_of_any_length)
{
	size_t lens[] = { 1, 4096, 3 * BIGMEM_ALIGN + 100 };

	for (unsigned int i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		unsigned char *p = bigmem_map(lens[i]);

		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq((uintptr_t)p % BIGMEM_ALIGN, 0);
		ck_assert_uint_eq(p[0], 0);
		ck_assert_uint_eq(p[lens[i] - 1], 0);
		memset(p, 1, lens[i]);
		bigmem_unmap(p, lens[i]);
	}
	ck_assert_ptr_null(bigmem_map(0));
	ck_assert_ptr_null(bigmem_map(SIZE_MAX));
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
	tcase_add_test(tc, trim_gives_back_only_pages_that_free_objects_cover);
	tcase_add_test(tc, a_huge_slab_carves_aligned_chunks_and_keeps_them);
	tcase_add_test(tc, bigmem_maps_aligned_zeros_of_any_length);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);	/* the cases share one slab, in order */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
