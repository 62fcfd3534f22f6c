/*
 * A sparse bitmap sets and clears the bits asked, says which changed, and
 * holds memory only for pages with a bit set: a page emptied stays until
 * the trim, which gives it back (it reads zeros, and takes bits again),
 * while a page with a bit left, or set again before the trim, stays.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sparse_bits.h"

#define NR_BITS	(1ull << 24)	/* 512 pages of 4 KiB */

static struct sparse_bits s;

static void setup(void)
{
	ck_assert_int_eq(sparse_bits_init(&s, NR_BITS), 0);
}

static void teardown(void)
{
	sparse_bits_exit(&s);
}

/* Is the page holding word @word resident? */
static bool resident(uint64_t word)
{
	unsigned char vec = 0;

	ck_assert_int_eq(mincore((void *)(s.words + (word >> s.page_shift << s.page_shift)),
				 1, &vec), 0);
	return vec & 1;
}

START_TEST(set_and_clear_say_which_bits_changed)
{
	ck_assert_uint_eq(sparse_bits_set(&s, 5, 0x3), 0x3);
	ck_assert_uint_eq(sparse_bits_set(&s, 5, 0x6), 0x4);
	ck_assert(sparse_bits_test(&s, 5 * 64 + 2));
	ck_assert(!sparse_bits_test(&s, 5 * 64 + 3));
	ck_assert_uint_eq(sparse_bits_word(&s, 5), 0x7);
	ck_assert_uint_eq(sparse_bits_clear(&s, 5, 0x9), 0x1);
	ck_assert_uint_eq(sparse_bits_clear(&s, 5, 0x9), 0);
	ck_assert_uint_eq(sparse_bits_word(&s, 5), 0x6);
	ck_assert_uint_eq(s.page_bits[0], 2);
}
END_TEST

START_TEST(trim_gives_back_only_pages_left_empty)
{
	uint64_t pw = 1ull << s.page_shift, last = s.nr_words - 1;

	/* Pages 0, 1, 2, 7 and the last take a bit; page 1 keeps a second. */
	sparse_bits_set(&s, 0, 1);
	sparse_bits_set(&s, pw + 3, 1);
	sparse_bits_set(&s, pw + 4, 1);
	sparse_bits_set(&s, 2 * pw, 1ull << 63);
	sparse_bits_set(&s, 7 * pw, 1);
	sparse_bits_set(&s, last, 1);
	ck_assert(resident(0) && resident(pw) && resident(2 * pw) && resident(7 * pw));
	ck_assert(!resident(3 * pw));	/* never touched */
	ck_assert_uint_eq(sparse_bits_word(&s, 3 * pw + 1), 0);
	ck_assert(!sparse_bits_test(&s, (3 * pw + 1) * 64));
	ck_assert_uint_eq(sparse_bits_clear(&s, 3 * pw + 2, ~0ull), 0);
	ck_assert(!resident(3 * pw));	/* nor read: its count says it is empty */

	sparse_bits_clear(&s, 0, 1);
	sparse_bits_clear(&s, pw + 3, 1);
	sparse_bits_clear(&s, 2 * pw, ~0ull);
	sparse_bits_clear(&s, 7 * pw, 1);
	sparse_bits_clear(&s, last, 1);
	sparse_bits_set(&s, 7 * pw + 1, 2);	/* emptied, then set again */
	ck_assert(resident(0));			/* until the trim */
	sparse_bits_trim(&s);
	ck_assert(!resident(0));
	ck_assert(resident(pw));		/* a bit left */
	ck_assert(!resident(2 * pw));
	ck_assert(resident(7 * pw));
	ck_assert(!resident(last));
	ck_assert_uint_eq(sparse_bits_word(&s, 0), 0);
	ck_assert_uint_eq(sparse_bits_word(&s, pw + 4), 1);
	ck_assert_uint_eq(sparse_bits_word(&s, 7 * pw + 1), 2);

	/* A page given back takes bits again, and is counted afresh. */
	ck_assert_uint_eq(sparse_bits_set(&s, 2 * pw + 9, 0xff), 0xff);
	ck_assert_uint_eq(s.page_bits[2], 8);
	sparse_bits_trim(&s);	/* nothing emptied since: nothing goes */
	ck_assert(resident(2 * pw) && resident(pw) && resident(7 * pw));
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("sparse_bits");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, set_and_clear_say_which_bits_changed);
	tcase_add_test(tc, trim_gives_back_only_pages_left_empty);
	suite_add_tcase(suite, tc);
	sr = srunner_create(suite);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
