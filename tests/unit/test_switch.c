/*
 * The switch target's map(): requests split at region boundaries, each
 * piece on its region's path at the path's offset plus the volume offset,
 * neighbours on one path merged; region sizes that are not powers of two;
 * per-path counters; and a table of another shape swapped in.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "device.h"
#include "rcu.h"
#include "switch.h"
#include "switch_msg.h"
#include "switch_table.h"

#define KiB 1024u
#define MiB (1024u * 1024u)

static struct device dev_a = { .id = 1, .path = "a" };
static struct device dev_b = { .id = 2, .path = "b" };

/* Path 0: a at 0, path 1: b at 10 MiB, path 2: a at 100 MiB. */
static const struct switch_path paths[] = {
	{ &dev_a, 0 },
	{ &dev_b, 10 * MiB },
	{ &dev_a, 100 * MiB },
};

/* A volume of @size over the three paths, table 012012... */
static struct target *make(uint64_t size, uint64_t region_size)
{
	struct switch_table *tb;
	struct target *t;

	ck_assert_int_eq(switch_table_create(switch_nr_regions(size, region_size), 3,
					     &tb), 0);
	switch_table_round_robin(tb);
	ck_assert_int_eq(switch_create(paths, 3, region_size, tb, &t), 0);
	return t;
}

static int map(struct target *t, enum io_dir dir, uint64_t off, uint32_t len,
	       struct segs *out)
{
	int r;

	rcu_read_begin();
	r = t->ops->map(t, dir, off, len, out);
	rcu_read_end();
	return r;
}

static void assert_seg(const struct seg *s, struct device *dev, uint64_t dev_off,
		       uint32_t len, uint32_t buf_off)
{
	ck_assert_ptr_eq(s->dev, dev);
	ck_assert_uint_eq(s->dev_off, dev_off);
	ck_assert_uint_eq(s->len, len);
	ck_assert_uint_eq(s->buf_off, buf_off);
}

static void setup(void)
{
	urcu_memb_register_thread();
}

static void teardown(void)
{
	urcu_memb_unregister_thread();
}

START_TEST(request_inside_one_region_goes_to_its_path)
{
	struct target *t = make(12 * MiB, MiB);
	struct segs s;

	segs_init(&s);
	ck_assert_int_eq(map(t, IO_READ, MiB + 4 * KiB, 8 * KiB, &s), MAP_REMAPPED);
	ck_assert_uint_eq(s.nr, 1);
	assert_seg(&s.v[0], &dev_b, 10 * MiB + MiB + 4 * KiB, 8 * KiB, 0);
	segs_release(&s);
	t->ops->destroy(t);
}
END_TEST

START_TEST(request_across_regions_is_split_at_each_boundary)
{
	struct target *t = make(12 * MiB, MiB);
	struct segs s;

	segs_init(&s);
	/* [0.5M, 3.5M): path 0, 1, 2, then path 0 again */
	ck_assert_int_eq(map(t, IO_WRITE, MiB / 2, 3 * MiB, &s), MAP_REMAPPED);
	ck_assert_uint_eq(s.nr, 4);
	assert_seg(&s.v[0], &dev_a, MiB / 2, MiB / 2, 0);
	assert_seg(&s.v[1], &dev_b, 10 * MiB + MiB, MiB, MiB / 2);
	assert_seg(&s.v[2], &dev_a, 100 * MiB + 2 * MiB, MiB, 3 * MiB / 2);
	assert_seg(&s.v[3], &dev_a, 3 * MiB, MiB / 2, 5 * MiB / 2);
	ck_assert_uint_eq(segs_len(&s), 3 * MiB);
	segs_release(&s);
	t->ops->destroy(t);
}
END_TEST

START_TEST(neighbouring_regions_on_one_path_merge_into_one_segment)
{
	struct target *t = make(12 * MiB, MiB);
	struct switch_table *tb;
	char *msg[] = { "0:1", "R1,b" }, why[128];
	struct segs s;

	ck_assert_int_eq(switch_table_create(12, 3, &tb), 0);
	ck_assert_int_eq(switch_msg_apply(tb, 2, msg, why, sizeof(why)), 0);
	ck_assert_int_eq(switch_set_table(t, tb), 0);
	segs_init(&s);
	ck_assert_int_eq(map(t, IO_READ, 0, 4 * MiB, &s), MAP_REMAPPED);
	ck_assert_uint_eq(s.nr, 1);
	assert_seg(&s.v[0], &dev_b, 10 * MiB, 4 * MiB, 0);
	segs_release(&s);
	switch_table_destroy(tb);
	t->ops->destroy(t);
}
END_TEST

START_TEST(region_size_that_is_not_a_power_of_two_divides)
{
	struct target *t = make(120 * KiB, 12 * KiB);
	struct segs s;

	segs_init(&s);
	/* [20K, 40K): region 1 (12K..24K) path 1, 2 (..36K) path 2, 3 path 0 */
	ck_assert_int_eq(map(t, IO_READ, 20 * KiB, 20 * KiB, &s), MAP_REMAPPED);
	ck_assert_uint_eq(s.nr, 3);
	assert_seg(&s.v[0], &dev_b, 10 * MiB + 20 * KiB, 4 * KiB, 0);
	assert_seg(&s.v[1], &dev_a, 100 * MiB + 24 * KiB, 12 * KiB, 4 * KiB);
	assert_seg(&s.v[2], &dev_a, 36 * KiB, 4 * KiB, 16 * KiB);
	segs_release(&s);
	t->ops->destroy(t);
}
END_TEST

START_TEST(last_region_may_be_short)
{
	struct target *t = make(10 * MiB + 4 * KiB, MiB);
	struct segs s;

	segs_init(&s);
	/* region 10 holds 4 KiB, on path 10 % 3 = 1 */
	ck_assert_int_eq(map(t, IO_READ, 10 * MiB, 4 * KiB, &s), MAP_REMAPPED);
	assert_seg(&s.v[0], &dev_b, 10 * MiB + 10 * MiB, 4 * KiB, 0);
	segs_release(&s);
	t->ops->destroy(t);
}
END_TEST

START_TEST(counters_count_requests_and_bytes_per_path)
{
	struct target *t = make(12 * MiB, MiB);
	const struct switch_path_stats *p0 = switch_path_stats(t, 0);
	const struct switch_path_stats *p1 = switch_path_stats(t, 1);
	struct segs s;

	segs_init(&s);
	ck_assert_int_eq(map(t, IO_READ, MiB / 2, MiB, &s), MAP_REMAPPED);
	segs_reset(&s);
	ck_assert_int_eq(map(t, IO_WRITE, 0, 4 * KiB, &s), MAP_REMAPPED);
	ck_assert_uint_eq(atomic_load(&p0->reads), 1);
	ck_assert_uint_eq(atomic_load(&p0->read_bytes), MiB / 2);
	ck_assert_uint_eq(atomic_load(&p1->reads), 1);
	ck_assert_uint_eq(atomic_load(&p1->read_bytes), MiB / 2);
	ck_assert_uint_eq(atomic_load(&p0->writes), 1);
	ck_assert_uint_eq(atomic_load(&p0->write_bytes), 4 * KiB);
	ck_assert_uint_eq(atomic_load(&p1->writes), 0);
	segs_release(&s);
	t->ops->destroy(t);
}
END_TEST

START_TEST(table_of_another_shape_is_swapped_in_whole)
{
	struct target *t = make(3 * MiB, MiB);
	struct switch_table *bigger, *other_paths;
	struct segs s;

	ck_assert_int_eq(switch_table_create(6, 3, &bigger), 0);
	switch_table_set(bigger, 5, 2);
	ck_assert_int_eq(switch_set_table(t, bigger), 0);
	segs_init(&s);
	ck_assert_int_eq(map(t, IO_READ, 5 * MiB, 4 * KiB, &s), MAP_REMAPPED);
	assert_seg(&s.v[0], &dev_a, 100 * MiB + 5 * MiB, 4 * KiB, 0);
	segs_release(&s);
	ck_assert_int_eq(switch_table_create(6, 4, &other_paths), 0);
	ck_assert_int_eq(switch_set_table(t, other_paths), -EINVAL);
	switch_table_destroy(other_paths);
	switch_table_destroy(bigger);
	t->ops->destroy(t);
}
END_TEST

START_TEST(create_refuses_a_table_for_another_path_count)
{
	struct switch_table *tb;
	struct target *t;

	ck_assert_int_eq(switch_table_create(4, 2, &tb), 0);
	ck_assert_int_eq(switch_create(paths, 3, MiB, tb, &t), -EINVAL);
}
END_TEST

static Suite *switch_suite(void)
{
	Suite *s = suite_create("switch");
	TCase *tc = tcase_create("map");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, request_inside_one_region_goes_to_its_path);
	tcase_add_test(tc, request_across_regions_is_split_at_each_boundary);
	tcase_add_test(tc, neighbouring_regions_on_one_path_merge_into_one_segment);
	tcase_add_test(tc, region_size_that_is_not_a_power_of_two_divides);
	tcase_add_test(tc, last_region_may_be_short);
	tcase_add_test(tc, counters_count_requests_and_bytes_per_path);
	tcase_add_test(tc, table_of_another_shape_is_swapped_in_whole);
	tcase_add_test(tc, create_refuses_a_table_for_another_path_count);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(switch_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
