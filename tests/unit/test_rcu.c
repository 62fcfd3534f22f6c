/*
 * Park tokens (rcu.h): rcu_wait_readers waits for every token taken
 * before it, never for one taken after it, and orders a parked reader's
 * use of an object before the writer frees it (ThreadSanitizer and
 * AddressSanitizer see a use after the free otherwise).  "Waits" is
 * checked as a writer that has not returned 100 ms later and returns
 * once the token is given back.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "rcu.h"

struct writer {
	pthread_t thread;
	_Atomic bool done;
};

static void *wait_readers(void *arg)
{
	struct writer *w = arg;

	urcu_memb_register_thread();
	rcu_wait_readers();
	atomic_store(&w->done, true);
	urcu_memb_unregister_thread();
	return NULL;
}

static unsigned int park_in_section(void)
{
	unsigned int token;

	rcu_read_begin();
	token = rcu_park();
	rcu_read_end();
	return token;
}

START_TEST(wait_returns_with_no_token)
{
	urcu_memb_register_thread();
	rcu_wait_readers();
	rcu_wait_readers();
	urcu_memb_unregister_thread();
}
END_TEST

START_TEST(wait_waits_for_a_token_taken_before)
{
	struct writer w = { .done = false };
	unsigned int token;

	urcu_memb_register_thread();
	token = park_in_section();
	ck_assert_int_eq(pthread_create(&w.thread, NULL, wait_readers, &w), 0);
	nanosleep(&(struct timespec){ 0, 100000000 }, NULL);
	ck_assert(!atomic_load(&w.done));
	rcu_unpark(token);
	ck_assert_int_eq(pthread_join(w.thread, NULL), 0);
	ck_assert(atomic_load(&w.done));
	urcu_memb_unregister_thread();
}
END_TEST

struct object {
	int value;
};

struct shared {
	_Atomic(struct object *) current;
	_Atomic bool stop;
	_Atomic long uses;
};

/*
 * Always holds a token (takes the next before it gives back the last),
 * and uses the object it found after its section ended.
 */
static void *parker(void *arg)
{
	struct shared *sh = arg;
	struct object *held = NULL;
	unsigned int token = 0;

	urcu_memb_register_thread();
	while (!atomic_load(&sh->stop)) {
		struct object *o;
		unsigned int next;

		rcu_read_begin();
		o = rcu_load(sh->current);
		next = rcu_park();
		rcu_read_end();
		ck_assert_int_eq(o->value, 42);	/* not freed: its token holds it */
		if (held)
			rcu_unpark(token);
		held = o;
		token = next;
		atomic_fetch_add(&sh->uses, 1);
	}
	if (held)
		rcu_unpark(token);
	urcu_memb_unregister_thread();
	return NULL;
}

static struct object *object_new(void)
{
	struct object *o = malloc(sizeof(*o));

	ck_assert_ptr_nonnull(o);
	o->value = 42;
	return o;
}

START_TEST(tokens_taken_after_never_hold_a_writer)
{
	struct shared sh = { .stop = false, .uses = 0 };
	pthread_t readers[2];

	urcu_memb_register_thread();
	atomic_store(&sh.current, object_new());
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&readers[i], NULL, parker, &sh), 0);
	/*
	 * Each replacement waits out the parked readers of the old object;
	 * at least 200 of them, and on until the readers used 200 objects
	 * meanwhile (they may start late on a loaded machine).
	 */
	for (int round = 0; round < 200 || atomic_load(&sh.uses) < 200; round++) {
		struct object *old = rcu_publish(sh.current, object_new());

		rcu_wait_readers();
		old->value = 0;
		free(old);
	}
	atomic_store(&sh.stop, true);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_join(readers[i], NULL), 0);
	ck_assert_int_ge(atomic_load(&sh.uses), 200);
	free(atomic_load(&sh.current));
	urcu_memb_unregister_thread();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("rcu");
	TCase *tc = tcase_create("park");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, wait_returns_with_no_token);
	tcase_add_test(tc, wait_waits_for_a_token_taken_before);
	tcase_add_test(tc, tokens_taken_after_never_hold_a_writer);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
