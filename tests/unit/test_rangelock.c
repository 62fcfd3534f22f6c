/*
 * The range lock lets sharers run together, holds a range alone against
 * every overlapping sharer and read-modify-write, and waits for nameless
 * sharers before it holds anything alone.  "Blocks" is checked as a
 * thread that has not finished 100 ms later and finishes once let go.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "rangelock.h"

struct job {
	struct rangelock *l;
	uint64_t off, len;
	bool alone;
	pthread_t thread;
};

static void *take_and_release(void *arg)
{
	struct job *j = arg;
	struct rangelock_range r;

	if (j->alone)
		rangelock_lock(j->l, &r, j->off, j->len);
	else
		rangelock_share(j->l, &r, j->off, j->len);
	rangelock_unlock(j->l, &r);
	return NULL;
}

static void start(struct job *j, struct rangelock *l, uint64_t off, uint64_t len, bool alone)
{
	*j = (struct job){ .l = l, .off = off, .len = len, .alone = alone };
	ck_assert_int_eq(pthread_create(&j->thread, NULL, take_and_release, j), 0);
}

/* 0 if @j finished within @ms, ETIMEDOUT if it is still waiting. */
static int finished_within(struct job *j, long ms)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_nsec += ms * 1000000;
	t.tv_sec += t.tv_nsec / 1000000000;
	t.tv_nsec %= 1000000000;
	return pthread_timedjoin_np(j->thread, NULL, &t);
}

START_TEST(sharers_take_the_lock_without_naming_a_range_while_no_one_is_alone)
{
	struct rangelock l;
	struct rangelock_range r;

	ck_assert_int_eq(rangelock_init(&l), 0);
	ck_assert(rangelock_try_share(&l));
	ck_assert(rangelock_try_share(&l));
	rangelock_share(&l, &r, 0, 4096);
	ck_assert(r.nameless);
	rangelock_unlock(&l, &r);
	rangelock_unshare(&l);
	rangelock_unshare(&l);
	rangelock_destroy(&l);
}
END_TEST

START_TEST(a_range_held_alone_makes_sharers_name_theirs_and_blocks_only_overlapping_ones)
{
	struct rangelock l;
	struct rangelock_range alone, r;
	struct job overlapping;

	ck_assert_int_eq(rangelock_init(&l), 0);
	rangelock_lock(&l, &alone, 4096, 4096);
	ck_assert(!rangelock_try_share(&l));
	rangelock_share(&l, &r, 0, 4096);		/* ends where it starts */
	ck_assert(!r.nameless);
	rangelock_unlock(&l, &r);
	start(&overlapping, &l, 8191, 1, false);
	ck_assert_int_eq(finished_within(&overlapping, 100), ETIMEDOUT);
	rangelock_unlock(&l, &alone);
	ck_assert_int_eq(pthread_join(overlapping.thread, NULL), 0);
	ck_assert(rangelock_try_share(&l));
	rangelock_unshare(&l);
	rangelock_destroy(&l);
}
END_TEST

START_TEST(a_range_alone_waits_for_nameless_sharers_wherever_they_write)
{
	struct rangelock l;
	struct job alone;

	ck_assert_int_eq(rangelock_init(&l), 0);
	ck_assert(rangelock_try_share(&l));
	start(&alone, &l, 1 << 20, 512, true);
	ck_assert_int_eq(finished_within(&alone, 100), ETIMEDOUT);
	rangelock_unshare(&l);
	ck_assert_int_eq(pthread_join(alone.thread, NULL), 0);
	rangelock_destroy(&l);
}
END_TEST

START_TEST(two_ranges_alone_that_overlap_take_turns_in_the_order_asked)
{
	struct rangelock l;
	struct rangelock_range first;
	struct job second, sharer;

	ck_assert_int_eq(rangelock_init(&l), 0);
	rangelock_lock(&l, &first, 0, 4096);
	start(&second, &l, 2048, 4096, true);
	ck_assert_int_eq(finished_within(&second, 100), ETIMEDOUT);
	start(&sharer, &l, 6000, 100, false);	/* overlaps only the second */
	ck_assert_int_eq(finished_within(&sharer, 100), ETIMEDOUT);
	rangelock_unlock(&l, &first);
	ck_assert_int_eq(pthread_join(second.thread, NULL), 0);
	ck_assert_int_eq(pthread_join(sharer.thread, NULL), 0);
	rangelock_destroy(&l);
}
END_TEST

/* Read-modify-writes of one word, and sharers that write beside it. */
struct stress {
	struct rangelock l;
	unsigned long word;		/* guarded by [0, 8) alone */
	atomic_ulong beside;
};

#define ROUNDS 20000

static void *read_modify_write(void *arg)
{
	struct stress *s = arg;

	for (int i = 0; i < ROUNDS; i++) {
		struct rangelock_range r;
		unsigned long w;

		rangelock_lock(&s->l, &r, 0, 8);
		w = s->word;
		sched_yield();
		s->word = w + 1;
		rangelock_unlock(&s->l, &r);
	}
	return NULL;
}

static void *share_beside(void *arg)
{
	struct stress *s = arg;

	for (int i = 0; i < ROUNDS; i++) {
		struct rangelock_range r;

		rangelock_share(&s->l, &r, 4096, 4096);
		atomic_fetch_add(&s->beside, 1);
		rangelock_unlock(&s->l, &r);
	}
	return NULL;
}

START_TEST(read_modify_writes_of_one_range_lose_no_update_among_sharers)
{
	static struct stress s;
	pthread_t t[4];

	ck_assert_int_eq(rangelock_init(&s.l), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, i % 2 ? share_beside :
						read_modify_write, &s), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	ck_assert_uint_eq(s.word, 2 * ROUNDS);
	ck_assert_uint_eq(atomic_load(&s.beside), 2 * ROUNDS);
	ck_assert(rangelock_try_share(&s.l));
	rangelock_unshare(&s.l);
	rangelock_destroy(&s.l);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rangelock");
	TCase *tc = tcase_create("rangelock");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, sharers_take_the_lock_without_naming_a_range_while_no_one_is_alone);
	tcase_add_test(tc, a_range_held_alone_makes_sharers_name_theirs_and_blocks_only_overlapping_ones);
	tcase_add_test(tc, a_range_alone_waits_for_nameless_sharers_wherever_they_write);
	tcase_add_test(tc, two_ranges_alone_that_overlap_take_turns_in_the_order_asked);
	tcase_add_test(tc, read_modify_writes_of_one_range_lose_no_update_among_sharers);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
