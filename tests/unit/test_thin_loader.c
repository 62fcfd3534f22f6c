/*
 * tests/unit/test_thin_loader.c: a thin pool's loader (thin_loader.c):
 * reads that miss wait for it and read the right data after; several
 * misses to one leaf load it once; a read across two leaves waits for
 * both; stopping the pool fails what is queued and finishes the load in
 * flight.  A pool whose leaves load on demand, from an in-memory store
 * whose leaf reads the test holds at a gate, so that it knows what the
 * loader is doing without sleeping.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device.h"
#include "engine.h"
#include "linear.h"
#include "rcu.h"
#include "thin.h"
#include "thin_int.h"
#include "thin_pool.h"
#include "volume.h"

#define BS		(64u << 10)
#define NR_BLOCKS	16
#define NR_LEAVES	3		/* of the volume's map: leaves 10, 11, 12 */
#define FIRST_LEAF	10
#define DIR_ID		1
#define VOL_SIZE	((uint64_t)NR_LEAVES * THIN_LEAF_ENTRIES * BS)
#define LEAF_BYTES	((uint64_t)THIN_LEAF_ENTRIES * BS)

/*
 * The store: leaf FIRST_LEAF + i maps its first four blocks to data
 * blocks 4i..4i+3, and data block b holds the byte 'a' + b.  The space
 * map is "valid" (empty): leaves load when first needed.  fault_leaf
 * counts its reads per leaf and, while the gate is shut, says it entered
 * and waits for the test to open it.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool shut;
	unsigned int entered;		/* fault_leaf calls that reached the gate */
	unsigned int reads[NR_LEAVES];
} store = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void leaf_rec(int64_t id, struct thin_leaf_rec *out)
{
	memset(out, 0, sizeof(*out));
	out->id = id;
	for (uint32_t j = 0; j < 4; j++)
		out->map[j] = (uint32_t)(id - FIRST_LEAF) * 4 + j + 1;
}

static int f_load_dir(void *arg, int64_t id, struct thin_dir_rec *out)
{
	(void)arg;
	if (id != DIR_ID)
		return -ENOENT;
	*out = (struct thin_dir_rec){ .id = id, .nr = NR_LEAVES, .mapped_known = true,
				      .mapped = NR_LEAVES * 4 };
	out->leaves = malloc(NR_LEAVES * sizeof(int64_t));
	for (int i = 0; i < NR_LEAVES; i++)
		out->leaves[i] = FIRST_LEAF + i;
	return 0;
}

static int f_load_leaf(void *arg, int64_t id, struct thin_leaf_rec *out)
{
	(void)arg;
	if (id < FIRST_LEAF || id >= FIRST_LEAF + NR_LEAVES)
		return -ENOENT;
	leaf_rec(id, out);
	return 0;
}

static int f_fault_leaf(void *arg, int64_t id, struct thin_leaf_rec *out)
{
	pthread_mutex_lock(&store.lock);
	if (id >= FIRST_LEAF && id < FIRST_LEAF + NR_LEAVES)
		store.reads[id - FIRST_LEAF]++;
	if (store.shut) {
		store.entered++;
		pthread_cond_broadcast(&store.cond);
		while (store.shut)
			pthread_cond_wait(&store.cond, &store.lock);
	}
	pthread_mutex_unlock(&store.lock);
	return f_load_leaf(arg, id, out);
}

static int f_max_page_id(void *arg, int64_t *out)
{
	(void)arg;
	*out = FIRST_LEAF + NR_LEAVES;
	return 0;
}

static int f_load_space(void *arg, int (*each)(void *ctx, const struct thin_space_rec *rec),
			void *ctx)
{
	(void)arg, (void)each, (void)ctx;
	return 1;		/* valid: leaves on demand */
}

static int f_commit(void *arg, const struct thin_commit *c)
{
	(void)arg;
	ck_assert_uint_eq(c->nr_leaves, 0);	/* the tests only read */
	return 0;
}

static const struct thin_meta_ops fake_ops = {
	.load_dir = f_load_dir,
	.load_leaf = f_load_leaf,
	.fault_leaf = f_fault_leaf,
	.max_page_id = f_max_page_id,
	.load_space = f_load_space,
	.commit = f_commit,
};

static char path[] = "/tmp/test_thin_loader.XXXXXX";
static struct device *dev;
static struct engine eng;
static struct thin_pool *pool;
static struct target *data;
static struct volume *vol;
static bool stopped;		/* the test stopped the pool itself */

static void shut_gate(void)
{
	pthread_mutex_lock(&store.lock);
	store.shut = true;
	pthread_mutex_unlock(&store.lock);
}

static void open_gate(void)
{
	pthread_mutex_lock(&store.lock);
	store.shut = false;
	pthread_cond_broadcast(&store.cond);
	pthread_mutex_unlock(&store.lock);
}

/* Waits until @n leaf reads reached the shut gate. */
static void wait_entered(unsigned int n)
{
	pthread_mutex_lock(&store.lock);
	while (store.entered < n)
		pthread_cond_wait(&store.cond, &store.lock);
	pthread_mutex_unlock(&store.lock);
}

static unsigned int reads_of(int leaf)
{
	unsigned int n;

	pthread_mutex_lock(&store.lock);
	n = store.reads[leaf];
	pthread_mutex_unlock(&store.lock);
	return n;
}

static void setup(void)
{
	struct thin_pool_params pp = { .id = 1, .name = "tp", .block_size = BS };
	struct target *t;
	char block[BS];
	char why[128];
	int fd;

	store.shut = false;
	store.entered = 0;
	memset(store.reads, 0, sizeof(store.reads));
	stopped = false;
	strcpy(path, "/tmp/test_thin_loader.XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	for (int b = 0; b < NR_BLOCKS; b++) {
		memset(block, 'a' + b, sizeof(block));
		ck_assert_int_eq(pwrite(fd, block, BS, (off_t)b * BS), BS);
	}
	close(fd);
	ck_assert_int_eq(device_open(path, 1, &dev), 0);
	ck_assert_int_eq(linear_create(&(struct linear_seg){ dev, 0, NR_BLOCKS * BS }, 1, &data), 0);
	ck_assert_int_eq(engine_init(&eng, 32), 0);
	urcu_memb_register_thread();
	ck_assert_int_eq(thin_pool_open(&pp, data, NR_BLOCKS * BS, &fake_ops, NULL, &pool), 0);
	ck_assert_int_eq(thin_load(pool, 1, VOL_SIZE, DIR_ID, &t), 0);
	ck_assert_int_eq(thin_pool_start(pool, why, sizeof(why)), 0);
	ck_assert_int_eq(volume_create(1, "v", VOL_SIZE, t, &vol), 0);
}

static void teardown(void)
{
	open_gate();
	if (!stopped)
		ck_assert_int_eq(thin_pool_stop(pool), 0);
	volume_destroy(vol);
	thin_pool_close(pool);
	data->ops->destroy(data);
	urcu_memb_unregister_thread();
	engine_exit(&eng);
	device_close(dev);
	unlink(path);
}

/* A read that waits: what its loaded() call said, for the test thread to wait on. */
struct reader {
	struct volume_wait w;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int calls, result;
	char buf[4096];
};

static void reader_loaded(struct volume_wait *w, int result)
{
	struct reader *r = (struct reader *)w;

	pthread_mutex_lock(&r->lock);
	r->calls++;
	r->result = result;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

static void reader_init(struct reader *r)
{
	memset(r, 0, sizeof(*r));
	r->w.loaded = reader_loaded;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
}

/* Waits for @r's call; returns its result. */
static int reader_wait(struct reader *r)
{
	int result;

	pthread_mutex_lock(&r->lock);
	while (!r->calls)
		pthread_cond_wait(&r->cond, &r->lock);
	ck_assert_int_eq(r->calls, 1);
	result = r->result;
	pthread_mutex_unlock(&r->lock);
	return result;
}

/* Reads 4 KiB at @off and checks it is data block @block's. */
static void expect_block(struct reader *r, uint64_t off, int block)
{
	ck_assert_int_eq(volume_read(vol, &eng, r->buf, off, sizeof(r->buf)), sizeof(r->buf));
	for (size_t i = 0; i < sizeof(r->buf); i++)
		if (r->buf[i] != 'a' + block)
			ck_abort_msg("byte %zu at %llu is %d, not block %d's", i,
				     (unsigned long long)off, r->buf[i], block);
}

static struct thin_pool_usage usage(void)
{
	struct thin_pool_usage u;

	thin_pool_usage(pool, &u);
	return u;
}

START_TEST(a_read_that_misses_waits_for_the_loader_then_reads_its_data)
{
	struct reader r;

	reader_init(&r);
	ck_assert_int_eq(volume_read_or_wait(vol, &eng, r.buf, 2 * BS, 4096, &r.w), -EINPROGRESS);
	ck_assert_int_eq(reader_wait(&r), 0);
	expect_block(&r, 2 * BS, 2);
	ck_assert_uint_eq(usage().loads, 1);
	ck_assert_uint_eq(usage().miss_waits, 1);
	/* Loaded now: the next read of the leaf does not wait. */
	ck_assert_int_eq(volume_read_or_wait(vol, &eng, r.buf, 3 * BS, 4096, &r.w), 4096);
	ck_assert_uint_eq(usage().miss_waits, 1);
	/* The loader lets go of the target after it called the waits. */
	for (int i = 0; i < 5000 && atomic_load(&vol->target->users); i++)
		usleep(1000);
	ck_assert_uint_eq(atomic_load(&vol->target->users), 0);
}
END_TEST

START_TEST(several_misses_to_one_leaf_load_it_once_and_all_read_their_data)
{
	struct reader r[4];

	for (int i = 0; i < 4; i++)
		reader_init(&r[i]);
	shut_gate();
	ck_assert_int_eq(volume_read_or_wait(vol, &eng, r[0].buf, 0, 4096, &r[0].w), -EINPROGRESS);
	wait_entered(1);		/* the loader is reading the leaf */
	for (int i = 1; i < 4; i++)
		ck_assert_int_eq(volume_read_or_wait(vol, &eng, r[i].buf, (uint64_t)i * BS, 4096,
						     &r[i].w), -EINPROGRESS);
	/* Each queued load holds the volume's target, as each waiting read does. */
	ck_assert_uint_eq(atomic_load(&vol->target->users), 5);
	open_gate();
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(reader_wait(&r[i]), 0);
		expect_block(&r[i], (uint64_t)i * BS, i);
	}
	ck_assert_uint_eq(reads_of(0), 1);
	ck_assert_uint_eq(usage().loads, 1);
	ck_assert_uint_eq(usage().miss_waits, 4);
}
END_TEST

START_TEST(a_read_across_two_leaves_waits_until_both_are_loaded)
{
	struct reader r;
	uint64_t off = LEAF_BYTES - 2048;	/* the end of leaf 0, the start of leaf 1 */
	struct thin_dir *d;

	reader_init(&r);
	ck_assert_int_eq(volume_read_or_wait(vol, &eng, r.buf, off, 4096, &r.w), -EINPROGRESS);
	ck_assert_int_eq(reader_wait(&r), 0);
	rcu_read_begin();
	d = rcu_load(((struct thin *)vol->target)->dir);
	ck_assert(thin_leaf_resident(atomic_load(&d->leaf[0])));
	ck_assert(thin_leaf_resident(atomic_load(&d->leaf[1])));
	ck_assert(!thin_leaf_resident(atomic_load(&d->leaf[2])));
	rcu_read_end();
	ck_assert_uint_eq(usage().loads, 2);
	ck_assert_int_eq(volume_read(vol, &eng, r.buf, off, 4096), 4096);
	ck_assert_uint_eq(usage().loads, 2);
	ck_assert_int_eq(r.buf[0], 0);		/* leaf 0's last block: unmapped */
	ck_assert_int_eq(r.buf[2048], 'a' + 4);	/* leaf 1's first: data block 4 */
}
END_TEST

static void *stop_pool(void *arg)
{
	(void)arg;
	urcu_memb_register_thread();
	ck_assert_int_eq(thin_pool_stop(pool), 0);
	urcu_memb_unregister_thread();
	return NULL;
}

/*
 * Stopping fails at once the wait queued behind the load in flight, lets
 * that load finish for its own waits, and queues nothing after: a read
 * that misses then faults its leaf in itself.
 */
START_TEST(stopping_the_pool_fails_queued_waits_and_finishes_the_load_in_flight)
{
	struct reader first, behind, late;
	pthread_t stopper;

	reader_init(&first);
	reader_init(&behind);
	reader_init(&late);
	shut_gate();
	ck_assert_int_eq(volume_read_or_wait(vol, &eng, first.buf, 0, 4096, &first.w),
			 -EINPROGRESS);
	wait_entered(1);
	ck_assert_int_eq(volume_read_or_wait(vol, &eng, behind.buf, LEAF_BYTES + BS, 4096,
					     &behind.w), -EINPROGRESS);
	ck_assert_int_eq(pthread_create(&stopper, NULL, stop_pool, NULL), 0);
	ck_assert_int_eq(reader_wait(&behind), -EIO);	/* while the first load still runs */
	open_gate();
	ck_assert_int_eq(pthread_join(stopper, NULL), 0);
	stopped = true;
	ck_assert_int_eq(reader_wait(&first), 0);
	expect_block(&first, 0, 0);
	ck_assert_int_eq(volume_read_or_wait(vol, &eng, late.buf, 2 * LEAF_BYTES + 3 * BS, 4096,
					     &late.w), 4096);
	ck_assert_int_eq(late.calls, 0);
	expect_block(&late, 2 * LEAF_BYTES + 3 * BS, 11);
	ck_assert_uint_eq(reads_of(1), 0);		/* the failed wait's leaf was never read */
	expect_block(&behind, LEAF_BYTES + BS, 5);	/* and faults in now */
	ck_assert_uint_eq(atomic_load(&vol->target->users), 0);
}
END_TEST

/* A pool whose budget holds its three leaves exactly. */
static void budget_setup(void)
{
	thin_pool_set_cache_budget(NR_LEAVES * THIN_LEAF_BYTES);
	setup();
}

static void budget_teardown(void)
{
	teardown();
	thin_pool_set_cache_budget(THIN_CACHE_DEFAULT);
}

/* Reads a block of every leaf, loading them all: the budget is full. */
static void fill_cache(struct reader *r)
{
	for (int i = 0; i < NR_LEAVES; i++)
		expect_block(r, (uint64_t)i * LEAF_BYTES + BS, 4 * i + 1);
	ck_assert_uint_eq(usage().cache_bytes, NR_LEAVES * THIN_LEAF_BYTES);
}

/* Waits (5 s at most) until the worker has the cache within @bytes. */
static void wait_cache_within(uint64_t bytes)
{
	for (int i = 0; i < 5000 && usage().cache_bytes > bytes; i++)
		usleep(1000);
	ck_assert_uint_le(usage().cache_bytes, bytes);
}

START_TEST(a_walk_that_reserves_from_a_full_budget_unloads_leaves_first_and_reads_go_on)
{
	struct reader r;

	reader_init(&r);
	fill_cache(&r);
	thin_pool_cache_reserve(pool, 2 * THIN_LEAF_BYTES);
	ck_assert_uint_eq(usage().cache_reserved, 2 * THIN_LEAF_BYTES);
	ck_assert_uint_le(usage().cache_bytes, THIN_LEAF_BYTES);	/* before the call returns */
	ck_assert_uint_ge(usage().evictions, 2);
	/* During the walk: what reads miss loads again, past the rest the worker unloads. */
	for (int i = 0; i < NR_LEAVES; i++)
		expect_block(&r, (uint64_t)i * LEAF_BYTES + 2 * BS, 4 * i + 2);
	wait_cache_within(THIN_LEAF_BYTES);
	thin_pool_cache_unreserve(pool, 2 * THIN_LEAF_BYTES);
	ck_assert_uint_eq(usage().cache_reserved, 0);
	fill_cache(&r);		/* the whole budget is the cache's again */
}
END_TEST

START_TEST(a_walk_that_needs_more_than_the_budget_unloads_every_clean_leaf_and_goes_on)
{
	struct reader r;

	reader_init(&r);
	fill_cache(&r);
	thin_pool_cache_reserve(pool, 10 * THIN_LEAF_BYTES);
	ck_assert_uint_eq(usage().cache_bytes, 0);
	expect_block(&r, LEAF_BYTES + 3 * BS, 7);
	wait_cache_within(0);
	thin_pool_cache_unreserve(pool, 10 * THIN_LEAF_BYTES);
	fill_cache(&r);
}
END_TEST

START_TEST(two_walks_reserve_together_and_each_gives_back_its_own)
{
	struct reader r;

	reader_init(&r);
	fill_cache(&r);
	thin_pool_cache_reserve(pool, THIN_LEAF_BYTES);
	ck_assert_uint_le(usage().cache_bytes, 2 * THIN_LEAF_BYTES);
	thin_pool_cache_reserve(pool, THIN_LEAF_BYTES);
	ck_assert_uint_le(usage().cache_bytes, THIN_LEAF_BYTES);
	thin_pool_cache_unreserve(pool, THIN_LEAF_BYTES);
	ck_assert_uint_eq(usage().cache_reserved, THIN_LEAF_BYTES);
	for (int i = 0; i < NR_LEAVES; i++)
		expect_block(&r, (uint64_t)i * LEAF_BYTES, 4 * i);
	wait_cache_within(2 * THIN_LEAF_BYTES);
	thin_pool_cache_unreserve(pool, THIN_LEAF_BYTES);
	ck_assert_uint_eq(usage().cache_reserved, 0);
}
END_TEST

/* A pool with no budget (cache_size=0). */
static void no_budget_setup(void)
{
	thin_pool_set_cache_budget(0);
	setup();
}

START_TEST(with_no_budget_a_walks_reservation_is_counted_and_unloads_nothing)
{
	struct reader r;

	reader_init(&r);
	fill_cache(&r);
	thin_pool_cache_reserve(pool, 10 * THIN_LEAF_BYTES);
	ck_assert_uint_eq(usage().cache_reserved, 10 * THIN_LEAF_BYTES);
	ck_assert_uint_eq(usage().cache_bytes, NR_LEAVES * THIN_LEAF_BYTES);
	ck_assert_uint_eq(usage().evictions, 0);
	thin_pool_cache_unreserve(pool, 10 * THIN_LEAF_BYTES);
	ck_assert_uint_eq(usage().cache_reserved, 0);
}
END_TEST

static Suite *thin_loader_suite(void)
{
	Suite *s = suite_create("thin_loader");
	TCase *tc = tcase_create("loader");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_read_that_misses_waits_for_the_loader_then_reads_its_data);
	tcase_add_test(tc, several_misses_to_one_leaf_load_it_once_and_all_read_their_data);
	tcase_add_test(tc, a_read_across_two_leaves_waits_until_both_are_loaded);
	tcase_add_test(tc, stopping_the_pool_fails_queued_waits_and_finishes_the_load_in_flight);
	suite_add_tcase(s, tc);
	tc = tcase_create("budget");
	tcase_add_checked_fixture(tc, budget_setup, budget_teardown);
	tcase_add_test(tc, a_walk_that_reserves_from_a_full_budget_unloads_leaves_first_and_reads_go_on);
	tcase_add_test(tc, a_walk_that_needs_more_than_the_budget_unloads_every_clean_leaf_and_goes_on);
	tcase_add_test(tc, two_walks_reserve_together_and_each_gives_back_its_own);
	suite_add_tcase(s, tc);
	tc = tcase_create("no budget");
	tcase_add_checked_fixture(tc, no_budget_setup, budget_teardown);
	tcase_add_test(tc, with_no_budget_a_walks_reservation_is_counted_and_unloads_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(thin_loader_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
