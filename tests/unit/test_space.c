/*
 * tests/unit/test_space.c: free space and allocation on raw devices,
 * computed from the extents of a real pool database.
 */
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "label.h"
#include "space.h"

#define MiB (1ull << 20)

/*
 * Each test case gets a root directory, made and removed by the parent
 * (so it goes even when a test dies), and each test a pool in it.
 */
static char root[] = "/tmp/test_space.XXXXXX";
static struct store *s;
static int64_t next_volume;

static int remove_entry(const char *path, const struct stat *sb, int type,
			struct FTW *ftw)
{
	(void)sb, (void)type, (void)ftw;
	return remove(path);
}

static void make_root(void)
{
	strcpy(root, "/tmp/test_space.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
}

static void remove_root(void)
{
	nftw(root, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void make_pool(void)
{
	char dir[64], path[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s/XXXXXX", root);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/pool.db", dir);
	ck_assert_int_eq(store_open(path, STORE_CREATE, &s), 0);
	next_volume = 0;
}

static void close_pool(void)
{
	store_close(s);
}

static struct device_rec add_device(const char *name, uint64_t size)
{
	struct device_rec d = { .size = size };

	snprintf(d.name, sizeof(d.name), "%s", name);
	snprintf(d.path, sizeof(d.path), "/dev/%s", name);
	ck_assert_int_eq(uuid_generate(&d.uuid), 0);
	ck_assert_int_eq(store_device_insert(s, &d), 0);
	return d;
}

/* A one-extent volume owning [offset, offset + length) of @d. */
static void add_extent(const struct device_rec *d, uint64_t offset,
		       uint64_t length)
{
	struct volume_rec v = { .size = length };
	struct extent_rec e;

	snprintf(v.name, sizeof(v.name), "v%lld", (long long)next_volume++);
	strcpy(v.kind, "linear");
	ck_assert_int_eq(store_volume_insert(s, &v), 0);
	e = (struct extent_rec){ v.id, 0, d->id, offset, length };
	ck_assert_int_eq(store_extent_insert(s, &e), 0);
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
	uint64_t bytes;

	ck_assert_int_eq(space_free_ranges(s, &d, &r, &nr), 0);
	ck_assert_uint_eq(nr, 1);
	assert_range(&r[0], &d, DEVICE_DATA_OFFSET, 64 * MiB - DEVICE_DATA_OFFSET);
	free(r);
	ck_assert_int_eq(space_free_bytes(s, &d, &bytes), 0);
	ck_assert_uint_eq(bytes, 63 * MiB);
}
END_TEST

START_TEST(free_ranges_are_the_gaps_between_extents)
{
	struct device_rec d = add_device("d0", 64 * MiB);
	struct space_range *r;
	size_t nr;
	uint64_t bytes;

	add_extent(&d, MiB, 3 * MiB);
	add_extent(&d, 10 * MiB, 2 * MiB);
	add_extent(&d, 12 * MiB, 52 * MiB);
	ck_assert_int_eq(space_free_ranges(s, &d, &r, &nr), 0);
	ck_assert_uint_eq(nr, 1);
	assert_range(&r[0], &d, 4 * MiB, 6 * MiB);
	free(r);
	ck_assert_int_eq(space_free_bytes(s, &d, &bytes), 0);
	ck_assert_uint_eq(bytes, 6 * MiB);
}
END_TEST

START_TEST(full_device_has_no_free_range)
{
	struct device_rec d = add_device("d0", 8 * MiB);
	struct space_range *r;
	size_t nr;

	add_extent(&d, MiB, 7 * MiB);
	ck_assert_int_eq(space_free_ranges(s, &d, &r, &nr), 0);
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
	ck_assert_int_eq(space_allocate(s, &d.id, 1, 4 * MiB, &r, &nr), 0);
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
	ck_assert_int_eq(space_allocate(s, &d.id, 1, 3 * MiB, &r, &nr), 0);
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
	int64_t ids[] = { b.id, a.id };
	struct space_range *r;
	size_t nr;

	add_extent(&b, MiB, 60 * MiB);	/* b has 3 MiB left */
	ck_assert_int_eq(space_allocate(s, ids, 2, 5 * MiB, &r, &nr), 0);
	ck_assert_uint_eq(nr, 2);
	assert_range(&r[0], &b, 61 * MiB, 3 * MiB);
	assert_range(&r[1], &a, MiB, 2 * MiB);
	free(r);
}
END_TEST

START_TEST(allocation_uses_every_device_by_id_when_none_is_named)
{
	struct device_rec a = add_device("a", 2 * MiB);
	struct device_rec b = add_device("b", 3 * MiB);
	struct space_range *r;
	size_t nr;

	ck_assert_int_eq(space_allocate(s, NULL, 0, 3 * MiB, &r, &nr), 0);
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

	ck_assert_int_eq(space_allocate(s, NULL, 0, 2 * MiB, &r, &nr), 0);
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
	uint64_t bytes;

	ck_assert_int_eq(space_allocate(s, NULL, 0, 6 * MiB + 4096, &r, &nr),
			 -ENOSPC);
	ck_assert_ptr_eq(r, (void *)1);
	ck_assert_uint_eq(nr, 7);
	ck_assert_int_eq(space_free_bytes(s, &a, &bytes), 0);
	ck_assert_uint_eq(bytes, 3 * MiB);
	ck_assert_int_eq(space_free_bytes(s, &b, &bytes), 0);
	ck_assert_uint_eq(bytes, 3 * MiB);
}
END_TEST

START_TEST(allocation_counts_a_device_named_twice_once)
{
	struct device_rec a = add_device("a", 4 * MiB);
	int64_t ids[] = { a.id, a.id };
	struct space_range *r;
	size_t nr;

	ck_assert_int_eq(space_allocate(s, ids, 2, 4 * MiB, &r, &nr), -ENOSPC);
}
END_TEST

START_TEST(allocation_from_an_unknown_device_fails_with_enoent)
{
	int64_t id = 99;
	struct space_range *r;
	size_t nr;

	ck_assert_int_eq(space_allocate(s, &id, 1, MiB, &r, &nr), -ENOENT);
}
END_TEST

/* Explicit ranges */

START_TEST(explicit_free_range_is_accepted)
{
	struct device_rec d = add_device("d0", 64 * MiB);

	add_extent(&d, 4 * MiB, MiB);
	ck_assert_int_eq(space_check_free(s, &d, MiB, 3 * MiB), 0);
	ck_assert_int_eq(space_check_free(s, &d, 5 * MiB, 59 * MiB), 0);
}
END_TEST

START_TEST(explicit_range_overlapping_an_extent_is_refused)
{
	struct device_rec d = add_device("d0", 64 * MiB);

	add_extent(&d, 4 * MiB, MiB);
	ck_assert_int_eq(space_check_free(s, &d, 3 * MiB, MiB + 4096), -EEXIST);
	ck_assert_int_eq(space_check_free(s, &d, 5 * MiB - 4096, MiB), -EEXIST);
	ck_assert_int_eq(space_check_free(s, &d, 2 * MiB, 8 * MiB), -EEXIST);
}
END_TEST

START_TEST(explicit_range_outside_the_data_area_is_refused)
{
	struct device_rec d = add_device("d0", 64 * MiB);

	ck_assert_int_eq(space_check_free(s, &d, 0, MiB), -ERANGE);
	ck_assert_int_eq(space_check_free(s, &d, MiB - 4096, MiB), -ERANGE);
	ck_assert_int_eq(space_check_free(s, &d, 63 * MiB, MiB + 4096), -ERANGE);
	ck_assert_int_eq(space_check_free(s, &d, 65 * MiB, MiB), -ERANGE);
	ck_assert_int_eq(space_check_free(s, &d, MiB, UINT64_MAX), -ERANGE);
}
END_TEST

static Suite *space_suite(void)
{
	Suite *suite = suite_create("space");
	TCase *tc = tcase_create("space");

	tcase_add_unchecked_fixture(tc, make_root, remove_root);
	tcase_add_checked_fixture(tc, make_pool, close_pool);
	tcase_add_test(tc, fresh_device_is_free_from_the_data_offset_to_its_end);
	tcase_add_test(tc, free_ranges_are_the_gaps_between_extents);
	tcase_add_test(tc, full_device_has_no_free_range);
	tcase_add_test(tc, allocation_takes_the_first_fit_at_aligned_offsets);
	tcase_add_test(tc, allocation_fills_a_hole_before_going_further);
	tcase_add_test(tc, allocation_spills_over_to_the_next_device);
	tcase_add_test(tc, allocation_uses_every_device_by_id_when_none_is_named);
	tcase_add_test(tc, allocation_ends_pieces_on_4k_boundaries);
	tcase_add_test(tc, allocation_larger_than_free_space_fails_and_allocates_nothing);
	tcase_add_test(tc, allocation_counts_a_device_named_twice_once);
	tcase_add_test(tc, allocation_from_an_unknown_device_fails_with_enoent);
	tcase_add_test(tc, explicit_free_range_is_accepted);
	tcase_add_test(tc, explicit_range_overlapping_an_extent_is_refused);
	tcase_add_test(tc, explicit_range_outside_the_data_area_is_refused);
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
