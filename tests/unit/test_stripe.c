/*
 * The striped target's arithmetic: which device and offset each byte of
 * a request lands on, and where a request is cut (chunk edges and piece
 * edges, nowhere else).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "device.h"
#include "rcu.h"
#include "stripe.h"

#define KiB 1024u
#define MiB (1024u * 1024u)

static struct device dev_a = { .id = 1, .path = "a" };
static struct device dev_b = { .id = 2, .path = "b" };
static struct device dev_c = { .id = 3, .path = "c" };
static struct device dev_d = { .id = 4, .path = "d" };

/* Two stripes of 4 MiB: a[1M, 5M) and b[2M, 6M). */
static const struct stripe_piece two[] = {
	{ 0, &dev_a, MiB, 4 * MiB },
	{ 1, &dev_b, 2 * MiB, 4 * MiB },
};

static struct target *make(unsigned int nr_stripes, uint32_t chunk,
			   const struct stripe_piece *v, unsigned int nr)
{
	struct stripe_table *tb;
	struct target *t;

	ck_assert_int_eq(stripe_table_new(nr_stripes, chunk, v, nr, &tb), 0);
	ck_assert_int_eq(stripe_create(tb, &t), 0);
	return t;
}

static int map(struct target *t, uint64_t off, uint32_t len, struct segs *out)
{
	int r;

	rcu_read_begin();
	r = t->ops->map(t, IO_READ, off, len, out);
	rcu_read_end();
	return r;
}

static void assert_seg(const struct segs *s, unsigned int i, struct device *dev,
		       uint64_t dev_off, uint32_t len, uint32_t buf_off)
{
	ck_assert_uint_lt(i, s->nr);
	ck_assert_ptr_eq(s->v[i].dev, dev);
	ck_assert_uint_eq(s->v[i].dev_off, dev_off);
	ck_assert_uint_eq(s->v[i].len, len);
	ck_assert_uint_eq(s->v[i].buf_off, buf_off);
}

static void setup(void)
{
	urcu_memb_register_thread();
}

static void teardown(void)
{
	urcu_memb_unregister_thread();
}

START_TEST(request_inside_one_chunk_is_one_segment)
{
	struct target *t = make(2, 64 * KiB, two, 2);
	struct segs s;

	segs_init(&s);
	/* chunk 3 is chunk 1 of stripe 1 */
	ck_assert_int_eq(map(t, 3 * 64 * KiB + 4 * KiB, 60 * KiB, &s), MAP_REMAPPED);
	ck_assert_uint_eq(s.nr, 1);
	assert_seg(&s, 0, &dev_b, 2 * MiB + 64 * KiB + 4 * KiB, 60 * KiB, 0);
	segs_release(&s);
	t->ops->destroy(t);
}
END_TEST

START_TEST(whole_chunk_is_one_segment_and_ends_at_its_edge)
{
	struct target *t = make(2, 64 * KiB, two, 2);
	struct segs s;

	segs_init(&s);
	ck_assert_int_eq(map(t, 4 * 64 * KiB, 64 * KiB, &s), MAP_REMAPPED);
	ck_assert_uint_eq(s.nr, 1);
	assert_seg(&s, 0, &dev_a, MiB + 2 * 64 * KiB, 64 * KiB, 0);
	segs_release(&s);
	t->ops->destroy(t);
}
END_TEST

START_TEST(request_across_two_chunks_is_cut_at_the_edge_only)
{
	struct target *t = make(2, 64 * KiB, two, 2);
	struct segs s;

	segs_init(&s);
	ck_assert_int_eq(map(t, 60 * KiB, 8 * KiB, &s), MAP_REMAPPED);
	ck_assert_uint_eq(s.nr, 2);
	assert_seg(&s, 0, &dev_a, MiB + 60 * KiB, 4 * KiB, 0);
	assert_seg(&s, 1, &dev_b, 2 * MiB, 4 * KiB, 4 * KiB);
	segs_release(&s);
	t->ops->destroy(t);
}
END_TEST

START_TEST(request_spanning_many_chunks_alternates_and_never_joins_a_stripe)
{
	struct target *t = make(2, 64 * KiB, two, 2);
	struct segs s;

	segs_init(&s);
	/* 1 MiB from 32 KiB: a half chunk, 15 whole ones, a half chunk */
	ck_assert_int_eq(map(t, 32 * KiB, MiB, &s), MAP_REMAPPED);
	ck_assert_uint_eq(s.nr, 17);
	assert_seg(&s, 0, &dev_a, MiB + 32 * KiB, 32 * KiB, 0);
	for (unsigned int c = 1; c <= 15; c++)
		assert_seg(&s, c, c % 2 ? &dev_b : &dev_a,
			   (c % 2 ? 2 * MiB : MiB) + c / 2 * 64 * KiB, 64 * KiB,
			   32 * KiB + (c - 1) * 64 * KiB);
	assert_seg(&s, 16, &dev_a, MiB + 8 * 64 * KiB, 32 * KiB, 32 * KiB + 15 * 64 * KiB);
	ck_assert_uint_eq(segs_len(&s), MiB);
	segs_release(&s);
	t->ops->destroy(t);
}
END_TEST

START_TEST(odd_sized_request_off_every_boundary_is_cut_at_chunk_edges)
{
	struct target *t = make(2, 4 * KiB, two, 2);
	struct segs s;

	segs_init(&s);
	/* 9000 bytes from 3000: chunks 0 (1096 B), 1, 2 (4 KiB each), 2 ... */
	ck_assert_int_eq(map(t, 3000, 9000, &s), MAP_REMAPPED);
	ck_assert_uint_eq(s.nr, 3);
	assert_seg(&s, 0, &dev_a, MiB + 3000, 4096 - 3000, 0);
	assert_seg(&s, 1, &dev_b, 2 * MiB, 4096, 1096);
	assert_seg(&s, 2, &dev_a, MiB + 4096, 9000 - 1096 - 4096, 1096 + 4096);
	segs_release(&s);
	t->ops->destroy(t);
}
END_TEST

/*
 * Stripe 0 is a[0, 96K) then c[0, ...): its chunk 1 (volume chunk 2)
 * straddles the two pieces, which sizes that are no multiple of the chunk
 * make happen.
 */
START_TEST(chunk_across_two_pieces_of_its_stripe_is_cut_there)
{
	static const struct stripe_piece v[] = {
		{ 0, &dev_a, 0, 96 * KiB },
		{ 1, &dev_b, 0, 256 * KiB },
		{ 0, &dev_c, 8 * MiB, 160 * KiB },
	};
	struct target *t = make(2, 64 * KiB, v, 3);
	struct segs s;

	segs_init(&s);
	ck_assert_int_eq(map(t, 2 * 64 * KiB, 64 * KiB, &s), MAP_REMAPPED);
	ck_assert_uint_eq(s.nr, 2);
	assert_seg(&s, 0, &dev_a, 64 * KiB, 32 * KiB, 0);
	assert_seg(&s, 1, &dev_c, 8 * MiB, 32 * KiB, 32 * KiB);
	segs_reset(&s);
	/* stripe 0's chunk 2 (volume chunk 4) lies wholly on c */
	ck_assert_int_eq(map(t, 4 * 64 * KiB, 64 * KiB, &s), MAP_REMAPPED);
	ck_assert_uint_eq(s.nr, 1);
	assert_seg(&s, 0, &dev_c, 8 * MiB + 32 * KiB, 64 * KiB, 0);
	segs_release(&s);
	t->ops->destroy(t);
}
END_TEST

/* Every byte of a 4-stripe volume, by the formula, against map(). */
START_TEST(every_chunk_of_four_stripes_lands_where_the_formula_says)
{
	static const struct stripe_piece v[] = {
		{ 0, &dev_a, MiB, MiB },
		{ 1, &dev_b, MiB, MiB },
		{ 2, &dev_c, MiB, MiB },
		{ 3, &dev_d, MiB, MiB },
	};
	struct device *devs[] = { &dev_a, &dev_b, &dev_c, &dev_d };
	const uint32_t chunk = 16 * KiB;
	struct target *t = make(4, chunk, v, 4);
	struct segs s;

	segs_init(&s);
	for (uint64_t off = 0; off < 4 * MiB; off += 12 * KiB) {
		uint64_t c = off / chunk;

		segs_reset(&s);
		ck_assert_int_eq(map(t, off, 4 * KiB, &s), MAP_REMAPPED);
		ck_assert_uint_eq(s.nr, 1);
		assert_seg(&s, 0, devs[c % 4], MiB + c / 4 * chunk + off % chunk, 4 * KiB, 0);
	}
	segs_release(&s);
	t->ops->destroy(t);
}
END_TEST

START_TEST(past_the_stripes_is_an_error_not_a_wrong_place)
{
	struct target *t = make(2, 64 * KiB, two, 2);
	struct segs s;

	segs_init(&s);
	ck_assert_int_eq(map(t, 8 * MiB - 4 * KiB, 8 * KiB, &s), -EIO);
	segs_release(&s);
	t->ops->destroy(t);
}
END_TEST

START_TEST(bad_tables_are_refused)
{
	static const struct stripe_piece one_stripe_empty[] = {
		{ 0, &dev_a, 0, MiB },
		{ 0, &dev_a, MiB, MiB },
	};
	static const struct stripe_piece out_of_range[] = {
		{ 0, &dev_a, 0, MiB },
		{ 2, &dev_b, 0, MiB },
	};
	struct stripe_table *tb;

	ck_assert_int_eq(stripe_table_new(1, 64 * KiB, two, 2, &tb), -EINVAL);
	ck_assert_int_eq(stripe_table_new(2, 48 * KiB, two, 2, &tb), -EINVAL);
	ck_assert_int_eq(stripe_table_new(2, 2 * KiB, two, 2, &tb), -EINVAL);
	ck_assert_int_eq(stripe_table_new(2, 64 * KiB, one_stripe_empty, 2, &tb), -EINVAL);
	ck_assert_int_eq(stripe_table_new(2, 64 * KiB, out_of_range, 2, &tb), -EINVAL);
}
END_TEST

START_TEST(published_table_serves_the_grown_stripes)
{
	static const struct stripe_piece grown[] = {
		{ 0, &dev_a, MiB, 4 * MiB },
		{ 1, &dev_b, 2 * MiB, 4 * MiB },
		{ 0, &dev_c, 0, MiB },
		{ 1, &dev_d, 0, MiB },
	};
	struct target *t = make(2, 64 * KiB, two, 2);
	struct stripe_table *tb;
	struct segs s;

	segs_init(&s);
	ck_assert_int_eq(stripe_table_new(2, 64 * KiB, grown, 4, &tb), 0);
	stripe_publish(t, tb);
	/* chunk 128 is chunk 64 of stripe 0: the first of its second piece */
	ck_assert_int_eq(map(t, 128 * 64 * KiB, 128 * KiB, &s), MAP_REMAPPED);
	ck_assert_uint_eq(s.nr, 2);
	assert_seg(&s, 0, &dev_c, 0, 64 * KiB, 0);
	assert_seg(&s, 1, &dev_d, 0, 64 * KiB, 64 * KiB);
	segs_release(&s);
	t->ops->destroy(t);
}
END_TEST

static Suite *stripe_suite(void)
{
	Suite *s = suite_create("stripe");
	TCase *tc = tcase_create("map");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, request_inside_one_chunk_is_one_segment);
	tcase_add_test(tc, whole_chunk_is_one_segment_and_ends_at_its_edge);
	tcase_add_test(tc, request_across_two_chunks_is_cut_at_the_edge_only);
	tcase_add_test(tc, request_spanning_many_chunks_alternates_and_never_joins_a_stripe);
	tcase_add_test(tc, odd_sized_request_off_every_boundary_is_cut_at_chunk_edges);
	tcase_add_test(tc, chunk_across_two_pieces_of_its_stripe_is_cut_there);
	tcase_add_test(tc, every_chunk_of_four_stripes_lands_where_the_formula_says);
	tcase_add_test(tc, past_the_stripes_is_an_error_not_a_wrong_place);
	tcase_add_test(tc, bad_tables_are_refused);
	tcase_add_test(tc, published_table_serves_the_grown_stripes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(stripe_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
