/*
 * The volume dispatcher's contract checks: a fake target that breaks one
 * rule of target.h at a time, and what the request it breaks gets (-EIO,
 * counted as an error, told once in the log), whatever the build.  And
 * the served set: many volumes in and out at once, kept by id.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "log.h"
#include "rcu.h"
#include "volset.h"
#include "volume.h"

#define SIZE		(1u << 20)

/* What the fake target answers; KEEP keeps the contract. */
enum fake_fault {
	KEEP,
	GAP,			/* map: a segment that starts past the previous one's end */
	OVERLAP,		/* map: two segments over the same bytes */
	SHORT,			/* map: segments that end before the request does */
	DEFER,			/* map: defers everything, reads too */
	POSITIVE,		/* every op: a positive number */
	DEFER_POSITIVE,		/* map defers, write_deferred answers a positive number */
	SEEK_BEFORE,		/* seek: an offset before the one asked about */
	SEEK_PAST,		/* seek: an offset past the range asked about */
	MISS_ONCE,		/* map: a miss until fault() ran once */
	MISS_ALWAYS,		/* map: a miss whatever fault() does */
	MISS_WITH_SEGMENTS,	/* map: a miss after appending a segment */
	MISS_QUEUED,		/* map: a miss until the test loads it; fault_start queues */
	MISS_QUEUE_POSITIVE,	/* map: a miss; fault_start answers a positive number */
};

struct fake {
	struct target target;
	enum fake_fault fault;
	unsigned int deferred;		/* write_deferred calls */
	unsigned int faults;		/* fault calls */
	bool held;			/* between a fault and its release */
	bool loaded;			/* MISS_QUEUED: the test loaded it */
	struct target_wait *queued;	/* MISS_QUEUED: the wait fault_start took */
};

static struct fake *fake(struct target *t)
{
	return (struct fake *)t;
}

/* Holes (zeros) over the request, as the fault says. */
static int fake_map(struct target *t, enum io_dir dir, uint64_t off, uint32_t len,
		    struct segs *out)
{
	uint32_t half = len / 2;

	(void)dir, (void)off;
	switch (fake(t)->fault) {
	case GAP:
		return segs_push(out, NULL, 0, half, 0) ?:
		       segs_push(out, NULL, 0, len - half, half + 512);
	case OVERLAP:
		return segs_push(out, NULL, 0, half + 512, 0) ?:
		       segs_push(out, NULL, 0, len - half, half);
	case SHORT:
		return segs_push(out, NULL, 0, half, 0);
	case DEFER:
	case DEFER_POSITIVE:
		return MAP_DEFER;
	case POSITIVE:
		return 7;
	case MISS_ONCE:
		if (!fake(t)->faults)
			return MAP_MISS;
		return segs_push(out, NULL, 0, len, 0) ?: MAP_REMAPPED;
	case MISS_ALWAYS:
		return MAP_MISS;
	case MISS_WITH_SEGMENTS:
		return segs_push(out, NULL, 0, half, 0) ?: MAP_MISS;
	case MISS_QUEUED:
		if (!fake(t)->loaded && !fake(t)->faults)
			return MAP_MISS;
		return segs_push(out, NULL, 0, len, 0) ?: MAP_REMAPPED;
	case MISS_QUEUE_POSITIVE:
		return MAP_MISS;
	default:
		return segs_push(out, NULL, 0, len, 0) ?: MAP_REMAPPED;
	}
}

static int fake_fault(struct target *t, uint64_t off, uint32_t len, bool hold)
{
	(void)off, (void)len;
	ck_assert(!rcu_reading());	/* outside the read section */
	ck_assert(hold);		/* the dispatcher maps again before it lets go */
	ck_assert(!fake(t)->held);
	fake(t)->faults++;
	if (fake(t)->fault == POSITIVE)
		return 1;
	fake(t)->held = true;
	return 0;
}

static void fake_fault_release(struct target *t)
{
	ck_assert(fake(t)->held);
	fake(t)->held = false;
}

/* MISS_QUEUED keeps the wait for the test, which plays the loader. */
static int fake_fault_start(struct target *t, uint64_t off, uint32_t len,
			    struct target_wait *w)
{
	(void)off, (void)len;
	ck_assert(rcu_reading());	/* inside the read section */
	switch (fake(t)->fault) {
	case MISS_QUEUED:
		fake(t)->queued = w;
		return 0;
	case MISS_QUEUE_POSITIVE:
		return 1;
	default:
		return -EAGAIN;
	}
}

static int fake_write_deferred(struct target *t, struct engine *e, uint64_t off,
			       uint32_t len, const void *buf)
{
	(void)e, (void)off, (void)len, (void)buf;
	fake(t)->deferred++;
	return fake(t)->fault == DEFER_POSITIVE ? 1 : 0;
}

static int fake_flush(struct target *t, struct engine *e)
{
	(void)e;
	return fake(t)->fault == POSITIVE ? 1 : 0;
}

static int fake_discard(struct target *t, struct engine *e, uint64_t off, uint64_t len,
			enum discard_mode mode)
{
	(void)e, (void)off, (void)len, (void)mode;
	return fake(t)->fault == POSITIVE ? 1 : 0;
}

static int fake_seek(struct target *t, uint64_t off, uint64_t size, int whence,
		     uint64_t *out)
{
	switch (fake(t)->fault) {
	case POSITIVE:
		return 1;
	case SEEK_BEFORE:
		*out = off - 1;
		return 0;
	case SEEK_PAST:
		*out = size + 1;
		return 0;
	default:
		return target_seek_all_data(t, off, size, whence, out);
	}
}

static void fake_destroy(struct target *t)
{
	free(t);
}

static const struct target_ops fake_ops = {
	.name = "fake",
	.map = fake_map,
	.fault = fake_fault,
	.fault_release = fake_fault_release,
	.fault_start = fake_fault_start,
	.write_deferred = fake_write_deferred,
	.read_failed = target_no_read_retry,
	.write_failed = target_no_write_retry,
	.end_write = target_no_end_write,
	.flush = fake_flush,
	.discard = fake_discard,
	.seek = fake_seek,
	.mapped_bytes = target_all_mapped,
	.destroy = fake_destroy,
};

static struct engine eng;
static char log_path[] = "/tmp/test_volume.XXXXXX";
static char buf[8192];

static void setup(void)
{
	int fd = mkstemp(log_path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(log_to_file(log_path), 0);
	urcu_memb_register_thread();
	ck_assert_int_eq(engine_init(&eng, 8), 0);
}

static void teardown(void)
{
	engine_exit(&eng);
	urcu_memb_unregister_thread();
	unlink(log_path);
}

static struct volume *make(enum fake_fault fault)
{
	struct fake *f = calloc(1, sizeof(*f));
	struct volume *v;

	ck_assert_ptr_nonnull(f);
	f->target.ops = &fake_ops;
	f->fault = fault;
	ck_assert_int_eq(volume_create(1, "v", SIZE, &f->target, &v), 0);
	return v;
}

/* Lines of the log that contain @what. */
static unsigned int logged(const char *what)
{
	char line[1024];
	unsigned int n = 0;
	FILE *f = fopen(log_path, "r");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, what) != NULL;
	fclose(f);
	return n;
}

START_TEST(target_that_keeps_the_contract_is_served)
{
	struct volume *v = make(KEEP);
	uint64_t at;

	memset(buf, 'x', sizeof(buf));
	ck_assert_int_eq(volume_read(v, &eng, buf, 4096, sizeof(buf)), sizeof(buf));
	ck_assert_int_eq(buf[0], 0);
	ck_assert_int_eq(volume_write(v, &eng, buf, 0, sizeof(buf)), sizeof(buf));
	ck_assert_int_eq(volume_flush(v, &eng), 0);
	ck_assert_int_eq(volume_discard(v, &eng, 0, 4096, DISCARD_PUNCH), 0);
	ck_assert_int_eq(volume_seek(v, 4096, SEEK_DATA, &at), 0);
	ck_assert_uint_eq(at, 4096);
	ck_assert_uint_eq(atomic_load(&v->stats.errors), 0);
	ck_assert_uint_eq(logged("contract"), 0);
	volume_destroy(v);
}
END_TEST

/* A reload: what follows goes to the new target; the old one is handed back. */
START_TEST(reload_serves_later_requests_with_the_new_target)
{
	struct volume *v = make(KEEP);
	struct fake *f = calloc(1, sizeof(*f));
	struct target *old;

	ck_assert_ptr_nonnull(f);
	f->target.ops = &fake_ops;
	f->fault = DEFER;
	ck_assert_int_eq(volume_write(v, &eng, buf, 0, 4096), 4096);
	old = volume_reload(v, &f->target);
	ck_assert_ptr_nonnull(old);
	ck_assert_uint_eq(fake(old)->deferred, 0);
	ck_assert_uint_eq(atomic_load(&old->users), 0);
	old->ops->destroy(old);
	ck_assert_int_eq(volume_write(v, &eng, buf, 0, 4096), 4096);
	ck_assert_uint_eq(f->deferred, 1);
	ck_assert_uint_eq(atomic_load(&f->target.users), 0);	/* the hold was put back */
	volume_destroy(v);
}
END_TEST

/* Each map fault, read and written: -EIO, an error counted, nothing deferred. */
START_TEST(map_that_does_not_cover_the_request_exactly_fails_it_with_eio)
{
	static const enum fake_fault faults[] = { GAP, OVERLAP, SHORT };

	for (unsigned int i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
		struct volume *v = make(faults[i]);

		ck_assert_int_eq(volume_read(v, &eng, buf, 0, sizeof(buf)), -EIO);
		ck_assert_int_eq(volume_write(v, &eng, buf, 0, sizeof(buf)), -EIO);
		ck_assert_uint_eq(atomic_load(&v->stats.errors), 2);
		ck_assert_uint_eq(atomic_load(&v->stats.reads), 0);
		volume_destroy(v);
	}
}
END_TEST

START_TEST(map_that_defers_a_read_fails_it_and_still_defers_writes)
{
	struct volume *v = make(DEFER);

	ck_assert_int_eq(volume_read(v, &eng, buf, 0, sizeof(buf)), -EIO);
	ck_assert_uint_eq(fake(v->target)->deferred, 0);
	ck_assert_int_eq(volume_write(v, &eng, buf, 0, sizeof(buf)), sizeof(buf));
	ck_assert_uint_eq(fake(v->target)->deferred, 1);
	volume_destroy(v);
}
END_TEST

START_TEST(read_described_by_iov_fails_a_bad_map_and_stays_in_its_section)
{
	struct volume *v = make(GAP);
	struct iovec iov[VOLUME_READ_IOV];
	unsigned int nr = 99;

	ck_assert_int_eq(volume_read_iov(v, &eng, buf, 0, sizeof(buf), iov, &nr), -EIO);
	ck_assert_uint_eq(nr, 0);
	ck_assert(rcu_reading());	/* the caller ends it, whatever the result */
	volume_read_done();
	ck_assert(!rcu_reading());
	volume_destroy(v);
}
END_TEST

START_TEST(op_that_answers_a_positive_number_fails_with_eio)
{
	struct volume *v = make(POSITIVE);
	uint64_t at;

	ck_assert_int_eq(volume_read(v, &eng, buf, 0, sizeof(buf)), -EIO);
	ck_assert_int_eq(volume_write(v, &eng, buf, 0, sizeof(buf)), -EIO);
	ck_assert_int_eq(volume_flush(v, &eng), -EIO);
	ck_assert_int_eq(volume_discard(v, &eng, 0, 4096, DISCARD_ZERO), -EIO);
	ck_assert_int_eq(volume_seek(v, 0, SEEK_HOLE, &at), -EIO);
	volume_destroy(v);
}
END_TEST

START_TEST(deferred_write_that_answers_a_positive_number_fails_with_eio)
{
	struct volume *v = make(DEFER_POSITIVE);

	ck_assert_int_eq(volume_write(v, &eng, buf, 0, sizeof(buf)), -EIO);
	ck_assert_uint_eq(fake(v->target)->deferred, 1);
	ck_assert_uint_eq(atomic_load(&v->stats.errors), 1);
	volume_destroy(v);
}
END_TEST

START_TEST(seek_outside_the_range_asked_fails_with_eio)
{
	struct volume *before = make(SEEK_BEFORE), *past = make(SEEK_PAST);
	uint64_t at;

	ck_assert_int_eq(volume_seek(before, 4096, SEEK_DATA, &at), -EIO);
	ck_assert_int_eq(volume_seek(past, 4096, SEEK_HOLE, &at), -EIO);
	ck_assert_int_eq(volume_seek_within(past, 4096, 4096, SEEK_HOLE, &at), -EIO);
	ck_assert_int_eq(volume_seek_within(past, 4096, 0, SEEK_HOLE, &at), -ENXIO);
	volume_destroy(before);
	volume_destroy(past);
}
END_TEST

START_TEST(request_from_inside_a_read_section_fails_with_eio)
{
	struct volume *v = make(KEEP);

	rcu_read_begin();
	ck_assert_int_eq(volume_read(v, &eng, buf, 0, sizeof(buf)), -EIO);
	ck_assert_int_eq(volume_write(v, &eng, buf, 0, sizeof(buf)), -EIO);
	ck_assert_int_eq(volume_flush(v, &eng), -EIO);
	ck_assert_int_eq(volume_discard(v, &eng, 0, 4096, DISCARD_PUNCH), -EIO);
	rcu_read_end();
	ck_assert_uint_eq(atomic_load(&v->stats.errors), 2);
	ck_assert_int_eq(volume_read(v, &eng, buf, 0, sizeof(buf)), sizeof(buf));
	volume_destroy(v);
}
END_TEST

START_TEST(breach_is_told_once_however_often_it_comes)
{
	struct volume *v = make(SHORT);

	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(volume_read(v, &eng, buf, 0, sizeof(buf)), -EIO);
	ck_assert_uint_eq(atomic_load(&v->stats.errors), 5);
	ck_assert_uint_eq(logged("do not cover it exactly"), 1);
	ck_assert_uint_eq(logged("volume 'v' (fake target)"), 1);
	volume_destroy(v);
}
END_TEST

/*
 * A miss is loaded by fault(), outside the read section, and mapped
 * again; one that never loads fails with EIO after a few faults, and a
 * miss that left segments behind is a breach.
 */
START_TEST(miss_is_faulted_in_outside_the_section_and_mapped_again)
{
	struct volume *v = make(MISS_ONCE);
	struct iovec iov[VOLUME_READ_IOV];
	unsigned int nr;

	ck_assert_int_eq(volume_read(v, &eng, buf, 0, sizeof(buf)), sizeof(buf));
	ck_assert_uint_eq(fake(v->target)->faults, 1);
	ck_assert_int_eq(volume_write(v, &eng, buf, 0, sizeof(buf)), sizeof(buf));
	ck_assert_int_eq(volume_read_iov(v, &eng, buf, 0, sizeof(buf), iov, &nr), sizeof(buf));
	ck_assert(rcu_reading());
	volume_read_done();
	volume_destroy(v);

	v = make(MISS_ALWAYS);
	ck_assert_int_eq(volume_read(v, &eng, buf, 0, sizeof(buf)), -EIO);
	ck_assert_uint_gt(fake(v->target)->faults, 1);
	ck_assert_uint_eq(logged("map() answered a miss"), 0);
	volume_destroy(v);

	v = make(MISS_WITH_SEGMENTS);
	ck_assert_int_eq(volume_read(v, &eng, buf, 0, sizeof(buf)), -EIO);
	ck_assert_uint_eq(fake(v->target)->faults, 0);
	ck_assert_uint_eq(logged("map() answered a miss after appending segments"), 1);
	volume_destroy(v);
}
END_TEST

/* What the reader of a waiting read learnt. */
struct waiter {
	struct volume_wait w;
	int calls, result;
	unsigned int users;		/* the target's holds when it was called */
};

static void waiter_loaded(struct volume_wait *w, int result)
{
	struct waiter *r = (struct waiter *)w;

	r->calls++;
	r->result = result;
	r->users = atomic_load(&w->t->users);
}

/*
 * A miss the target queues on its loader leaves the read waiting, not
 * counted, its target held and no read section open; the loader's call
 * lets the hold go and tells the reader, whose read then maps.  A miss
 * the target does not queue is faulted in on the spot, as volume_read
 * does, and a read that hits never waits.
 */
START_TEST(miss_the_target_queues_waits_for_its_loader_holding_the_target)
{
	struct volume *v = make(MISS_QUEUED);
	struct fake *f = fake(v->target);
	struct waiter r = { .w.loaded = waiter_loaded };

	ck_assert_int_eq(volume_read_or_wait(v, &eng, buf, 0, sizeof(buf), &r.w), -EINPROGRESS);
	ck_assert(!rcu_reading());
	ck_assert_ptr_nonnull(f->queued);
	ck_assert_uint_eq(atomic_load(&f->target.users), 1);
	ck_assert_uint_eq(atomic_load(&v->stats.reads), 0);
	ck_assert_int_eq(r.calls, 0);
	f->loaded = true;		/* the loader's part */
	f->queued->done(f->queued, 0);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.result, 0);
	ck_assert_uint_eq(r.users, 0);	/* let go before the reader was told */
	ck_assert_int_eq(volume_read(v, &eng, buf, 0, sizeof(buf)), sizeof(buf));
	ck_assert_uint_eq(f->faults, 0);
	f->queued = NULL;
	ck_assert_int_eq(volume_read_or_wait(v, &eng, buf, 0, sizeof(buf), &r.w), sizeof(buf));
	ck_assert_ptr_null(f->queued);	/* loaded: no wait */
	ck_assert_uint_eq(atomic_load(&v->stats.reads), 2);
	volume_destroy(v);

	v = make(MISS_ONCE);
	ck_assert_int_eq(volume_read_or_wait(v, &eng, buf, 0, sizeof(buf), &r.w), sizeof(buf));
	ck_assert_uint_eq(fake(v->target)->faults, 1);
	ck_assert_uint_eq(atomic_load(&v->target->users), 0);
	ck_assert_int_eq(r.calls, 1);
	volume_destroy(v);

	v = make(MISS_QUEUE_POSITIVE);
	ck_assert_int_eq(volume_read_or_wait(v, &eng, buf, 0, sizeof(buf), &r.w), -EIO);
	ck_assert_uint_eq(atomic_load(&v->target->users), 0);
	ck_assert_uint_eq(logged("an op answered a positive number"), 1);
	volume_destroy(v);
}
END_TEST

START_TEST(target_with_an_op_unset_is_not_served)
{
	struct target_ops ops = fake_ops;
	struct fake *f = calloc(1, sizeof(*f));
	struct volume *v = NULL;

	ck_assert_ptr_nonnull(f);
	ops.seek = NULL;
	f->target.ops = &ops;
	ck_assert_int_eq(volume_create(1, "v", SIZE, &f->target, &v), -EINVAL);
	ck_assert_ptr_null(v);
	ck_assert_uint_eq(logged("leaves seek unset"), 1);
}
END_TEST

/* The served set holds exactly the ids in @want (ascending), -1 ended. */
static void ck_served(struct volset *s, const int64_t *want)
{
	struct volset_array *a = volset_read(s);
	size_t n = 0;

	while (want[n] >= 0) {
		ck_assert_uint_gt(a->nr, n);
		ck_assert_int_eq(a->v[n]->id, want[n]);
		ck_assert_ptr_eq(volset_find_id(a, want[n]), a->v[n]);
		n++;
	}
	ck_assert_uint_eq(a->nr, n);
}

START_TEST(many_volumes_go_in_and_out_of_the_served_set_at_once_kept_by_id)
{
	struct volume v[8] = { 0 };
	struct volume *in[] = { &v[6], &v[1], &v[4] }, *more[] = { &v[7], &v[0], &v[3] };
	struct volume *out[] = { &v[4], &v[0], &v[7] };
	struct volset s;

	for (int i = 0; i < 8; i++)
		v[i].id = 10 * i;
	ck_assert_int_eq(volset_init(&s), 0);
	ck_assert_int_eq(volset_add_many(&s, (struct volume *[]){ &v[2] }, 1), 0);
	ck_assert_int_eq(volset_add_many(&s, in, 3), 0);
	ck_served(&s, (const int64_t[]){ 10, 20, 40, 60, -1 });
	ck_assert_int_eq(volset_add_many(&s, more, 3), 0);
	ck_served(&s, (const int64_t[]){ 0, 10, 20, 30, 40, 60, 70, -1 });
	ck_assert_int_eq(volset_remove_many(&s, out, 3), 0);
	ck_served(&s, (const int64_t[]){ 10, 20, 30, 60, -1 });
	ck_assert_int_eq(volset_add_many(&s, out, 0), 0);
	ck_assert_int_eq(volset_remove_many(&s, (struct volume *[]){ &v[1], &v[2], &v[3], &v[6] }, 4), 0);
	ck_served(&s, (const int64_t[]){ -1 });
	volset_release(&s);	/* destroys what it holds: nothing */
}
END_TEST

static Suite *volume_suite(void)
{
	Suite *s = suite_create("volume");
	TCase *tc = tcase_create("contract");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, target_that_keeps_the_contract_is_served);
	tcase_add_test(tc, reload_serves_later_requests_with_the_new_target);
	tcase_add_test(tc, map_that_does_not_cover_the_request_exactly_fails_it_with_eio);
	tcase_add_test(tc, map_that_defers_a_read_fails_it_and_still_defers_writes);
	tcase_add_test(tc, read_described_by_iov_fails_a_bad_map_and_stays_in_its_section);
	tcase_add_test(tc, op_that_answers_a_positive_number_fails_with_eio);
	tcase_add_test(tc, deferred_write_that_answers_a_positive_number_fails_with_eio);
	tcase_add_test(tc, seek_outside_the_range_asked_fails_with_eio);
	tcase_add_test(tc, request_from_inside_a_read_section_fails_with_eio);
	tcase_add_test(tc, breach_is_told_once_however_often_it_comes);
	tcase_add_test(tc, miss_is_faulted_in_outside_the_section_and_mapped_again);
	tcase_add_test(tc, miss_the_target_queues_waits_for_its_loader_holding_the_target);
	tcase_add_test(tc, target_with_an_op_unset_is_not_served);
	tcase_add_test(tc, many_volumes_go_in_and_out_of_the_served_set_at_once_kept_by_id);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(volume_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
