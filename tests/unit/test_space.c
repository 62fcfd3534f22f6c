/*
 * tests/unit/test_space.c: free space and allocation on raw devices,
 * computed from a pool's extents.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "label.h"
#include "space.h"

#define MiB (1ull << 20)

/* The pool as space.h sees it: devices and extents, in memory. */
static struct device_rec devs[8];
static size_t nr_devs;
static struct extent_rec ext[32];
static size_t nr_ext;

static void reset(void)
{
	nr_devs = nr_ext = 0;
}

static struct device_rec add_device(const char *name, uint64_t size)
{
	struct device_rec *d = &devs[nr_devs];

	*d = (struct device_rec){ .id = (int64_t)++nr_devs, .size = size };
	snprintf(d->name, sizeof(d->name), "%s", name);
	return *d;
}

/* A one-extent volume owning [offset, offset + length) of @d. */
static void add_extent(const struct device_rec *d, uint64_t offset,
		       uint64_t length)
{
	ext[nr_ext] = (struct extent_rec){ (int64_t)nr_ext + 1, 0, d->id, offset, length };
	nr_ext++;
}

/* space_allocate() over the devices named by index (all when @nr is 0). */
static int allocate(const struct device_rec *const *order, size_t nr, uint64_t length,
		    struct space_range **r, size_t *nr_r)
{
	const struct device_rec *all[8];

	if (!nr) {
		for (size_t i = 0; i < nr_devs; i++)
			all[i] = &devs[i];
		order = all;
		nr = nr_devs;
	}
	return space_allocate(ext, nr_ext, order, nr, length, r, nr_r);
}

static void assert_range(const struct space_range *r, const struct device_rec *d,
			 uint64_t offset, uint64_t length)
{
	ck_assert_int_eq(r->device, d->id);
	ck_assert_uint_eq(r->offset, offset);
	ck_assert_uint_eq(r->length, length);
}

/* Free ranges */

START_TEST(fresh_device_is_free_from_the_data_offset_to_its_end)
{
	struct device_rec d = add_device("d0", 64 * MiB);
	struct space_range *r;
	size_t nr;

	ck_assert_int_eq(space_free_ranges(ext, nr_ext, &d, &r, &nr), 0);
	ck_assert_uint_eq(nr, 1);
	assert_range(&r[0], &d, DEVICE_DATA_OFFSET, 64 * MiB - DEVICE_DATA_OFFSET);
	free(r);
	ck_assert_uint_eq(space_free_bytes(ext, nr_ext, &d, UINT64_MAX), 63 * MiB);
}
END_TEST

START_TEST(free_ranges_are_the_gaps_between_extents)
{
	struct device_rec d = add_device("d0", 64 * MiB);
	struct space_range *r;
	size_t nr;

	add_extent(&d, MiB, 3 * MiB);
	add_extent(&d, 10 * MiB, 2 * MiB);
	add_extent(&d, 12 * MiB, 52 * MiB);
	ck_assert_int_eq(space_free_ranges(ext, nr_ext, &d, &r, &nr), 0);
	ck_assert_uint_eq(nr, 1);
	assert_range(&r[0], &d, 4 * MiB, 6 * MiB);
	free(r);
	ck_assert_uint_eq(space_free_bytes(ext, nr_ext, &d, UINT64_MAX), 6 * MiB);
}
END_TEST

START_TEST(full_device_has_no_free_range)
{
	struct device_rec d = add_device("d0", 8 * MiB);
	struct space_range *r;
	size_t nr;

	add_extent(&d, MiB, 7 * MiB);
	ck_assert_int_eq(space_free_ranges(ext, nr_ext, &d, &r, &nr), 0);
	ck_assert_uint_eq(nr, 0);
	ck_assert_ptr_null(r);
}
END_TEST

/* Allocation */

START_TEST(allocation_takes_the_first_fit_at_aligned_offsets)
{
	struct device_rec d = add_device("d0", 64 * MiB);
	struct space_range *r;
	size_t nr;

	add_extent(&d, MiB, MiB + 4096);	/* free from 2 MiB + 4 KiB */
	ck_assert_int_eq(allocate(NULL, 0, 4 * MiB, &r, &nr), 0);
	ck_assert_uint_eq(nr, 1);
	assert_range(&r[0], &d, 3 * MiB, 4 * MiB);
	free(r);
}
END_TEST

START_TEST(allocation_fills_a_hole_before_going_further)
{
	struct device_rec d = add_device("d0", 64 * MiB);
	struct space_range *r;
	size_t nr;

	add_extent(&d, MiB, MiB);
	add_extent(&d, 4 * MiB, MiB);
	ck_assert_int_eq(allocate(NULL, 0, 3 * MiB, &r, &nr), 0);
	ck_assert_uint_eq(nr, 2);
	assert_range(&r[0], &d, 2 * MiB, 2 * MiB);
	assert_range(&r[1], &d, 5 * MiB, MiB);
	free(r);
}
END_TEST

START_TEST(allocation_spills_over_to_the_next_device)
{
	struct device_rec a = add_device("a", 4 * MiB);
	struct device_rec b = add_device("b", 64 * MiB);
	const struct device_rec *order[] = { &b, &a };
	struct space_range *r;
	size_t nr;

	add_extent(&b, MiB, 60 * MiB);	/* b has 3 MiB left */
	ck_assert_int_eq(allocate(order, 2, 5 * MiB, &r, &nr), 0);
	ck_assert_uint_eq(nr, 2);
	assert_range(&r[0], &b, 61 * MiB, 3 * MiB);
	assert_range(&r[1], &a, MiB, 2 * MiB);
	free(r);
}
END_TEST

START_TEST(allocation_uses_the_devices_in_the_order_given)
{
	struct device_rec a = add_device("a", 2 * MiB);
	struct device_rec b = add_device("b", 3 * MiB);
	struct space_range *r;
	size_t nr;

	ck_assert_int_eq(allocate(NULL, 0, 3 * MiB, &r, &nr), 0);
	ck_assert_uint_eq(nr, 2);
	assert_range(&r[0], &a, MiB, MiB);
	assert_range(&r[1], &b, MiB, 2 * MiB);
	free(r);
}
END_TEST

START_TEST(allocation_ends_pieces_on_4k_boundaries)
{
	struct device_rec a = add_device("a", 2 * MiB + 4096 + 512);
	struct device_rec b = add_device("b", 64 * MiB);
	struct space_range *r;
	size_t nr;

	ck_assert_int_eq(allocate(NULL, 0, 2 * MiB, &r, &nr), 0);
	ck_assert_uint_eq(nr, 2);
	assert_range(&r[0], &a, MiB, MiB + 4096);
	assert_range(&r[1], &b, MiB, MiB - 4096);
	free(r);
}
END_TEST

START_TEST(allocation_larger_than_free_space_fails_and_allocates_nothing)
{
	struct device_rec a = add_device("a", 4 * MiB);
	struct device_rec b = add_device("b", 4 * MiB);
	struct space_range *r = (void *)1;
	size_t nr = 7;

	ck_assert_int_eq(allocate(NULL, 0, 6 * MiB + 4096, &r, &nr), -ENOSPC);
	ck_assert_ptr_eq(r, (void *)1);
	ck_assert_uint_eq(nr, 7);
	ck_assert_uint_eq(space_free_bytes(ext, nr_ext, &a, UINT64_MAX), 3 * MiB);
	ck_assert_uint_eq(space_free_bytes(ext, nr_ext, &b, UINT64_MAX), 3 * MiB);
}
END_TEST

START_TEST(allocation_counts_a_device_named_twice_once)
{
	struct device_rec a = add_device("a", 4 * MiB);
	const struct device_rec *order[] = { &a, &a };
	struct space_range *r;
	size_t nr;

	ck_assert_int_eq(allocate(order, 2, 4 * MiB, &r, &nr), -ENOSPC);
}
END_TEST

/* Free space */

START_TEST(free_space_leaves_out_the_rest_of_a_partly_used_mib)
{
	struct device_rec d = add_device("d7", 32 * MiB);

	for (uint64_t i = 0; i < 6; i++)
		add_extent(&d, (1 + i) * MiB, 4096);
	/* six 4 KiB volumes take six whole MiB, as six 1 MiB extents would */
	ck_assert_uint_eq(space_free_bytes(ext, nr_ext, &d, UINT64_MAX), 25 * MiB);
}
END_TEST

START_TEST(free_space_counts_to_the_last_4k_boundary)
{
	struct device_rec d = add_device("d0", 8 * MiB + 4096 + 512);

	add_extent(&d, MiB, 4 * MiB + 8192);	/* ends inside a MiB */
	add_extent(&d, 7 * MiB, 4096);
	/* [5 MiB + 8 KiB, 7 MiB): from 6 MiB; [7 MiB + 4 KiB, end): 8 MiB to 8 MiB + 4 KiB */
	ck_assert_uint_eq(space_free_bytes(ext, nr_ext, &d, UINT64_MAX), MiB + 4096);
	/* the volume that ends at 5 MiB + 8 KiB grows into the rest of its MiB */
	ck_assert_uint_eq(space_free_bytes(ext, nr_ext, &d, 5 * MiB + 8192),
			  2 * MiB - 4096);
}
END_TEST

/* Allocating all the free space of @d works, and 4 KiB more does not. */
static void assert_free_space_allocates_to_the_byte(const struct device_rec *d)
{
	uint64_t free_bytes = space_free_bytes(ext, nr_ext, d, UINT64_MAX);
	const struct device_rec *order[] = { d };
	struct space_range *r;
	size_t nr;

	ck_assert_int_eq(allocate(order, 1, free_bytes + 4096, &r, &nr), -ENOSPC);
	if (!free_bytes)
		return;
	ck_assert_int_eq(allocate(order, 1, free_bytes, &r, &nr), 0);
	for (size_t i = 0; i < nr; i++)
		add_extent(d, r[i].offset, r[i].length);
	free(r);
	ck_assert_uint_eq(space_free_bytes(ext, nr_ext, d, UINT64_MAX), 0);
}

START_TEST(what_is_free_can_be_allocated_to_the_byte)
{
	struct device_rec d = add_device("d7", 32 * MiB);
	const struct device_rec *order[] = { &d };
	struct space_range *r;
	size_t nr;

	for (uint64_t i = 0; i < 6; i++)
		add_extent(&d, (1 + i) * MiB, 4096);
	ck_assert_int_eq(allocate(order, 1, 23 * MiB, &r, &nr), 0);
	add_extent(&d, r[0].offset, r[0].length);
	free(r);
	/* 31 MiB of data area: 6 MiB for the small ones, 23 from 7 MiB on */
	ck_assert_uint_eq(space_free_bytes(ext, nr_ext, &d, UINT64_MAX), 2 * MiB);
	assert_free_space_allocates_to_the_byte(&d);
}
END_TEST

START_TEST(free_space_allocates_to_the_byte_whatever_the_extents)
{
	unsigned int seed = 1;

	for (int round = 0; round < 200; round++) {
		struct device_rec d;
		uint64_t at = MiB;

		reset();
		d = add_device("d0", 16 * MiB + (uint64_t)(rand_r(&seed) % 256) * 512);
		while (nr_ext < 8) {	/* hand-placed extents, 4 KiB aligned */
			uint64_t gap = (uint64_t)(rand_r(&seed) % 512) * 4096;
			uint64_t len = (uint64_t)(rand_r(&seed) % 512 + 1) * 4096;

			if (at + gap + len > d.size)
				break;
			add_extent(&d, at + gap, len);
			at += gap + len;
		}
		assert_free_space_allocates_to_the_byte(&d);
	}
}
END_TEST

static Suite *space_suite(void)
{
	Suite *suite = suite_create("space");
	TCase *tc = tcase_create("space");

	tcase_add_checked_fixture(tc, reset, NULL);
	tcase_add_test(tc, fresh_device_is_free_from_the_data_offset_to_its_end);
	tcase_add_test(tc, free_ranges_are_the_gaps_between_extents);
	tcase_add_test(tc, full_device_has_no_free_range);
	tcase_add_test(tc, allocation_takes_the_first_fit_at_aligned_offsets);
	tcase_add_test(tc, allocation_fills_a_hole_before_going_further);
	tcase_add_test(tc, allocation_spills_over_to_the_next_device);
	tcase_add_test(tc, allocation_uses_the_devices_in_the_order_given);
	tcase_add_test(tc, allocation_ends_pieces_on_4k_boundaries);
	tcase_add_test(tc, allocation_larger_than_free_space_fails_and_allocates_nothing);
	tcase_add_test(tc, allocation_counts_a_device_named_twice_once);
	tcase_add_test(tc, free_space_leaves_out_the_rest_of_a_partly_used_mib);
	tcase_add_test(tc, free_space_counts_to_the_last_4k_boundary);
	tcase_add_test(tc, what_is_free_can_be_allocated_to_the_byte);
	tcase_add_test(tc, free_space_allocates_to_the_byte_whatever_the_extents);
	suite_add_tcase(suite, tc);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(space_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
