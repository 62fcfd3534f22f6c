/*
 * tests/unit/test_thin.c: the thin target and its pool, on a real file
 * and an in-memory metadata port: provisioning, zeroing, copy-on-write,
 * reference counts through snapshot, write and delete, free-after-commit,
 * the full pool, discard, diff, and a reload from what was committed.
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
#include "thin_reach.h"
#include "thin_walk.h"
#include "volume.h"

#define BS		(64u << 10)
#define NR_BLOCKS	16

/* The fake store: what commit() made durable. */
struct fake {
	struct thin_leaf_rec leaves[256];
	struct thin_dir_rec dirs[64];
	struct thin_vol_rec vols[16];
	size_t nr_leaves, nr_dirs, nr_vols;
	int64_t damaged[4];		/* pages whose rows cannot be read */
	size_t nr_damaged;
	int commits;
	int partial_dirs;		/* directories written by their changed chunks */
	int failures;			/* commits to refuse (-EBUSY) first */
};

static struct fake fake;

static struct thin_leaf_rec *fake_leaf(int64_t id)
{
	for (size_t i = 0; i < fake.nr_leaves; i++)
		if (fake.leaves[i].id == id)
			return &fake.leaves[i];
	return NULL;
}

static struct thin_dir_rec *fake_dir(int64_t id)
{
	for (size_t i = 0; i < fake.nr_dirs; i++)
		if (fake.dirs[i].id == id)
			return &fake.dirs[i];
	return NULL;
}

static struct thin_vol_rec *fake_vol(int64_t volume)
{
	for (size_t i = 0; i < fake.nr_vols; i++)
		if (fake.vols[i].volume == volume)
			return &fake.vols[i];
	return NULL;
}

static bool fake_damaged(int64_t id)
{
	for (size_t i = 0; i < fake.nr_damaged; i++)
		if (fake.damaged[i] == id)
			return true;
	return false;
}

static int f_load_dir(void *arg, int64_t id, struct thin_dir_rec *out)
{
	struct thin_dir_rec *d = fake_dir(id);

	(void)arg;
	if (fake_damaged(id))
		return -EUCLEAN;
	if (!d)
		return -ENOENT;
	*out = *d;
	out->leaves = malloc(d->nr * sizeof(int64_t));
	memcpy(out->leaves, d->leaves, d->nr * sizeof(int64_t));
	return 0;
}

static int f_load_leaf(void *arg, int64_t id, struct thin_leaf_rec *out)
{
	struct thin_leaf_rec *l = fake_leaf(id);

	(void)arg;
	if (fake_damaged(id))
		return -EUCLEAN;
	if (!l)
		return -ENOENT;
	*out = *l;
	return 0;
}

static int f_max_page_id(void *arg, int64_t *out)
{
	(void)arg;
	*out = 0;
	for (size_t i = 0; i < fake.nr_leaves; i++)
		if (fake.leaves[i].id > *out)
			*out = fake.leaves[i].id;
	for (size_t i = 0; i < fake.nr_dirs; i++)
		if (fake.dirs[i].id > *out)
			*out = fake.dirs[i].id;
	return 0;
}

static int f_page_ids(void *arg, int64_t **dirs, size_t *nr_dirs, int64_t **leaves,
		      size_t *nr_leaves)
{
	(void)arg;
	*dirs = malloc((fake.nr_dirs + 1) * sizeof(int64_t));
	*leaves = malloc((fake.nr_leaves + 1) * sizeof(int64_t));
	for (size_t i = 0; i < fake.nr_dirs; i++)
		(*dirs)[i] = fake.dirs[i].id;
	for (size_t i = 0; i < fake.nr_leaves; i++)
		(*leaves)[i] = fake.leaves[i].id;
	*nr_dirs = fake.nr_dirs;
	*nr_leaves = fake.nr_leaves;
	return 0;
}

/* What the pool service records itself: a volume's row, an empty map. */
static void record_volume(int64_t volume, int64_t dir, uint32_t slots)
{
	struct thin_vol_rec *v = fake_vol(volume);

	*(v ? v : &fake.vols[fake.nr_vols++]) = (struct thin_vol_rec){ volume, dir };
	if (!slots || fake_dir(dir))
		return;
	fake.dirs[fake.nr_dirs] = (struct thin_dir_rec){ .id = dir, .nr = slots,
							 .leaves = calloc(slots, sizeof(int64_t)) };
	fake.nr_dirs++;
}

static int f_commit(void *arg, const struct thin_commit *c)
{
	(void)arg;
	if (fake.failures) {
		fake.failures--;
		return -EBUSY;
	}
	for (size_t i = 0; i < c->nr_leaves; i++) {
		struct thin_leaf_rec *l = fake_leaf(c->leaves[i].id);

		*(l ? l : &fake.leaves[fake.nr_leaves++]) = c->leaves[i];
	}
	for (size_t i = 0; i < c->nr_dirs; i++) {
		struct thin_dir_rec *d = fake_dir(c->dirs[i].id);
		const uint64_t *changed = c->dirs_changed ? c->dirs_changed[i] : NULL;

		if (changed) {		/* as the store: into the row it has */
			ck_assert_ptr_nonnull(d);
			ck_assert_uint_eq(d->nr, c->dirs[i].nr);
			for (uint32_t j = 0; j < d->nr; j++)
				if (thin_dir_chunk_changed(changed, j / THIN_DIR_CHUNK))
					d->leaves[j] = c->dirs[i].leaves[j];
			if (c->dirs[i].mapped_known) {	/* else the row keeps its count */
				d->mapped_known = true;
				d->mapped = c->dirs[i].mapped;
			}
			fake.partial_dirs++;
			continue;
		}
		if (!d)
			d = &fake.dirs[fake.nr_dirs++];
		else
			free(d->leaves);
		*d = c->dirs[i];
		d->leaves = malloc(d->nr * sizeof(int64_t));
		memcpy(d->leaves, c->dirs[i].leaves, d->nr * sizeof(int64_t));
	}
	for (size_t i = 0; i < c->nr_vols; i++) {
		struct thin_vol_rec *v = fake_vol(c->vols[i].volume);

		ck_assert_ptr_nonnull(v);	/* rows are the service's */
		*v = c->vols[i];
	}
	for (size_t i = 0; i < c->nr_dir_mapped; i++) {
		struct thin_dir_rec *d = fake_dir(c->dir_mapped[i].id);

		ck_assert_ptr_nonnull(d);	/* written before */
		for (size_t j = 0; j < c->nr_dirs; j++)	/* a row written carries its count */
			ck_assert_int_ne(c->dirs[j].id, c->dir_mapped[i].id);
		d->mapped_known = true;
		d->mapped = c->dir_mapped[i].mapped;
	}
	for (size_t i = 0; i < c->nr_dead_leaves; i++) {
		struct thin_leaf_rec *l = fake_leaf(c->dead_leaves[i]);

		if (l)
			*l = fake.leaves[--fake.nr_leaves];
	}
	for (size_t i = 0; i < c->nr_dead_dirs; i++) {
		struct thin_dir_rec *d = fake_dir(c->dead_dirs[i]);

		if (d) {
			free(d->leaves);
			*d = fake.dirs[--fake.nr_dirs];
		}
	}
	fake.commits++;
	return 0;
}

static const struct thin_meta_ops fake_ops = {
	.load_dir = f_load_dir,
	.load_leaf = f_load_leaf,
	.max_page_id = f_max_page_id,
	.page_ids = f_page_ids,
	.commit = f_commit,
};

static char path[] = "/tmp/test_thin.XXXXXX";
static struct device *dev;
static struct engine eng;
static struct thin_pool *pool;
static struct target *data;	/* the pool's data area: a linear target on dev */

static void open_pool(uint64_t nr_blocks, enum thin_full_policy policy)
{
	/* A write waiting for space is woken by growth, long before wait_s. */
	struct thin_pool_params pp = { .id = 1, .name = "tp", .block_size = BS,
				       .zero = true, .when_full = policy, .wait_s = 60 };

	ck_assert_int_eq(thin_pool_open(&pp, data, nr_blocks * BS, &fake_ops, NULL, &pool), 0);
}

static void setup(void)
{
	int fd;

	memset(&fake, 0, sizeof(fake));
	strcpy(path, "/tmp/test_thin.XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 64ull * BS), 0);
	close(fd);
	ck_assert_int_eq(device_open(path, 1, &dev), 0);
	ck_assert_int_eq(linear_create(&(struct linear_seg){ dev, 0, 64ull * BS }, 1, &data), 0);
	ck_assert_int_eq(engine_init(&eng, 32), 0);
	urcu_memb_register_thread();
	open_pool(NR_BLOCKS, THIN_FULL_ERROR);
}

static void teardown(void)
{
	thin_pool_close(pool);
	data->ops->destroy(data);
	urcu_memb_unregister_thread();
	engine_exit(&eng);
	device_close(dev);
	unlink(path);
	for (size_t i = 0; i < fake.nr_dirs; i++)
		free(fake.dirs[i].leaves);
}

/* As the pool service creates a thin volume: record, then make. */
static struct volume *new_volume(int64_t id, uint64_t size)
{
	int64_t dir = thin_pool_reserve_page_id(pool);
	struct target *t;
	struct volume *v;

	record_volume(id, dir, thin_dir_slots((size + BS - 1) / BS));
	ck_assert_int_eq(thin_create(pool, id, size, dir, &t), 0);
	ck_assert_int_eq(volume_create(id, "v", size, t, &v), 0);
	return v;
}

/* As the service snapshots: suspend the origin, commit, share, record. */
static struct volume *snapshot(struct volume *origin, int64_t id)
{
	struct target *t;
	struct volume *v;

	thin_suspend(origin->target);
	ck_assert_int_eq(thin_pool_admin_begin(pool, NULL), 0);
	record_volume(id, thin_dir_id(origin->target), 0);
	ck_assert_int_eq(thin_snapshot(origin->target, id, &t), 0);
	thin_pool_admin_end(pool);
	thin_unsuspend(origin->target);
	ck_assert_int_eq(volume_create(id, "s", atomic_load(&origin->size), t, &v), 0);
	return v;
}

/*
 * As the service removes a thin volume: its row goes, then its map;
 * what is pending stays pending until the next commit.
 */
static void remove_volume(struct volume *v)
{
	struct thin_vol_rec *rec = fake_vol(v->id);

	thin_suspend(v->target);
	thin_pool_admin_hold(pool);
	*rec = fake.vols[--fake.nr_vols];
	ck_assert_int_eq(thin_remove(v->target), 0);
	thin_pool_admin_end(pool);
	thin_unsuspend(v->target);
}

static void fill(struct volume *v, uint64_t off, uint32_t len, int byte)
{
	char *buf = malloc(len);

	memset(buf, byte, len);
	ck_assert_int_eq(volume_write(v, &eng, buf, off, len), (ssize_t)len);
	free(buf);
}

/*
 * Every byte of [off, off + len) of @v is @byte.  Check marks every passing
 * assertion with a write: the bytes are compared first, one assertion
 * says where the first one differs (megabytes of them took minutes under
 * TSan).
 */
static void expect(struct volume *v, uint64_t off, uint32_t len, int byte)
{
	char *buf = malloc(len);
	uint32_t i = 0;

	ck_assert_int_eq(volume_read(v, &eng, buf, off, len), (ssize_t)len);
	while (i < len && buf[i] == (char)byte)
		i++;
	ck_assert_msg(i == len, "byte %llu is %d, not %d", (unsigned long long)(off + i),
		      i < len ? buf[i] : 0, byte);
	free(buf);
}

static struct thin_usage usage(struct volume *v)
{
	struct thin_usage u;

	thin_usage(v->target, &u);
	return u;
}

static uint64_t pool_free(void)
{
	struct thin_pool_usage u;

	thin_pool_usage(pool, &u);
	return u.nr_free;
}

static void fail_breach(void *arg, const char *msg)
{
	(void)arg;
	ck_abort_msg("check: %s", msg);
}

/*
 * What mapperctl check asks of the pool (pool_thin.c): commit, then each
 * block counts exactly the committed leaves that map it, and the free,
 * freed and used blocks add up to the pool.  Volumes @ids, of @size bytes.
 */
static void expect_counts_match_committed_maps(const int64_t *ids, size_t nr, uint64_t size)
{
	struct thin_walk_vol vols[4];
	struct thin_pool_counts c;
	struct thin_walk w;
	ck_assert_uint_le(nr, 4);
	for (size_t i = 0; i < nr; i++)
		vols[i] = (struct thin_walk_vol){ "v", fake_vol(ids[i])->dir, size / BS };
	ck_assert_int_eq(thin_pool_admin_begin(pool, &c), 0);
	ck_assert_int_eq(thin_walk_load(&fake_ops, NULL, c.nr_blocks, vols, nr, &w), 0);
	thin_pool_admin_end(pool);
	ck_assert_uint_eq(thin_walk_check(&w, fail_breach, NULL), 0);
	for (uint64_t b = 0; b < c.nr_blocks; b++) {
		uint32_t mem = thin_refs_get(&c.refs, b), pages = thin_refs_get(&w.block_refs, b);

		ck_assert_msg(mem == pages,
			      "block %llu: %u references in memory, %u in the committed maps",
			      (unsigned long long)b, mem, pages);
	}
	for (size_t i = 0; i < c.nr_pending; i++) {
		ck_assert_uint_eq(thin_refs_get(&w.block_refs, c.pending[i]), 0);
		ck_assert(!i || c.pending[i - 1] < c.pending[i]);
	}
	ck_assert_uint_eq(c.nr_free + c.nr_pending + w.used, c.nr_blocks);
	thin_walk_release(&w);
	thin_pool_counts_release(&c);
}

START_TEST(unmapped_blocks_read_as_zeros_and_map_nothing)
{
	struct volume *v = new_volume(10, 8 * BS);

	expect(v, 0, 8 * BS, 0);
	ck_assert_uint_eq(volume_mapped_bytes(v), 0);
	ck_assert_uint_eq(pool_free(), NR_BLOCKS);
	volume_destroy(v);
}
END_TEST

START_TEST(first_write_provisions_one_block_and_zeroes_the_rest)
{
	struct volume *v = new_volume(10, 8 * BS);
	char junk[BS];

	/* Old data on every block: a new block must not show it. */
	memset(junk, 0x5a, sizeof(junk));
	for (int b = 0; b < NR_BLOCKS; b++)
		ck_assert_int_eq(pwrite(dev->fd, junk, BS, (off_t)b * BS), BS);
	fill(v, BS + 1000, 3000, 0x11);
	expect(v, BS, 1000, 0);
	expect(v, BS + 1000, 3000, 0x11);
	expect(v, BS + 4000, BS - 4000, 0);
	ck_assert_uint_eq(volume_mapped_bytes(v), BS);
	ck_assert_uint_eq(pool_free(), NR_BLOCKS - 1);
	volume_destroy(v);
}
END_TEST

START_TEST(write_to_an_owned_block_takes_the_fast_path)
{
	struct volume *v = new_volume(10, 8 * BS);
	struct segs segs;

	segs_init(&segs);
	ck_assert_int_eq(v->target->ops->map(v->target, IO_WRITE, 0, 4096, &segs), MAP_DEFER);
	fill(v, 0, BS, 1);
	segs_reset(&segs);
	rcu_read_begin();
	ck_assert_int_eq(v->target->ops->map(v->target, IO_WRITE, 0, 4096, &segs), MAP_REMAPPED);
	rcu_read_end();
	v->target->ops->end_write(v->target);
	ck_assert_ptr_eq(segs.v[0].dev, dev);
	segs_release(&segs);
	volume_destroy(v);
}
END_TEST

/*
 * thin_usage_many gives each volume what thin_usage gives it, snapshots
 * that share a directory, and those that share leaves, included.
 */
START_TEST(usage_of_many_volumes_at_once_is_each_ones_usage)
{
	struct volume *v = new_volume(10, 8 * BS), *s[4];
	struct target *t[5];
	struct thin_usage many[5];

	fill(v, 0, 4 * BS, 1);
	for (int i = 0; i < 4; i++)
		s[i] = snapshot(v, 11 + i);
	fill(s[1], 2 * BS, 512, 2);		/* s1 and v share leaves, not a directory */
	fill(v, 6 * BS, BS, 3);			/* v maps one block more, its own */
	t[0] = v->target;
	for (int i = 0; i < 4; i++)
		t[1 + i] = s[i]->target;
	ck_assert_int_eq(thin_usage_many(t, 5, many), 0);
	for (int i = 0; i < 5; i++) {
		struct thin_usage one;

		thin_usage(t[i], &one);
		ck_assert_msg(!memcmp(&one, &many[i], sizeof(one)),
			      "volume %d: one at a time %llu/%llu/%llu, at once %llu/%llu/%llu", i,
			      (unsigned long long)one.mapped, (unsigned long long)one.exclusive,
			      (unsigned long long)one.shared, (unsigned long long)many[i].mapped,
			      (unsigned long long)many[i].exclusive, (unsigned long long)many[i].shared);
	}
	ck_assert_uint_eq(many[0].mapped, 5);
	ck_assert_uint_eq(many[0].exclusive, 1);
	ck_assert_uint_eq(many[2].exclusive, 1);	/* s1's copy of block 2 */
	ck_assert_uint_eq(many[3].shared, 4);
	for (int i = 0; i < 4; i++)
		volume_destroy(s[i]);
	volume_destroy(v);
}
END_TEST

START_TEST(snapshot_shares_every_block_and_write_copies_one)
{
	struct volume *v = new_volume(10, 8 * BS), *s;
	struct thin_usage u;

	fill(v, 0, 4 * BS, 1);
	s = snapshot(v, 11);
	ck_assert_uint_eq(pool_free(), NR_BLOCKS - 4);
	u = usage(v);
	ck_assert_uint_eq(u.mapped, 4);
	ck_assert_uint_eq(u.shared, 4);
	fill(v, BS + 512, 512, 2);		/* copy-on-write of block 1 */
	expect(v, BS, 512, 1);
	expect(v, BS + 512, 512, 2);
	expect(v, BS + 1024, BS - 1024, 1);
	expect(s, 0, 4 * BS, 1);
	ck_assert_uint_eq(pool_free(), NR_BLOCKS - 5);
	u = usage(v);
	ck_assert_uint_eq(u.exclusive, 1);
	ck_assert_uint_eq(u.shared, 3);
	u = usage(s);
	ck_assert_uint_eq(u.exclusive, 1);
	ck_assert_uint_eq(u.shared, 3);
	volume_destroy(s);
	volume_destroy(v);
}
END_TEST

/* A map's row and its count are one write: a 1e8-block map's row is 1.5 MB. */
START_TEST(a_commit_writes_a_changed_map_with_its_count_in_its_row)
{
	struct volume *v = new_volume(10, 8 * BS), *s;
	struct thin_dir_rec *d;

	fill(v, 0, 2 * BS, 1);
	ck_assert_int_eq(thin_pool_commit(pool), 0);
	d = fake_dir(fake_vol(10)->dir);
	ck_assert(d->mapped_known);
	ck_assert_uint_eq(d->mapped, 2);
	s = snapshot(v, 11);
	fill(v, 4 * BS, 512, 2);		/* a copy of the map, one block more */
	ck_assert_int_eq(thin_pool_commit(pool), 0);
	d = fake_dir(fake_vol(10)->dir);
	ck_assert_int_ne(d->id, fake_vol(11)->dir);
	ck_assert(d->mapped_known);
	ck_assert_uint_eq(d->mapped, 3);
	volume_destroy(s);
	volume_destroy(v);
}
END_TEST

/*
 * Blocks larger than the 1 MiB a first write copies at a time: a write
 * across the boundary of two chunks of a shared block, and one into a
 * hole, are laid over what the block read as, chunk by chunk.
 */
START_TEST(first_writes_into_blocks_of_several_chunks_keep_the_rest)
{
	const uint32_t big = 2u << 20, mib = 1u << 20;
	struct thin_pool_params pp = { .id = 1, .name = "tp", .block_size = big,
				       .zero = true, .when_full = THIN_FULL_ERROR, .wait_s = 60 };
	struct linear_seg area = { dev, 0, 3ull * big };	/* two and a copy */
	struct volume *v, *s;
	int64_t dir;
	struct target *t;

	ck_assert_int_eq(truncate(path, 3 * big), 0);
	thin_pool_close(pool);
	data->ops->destroy(data);
	ck_assert_int_eq(linear_create(&area, 1, &data), 0);
	ck_assert_int_eq(thin_pool_open(&pp, data, area.len, &fake_ops, NULL, &pool), 0);
	dir = thin_pool_reserve_page_id(pool);
	record_volume(10, dir, thin_dir_slots(2));
	ck_assert_int_eq(thin_create(pool, 10, 2ull * big, dir, &t), 0);
	ck_assert_int_eq(volume_create(10, "v", 2ull * big, t, &v), 0);
	fill(v, 0, big, 0x11);			/* the whole block: both chunks */
	s = snapshot(v, 11);
	fill(v, mib - 50, 100, 0x22);		/* across the chunks of a shared block */
	expect(v, 0, mib - 50, 0x11);
	expect(v, mib - 50, 100, 0x22);
	expect(v, mib + 50, big - mib - 50, 0x11);
	expect(s, 0, big, 0x11);
	fill(v, big + mib + mib / 2, 10, 0x33);	/* into a hole, in its second chunk */
	expect(v, big, mib + mib / 2, 0);
	expect(v, big + mib + mib / 2, 10, 0x33);
	expect(v, big + mib + mib / 2 + 10, mib / 2 - 10, 0);
	volume_destroy(s);
	volume_destroy(v);
}
END_TEST

START_TEST(snapshot_of_snapshot_keeps_each_generation)
{
	struct volume *v = new_volume(10, 2 * BS), *s1, *s2;

	fill(v, 0, BS, 1);
	s1 = snapshot(v, 11);
	fill(v, 0, BS, 2);
	s2 = snapshot(s1, 12);
	fill(s1, 0, BS, 3);
	expect(v, 0, BS, 2);
	expect(s1, 0, BS, 3);
	expect(s2, 0, BS, 1);
	volume_destroy(s2);
	volume_destroy(s1);
	volume_destroy(v);
}
END_TEST

START_TEST(removing_a_snapshot_frees_only_its_own_blocks_after_commit)
{
	struct volume *v = new_volume(10, 8 * BS), *s;

	fill(v, 0, 4 * BS, 1);
	s = snapshot(v, 11);
	fill(s, 0, 2 * BS, 2);			/* s owns 2 blocks */
	ck_assert_uint_eq(pool_free(), NR_BLOCKS - 6);
	remove_volume(s);
	ck_assert_uint_eq(pool_free(), NR_BLOCKS - 6);
	ck_assert_int_eq(thin_pool_commit(pool), 0);
	ck_assert_uint_eq(pool_free(), NR_BLOCKS - 4);
	expect(v, 0, 4 * BS, 1);
	ck_assert_uint_eq(usage(v).exclusive, 4);
	volume_destroy(s);
	volume_destroy(v);
}
END_TEST

/*
 * The commit that ends a removal frees its blocks but leaves the rows of
 * the pages that died (the snapshot's copied map and leaf) to the next
 * commit; one of those that fails leaves them to the one after.
 */
START_TEST(a_removals_commit_leaves_the_rows_of_its_dead_pages_to_the_next)
{
	struct volume *v = new_volume(10, 8 * BS), *s;
	struct thin_vol_rec *rec;
	size_t dirs, leaves;

	fill(v, 0, 4 * BS, 1);
	s = snapshot(v, 11);
	fill(s, 0, 2 * BS, 2);			/* s owns 2 blocks, a leaf and a map */
	ck_assert_int_eq(thin_pool_commit(pool), 0);
	dirs = fake.nr_dirs;
	leaves = fake.nr_leaves;
	thin_suspend(s->target);
	thin_pool_admin_hold(pool);
	rec = fake_vol(11);
	*rec = fake.vols[--fake.nr_vols];
	ck_assert_int_eq(thin_remove(s->target), 0);
	ck_assert_int_eq(thin_pool_admin_end_commit(pool), 0);
	thin_unsuspend(s->target);
	ck_assert_uint_eq(pool_free(), NR_BLOCKS - 4);
	ck_assert_uint_eq(fake.nr_dirs, dirs);
	ck_assert_uint_eq(fake.nr_leaves, leaves);
	fake.failures = 1;			/* one attempt only */
	ck_assert_int_eq(thin_pool_admin_begin(pool, NULL), -EBUSY);
	ck_assert_int_eq(thin_pool_commit(pool), 0);
	ck_assert_uint_eq(fake.nr_dirs, dirs - 1);
	ck_assert_uint_eq(fake.nr_leaves, leaves - 1);
	expect(v, 0, 4 * BS, 1);
	volume_destroy(s);
	volume_destroy(v);
}
END_TEST

/*
 * The origin's map, copied by its first write after the snapshot, takes
 * the snapshot's row when the snapshot is removed before the copy was
 * committed: one directory row, the one it always had, of which only the
 * chunks of slots that changed are written; after a failed commit, all
 * of it.  Reloaded, it reads what was written.  A map of three chunks.
 */
#define CHUNK_BYTES	((uint64_t)THIN_DIR_CHUNK * THIN_LEAF_ENTRIES * BS)

START_TEST(a_copied_map_takes_the_row_of_the_removed_volume_it_was_copied_from)
{
	uint64_t size = 2 * CHUNK_BYTES + 100ull * THIN_LEAF_ENTRIES * BS;
	struct volume *v = new_volume(10, size), *s;
	struct target *t;
	int64_t dir;

	fill(v, 0, 2 * BS, 1);
	ck_assert_int_eq(thin_pool_commit(pool), 0);
	dir = fake_vol(10)->dir;
	ck_assert_uint_eq(fake_dir(dir)->nr, 2 * THIN_DIR_CHUNK + 100);
	s = snapshot(v, 11);
	ck_assert_int_eq(fake_vol(11)->dir, dir);
	fill(v, CHUNK_BYTES, 512, 2);		/* copies the map; chunk 1 */
	fill(v, 0, 512, 3);			/* a shared leaf and block; chunk 0 */
	ck_assert_int_ne(thin_dir_id(v->target), dir);
	remove_volume(s);
	ck_assert_int_eq(thin_pool_commit(pool), 0);
	ck_assert_int_eq(thin_dir_id(v->target), dir);
	ck_assert_int_eq(fake_vol(10)->dir, dir);
	ck_assert_uint_eq(fake.nr_dirs, 1);
	ck_assert_int_eq(fake.partial_dirs, 1);
	ck_assert_uint_eq(fake_dir(dir)->mapped, 3);
	volume_destroy(s);

	s = snapshot(v, 12);
	fill(v, 2 * CHUNK_BYTES, 512, 4);	/* chunk 2 */
	remove_volume(s);
	fake.failures = 1;			/* one attempt only */
	ck_assert_int_eq(thin_pool_admin_begin(pool, NULL), -EBUSY);
	ck_assert_int_eq(thin_pool_commit(pool), 0);
	ck_assert_int_eq(fake_vol(10)->dir, dir);
	ck_assert_uint_eq(fake.nr_dirs, 1);
	ck_assert_int_eq(fake.partial_dirs, 1);	/* the retry wrote it whole */
	volume_destroy(s);
	volume_destroy(v);
	thin_pool_close(pool);

	open_pool(NR_BLOCKS, THIN_FULL_ERROR);
	ck_assert_int_eq(thin_load(pool, 10, size, dir, &t), 0);
	ck_assert_int_eq(volume_create(10, "v", size, t, &v), 0);
	ck_assert_int_eq(thin_pool_start(pool, NULL, 0), 0);
	expect(v, 0, 512, 3);
	expect(v, 512, 2 * BS - 512, 1);
	expect(v, 2 * BS, 2 * BS, 0);
	expect(v, CHUNK_BYTES, 512, 2);
	expect(v, 2 * CHUNK_BYTES, 512, 4);
	expect(v, 2 * CHUNK_BYTES + BS, BS, 0);
	ck_assert_uint_eq(pool_free(), NR_BLOCKS - 4);
	ck_assert_int_eq(thin_pool_stop(pool), 0);
	volume_destroy(v);
}
END_TEST

/* Where volume @v's byte @off is on the device now. */
static uint64_t where(struct volume *v, uint64_t off)
{
	struct segs segs;
	uint64_t at;

	segs_init(&segs);
	rcu_read_begin();
	ck_assert_int_eq(v->target->ops->map(v->target, IO_READ, off, 512, &segs), MAP_REMAPPED);
	rcu_read_end();
	at = segs.v[0].dev_off;
	segs_release(&segs);
	return at;
}

/*
 * Removing a snapshot that still shares its origin's map leaves the
 * origin alone on it in memory at once, but the committed metadata maps
 * the snapshot there until the removal commits: a write in place before
 * that would show in the snapshot after a power cut.
 */
START_TEST(a_map_a_removal_unshared_is_not_written_in_place_before_its_commit)
{
	struct volume *v = new_volume(10, 8 * BS), *s;
	uint64_t block;
	char byte;

	fill(v, 0, BS, 1);
	s = snapshot(v, 11);
	ck_assert_int_eq(thin_pool_commit(pool), 0);
	block = where(v, 0);
	ck_assert_int_eq(thin_remove(s->target), 0);
	fill(v, 0, 4096, 2);
	ck_assert_int_eq(pread(dev->fd, &byte, 1, (off_t)block), 1);
	ck_assert_int_eq(byte, 1);		/* the snapshot's committed block kept */
	expect(v, 0, 4096, 2);
	ck_assert_int_eq(thin_pool_commit(pool), 0);
	block = where(v, 0);
	fill(v, 4096, 4096, 3);			/* committed: in place again */
	ck_assert_uint_eq(where(v, 0), block);
	expect(v, 0, 4096, 2);
	expect(v, 4096, 4096, 3);
	expect(v, 8192, BS - 8192, 1);
	volume_destroy(s);
	volume_destroy(v);
}
END_TEST

START_TEST(sharing_blocks_maps_the_source_and_frees_what_was_replaced)
{
	struct volume *a = new_volume(10, 8 * BS), *b = new_volume(11, 8 * BS);
	uint64_t done, mapped;

	fill(a, 0, 4 * BS, 1);
	fill(b, 0, 6 * BS, 2);
	ck_assert_uint_eq(pool_free(), NR_BLOCKS - 10);
	ck_assert_int_eq(thin_share(b->target, 1, a->target, 0, 4, &done, &mapped), 0);
	ck_assert_uint_eq(done, 4);
	ck_assert_uint_eq(mapped, 4);
	expect(b, 0, BS, 2);
	expect(b, BS, 4 * BS, 1);
	expect(b, 5 * BS, BS, 2);
	ck_assert_uint_eq(usage(b).shared, 4);
	ck_assert_uint_eq(usage(a).shared, 4);
	ck_assert_uint_eq(pool_free(), NR_BLOCKS - 10);	/* freed after the commit */
	ck_assert_int_eq(thin_pool_commit(pool), 0);
	ck_assert_uint_eq(pool_free(), NR_BLOCKS - 6);
	fill(b, BS, 512, 3);				/* copy-on-write, a stays */
	expect(a, 0, 4 * BS, 1);
	ck_assert_uint_eq(usage(b).shared, 3);
	volume_destroy(b);
	volume_destroy(a);
}
END_TEST

START_TEST(full_pool_fails_with_enospc_keeps_data_and_grows)
{
	struct volume *v = new_volume(10, 32 * BS);
	char buf[4096] = { 0 };

	fill(v, 0, NR_BLOCKS * BS, 7);
	ck_assert_int_eq(volume_write(v, &eng, buf, NR_BLOCKS * BS, sizeof(buf)), -ENOSPC);
	expect(v, 0, NR_BLOCKS * BS, 7);
	fill(v, 0, BS, 8);			/* overwrites still work */
	ck_assert_int_eq(thin_pool_grow_check(pool, 20ull * BS), 0);
	thin_pool_grow(pool, 20ull * BS);
	fill(v, NR_BLOCKS * BS, BS, 9);
	expect(v, NR_BLOCKS * BS, BS, 9);
	volume_destroy(v);
}
END_TEST

/*
 * Full, a block freed and taken again, full again: counted twice though
 * nobody looked in between, so the monitor raises "full" twice.
 */
START_TEST(each_time_the_pool_fills_is_counted_even_if_nobody_looked)
{
	struct volume *v = new_volume(10, 32 * BS);
	struct thin_pool_usage u;
	char buf[4096] = { 0 };

	fill(v, 0, NR_BLOCKS * BS, 7);
	ck_assert_int_eq(volume_write(v, &eng, buf, NR_BLOCKS * BS, sizeof(buf)), -ENOSPC);
	ck_assert_int_eq(volume_discard(v, &eng, 0, BS, DISCARD_PUNCH), 0);
	fill(v, NR_BLOCKS * BS, BS, 8);		/* takes the freed block */
	ck_assert_int_eq(volume_write(v, &eng, buf, (NR_BLOCKS + 1) * BS, sizeof(buf)), -ENOSPC);
	thin_pool_usage(pool, &u);
	ck_assert(u.full);
	ck_assert_uint_eq(u.raised.full, 2);
	ck_assert_uint_eq(u.raised.low_water, 0);	/* no mark set */
	volume_destroy(v);
}
END_TEST

START_TEST(discard_unmaps_whole_blocks_and_zeroes_partial_ones)
{
	struct volume *v = new_volume(10, 8 * BS);
	uint64_t off;

	fill(v, 0, 4 * BS, 3);
	ck_assert_int_eq(volume_discard(v, &eng, BS / 2, 2 * BS, DISCARD_PUNCH), 0);
	expect(v, 0, BS / 2, 3);
	expect(v, BS / 2, 2 * BS, 0);
	expect(v, 2 * BS + BS / 2, BS / 2, 3);
	ck_assert_uint_eq(volume_mapped_bytes(v), 3 * BS);
	ck_assert_int_eq(volume_seek(v, BS, SEEK_HOLE, &off), 0);
	ck_assert_uint_eq(off, BS);
	ck_assert_int_eq(volume_seek(v, BS, SEEK_DATA, &off), 0);
	ck_assert_uint_eq(off, 2 * BS);
	ck_assert_int_eq(volume_seek(v, 4 * BS, SEEK_DATA, &off), -ENXIO);
	ck_assert_int_eq(thin_pool_commit(pool), 0);
	ck_assert_uint_eq(pool_free(), NR_BLOCKS - 3);
	volume_destroy(v);
}
END_TEST

static int collect(void *arg, uint64_t first, uint64_t count)
{
	uint64_t *runs = arg;

	runs[runs[0] * 2 + 1] = first;
	runs[runs[0] * 2 + 2] = count;
	runs[0]++;
	return 0;
}

START_TEST(diff_names_exactly_the_blocks_written_after_the_snapshot)
{
	struct volume *v = new_volume(10, 8 * BS), *s;
	uint64_t runs[16] = { 0 };

	fill(v, 0, 8 * BS, 1);
	s = snapshot(v, 11);
	fill(v, 2 * BS, 2 * BS, 2);
	fill(v, 6 * BS + 100, 1, 2);
	ck_assert_int_eq(thin_diff(s->target, v->target, collect, runs), 0);
	ck_assert_uint_eq(runs[0], 2);
	ck_assert_uint_eq(runs[1], 2);
	ck_assert_uint_eq(runs[2], 2);
	ck_assert_uint_eq(runs[3], 6);
	ck_assert_uint_eq(runs[4], 1);
	volume_destroy(s);
	volume_destroy(v);
}
END_TEST

/*
 * Opens the pool again from what was committed, with volumes 10 (v) and
 * 11 (s) of the tests below, and finds them as those left them.
 */
static void reload(struct volume **v, struct volume **s)
{
	struct target *t;

	open_pool(NR_BLOCKS, THIN_FULL_ERROR);
	ck_assert_int_eq(thin_load(pool, 10, 8 * BS, fake_vol(10)->dir, &t), 0);
	ck_assert_int_eq(volume_create(10, "v", 8 * BS, t, v), 0);
	ck_assert_int_eq(thin_load(pool, 11, 8 * BS, fake_vol(11)->dir, &t), 0);
	ck_assert_int_eq(volume_create(11, "s", 8 * BS, t, s), 0);
	ck_assert_int_eq(thin_pool_start(pool, NULL, 0), 0);
	expect(*v, 0, BS, 5);
	expect(*v, BS, 2 * BS, 4);
	expect(*s, 0, 3 * BS, 4);
	ck_assert_uint_eq(pool_free(), NR_BLOCKS - 4);
}

START_TEST(committed_maps_reload_with_the_same_data_and_counts)
{
	struct volume *v = new_volume(10, 8 * BS), *s;
	struct thin_usage u;

	fill(v, 0, 3 * BS, 4);
	s = snapshot(v, 11);
	fill(v, 0, BS, 5);
	ck_assert_int_eq(thin_pool_commit(pool), 0);
	volume_destroy(s);
	volume_destroy(v);
	thin_pool_close(pool);

	reload(&v, &s);
	u = usage(v);
	ck_assert_uint_eq(u.exclusive, 1);
	ck_assert_uint_eq(u.shared, 2);
	ck_assert_int_eq(thin_pool_stop(pool), 0);
	volume_destroy(s);
	volume_destroy(v);
}
END_TEST

static size_t breaches_seen;
static char first_breach[256];

static void note_breach(void *arg, const char *msg)
{
	(void)arg;
	if (!breaches_seen++)
		snprintf(first_breach, sizeof(first_breach), "%s", msg);
}

/*
 * Check reads leaves again to see that a shared block sits at one virtual
 * block (thin_walk.c: check_shared_blocks): after a copy-on-write, two
 * shared blocks that swap places in one of the two leaves are two breaches.
 */
START_TEST(check_finds_a_shared_block_at_two_virtual_blocks)
{
	struct volume *v = new_volume(10, 4 * BS), *s;
	struct thin_walk_vol vols[2];
	struct thin_leaf_rec *l;
	struct thin_walk w;
	uint32_t e;

	fill(v, 0, 4 * BS, 1);
	s = snapshot(v, 11);
	fill(v, 0, BS, 2);		/* copies v's leaf: blocks 1..3 shared by two */
	ck_assert_int_eq(thin_pool_commit(pool), 0);
	vols[0] = (struct thin_walk_vol){ "v", fake_vol(10)->dir, 4 };
	vols[1] = (struct thin_walk_vol){ "s", fake_vol(11)->dir, 4 };
	ck_assert_int_eq(thin_walk_load(&fake_ops, NULL, NR_BLOCKS, vols, 2, &w), 0);
	ck_assert_uint_eq(w.shared_refs, 6);
	ck_assert_uint_eq(thin_walk_check(&w, fail_breach, NULL), 0);
	thin_walk_release(&w);

	l = fake_leaf(fake_dir(fake_vol(10)->dir)->leaves[0]);
	e = l->map[1];
	l->map[1] = l->map[2];
	l->map[2] = e;
	ck_assert_int_eq(thin_walk_load(&fake_ops, NULL, NR_BLOCKS, vols, 2, &w), 0);
	breaches_seen = 0;
	ck_assert_uint_eq(thin_walk_check(&w, note_breach, NULL), 2);
	ck_assert_msg(strstr(first_breach, "is mapped at virtual blocks 1 and 2"), "%s",
		      first_breach);
	thin_walk_release(&w);
	volume_destroy(s);
	volume_destroy(v);
}
END_TEST

/* What volume 10 reaches in the fake store: its directory and that one's leaves. */
static bool reached_by_10(void *ctx, int64_t id, bool leaf)
{
	struct thin_dir_rec *d = fake_dir(fake_vol(10)->dir);

	(void)ctx;
	if (!leaf)
		return id == d->id;
	for (uint32_t i = 0; i < d->nr; i++)
		if (d->leaves[i] == id)
			return true;
	return false;
}

START_TEST(the_garbage_walk_deletes_pages_no_volume_reaches_damaged_ones_too)
{
	struct volume *v = new_volume(10, 8 * BS), *w = new_volume(11, 8 * BS);
	struct thin_reach tr;
	int64_t wdir;

	fill(v, 0, BS, 4);
	fill(w, 0, BS, 5);
	ck_assert_int_eq(thin_pool_commit(pool), 0);
	ck_assert_uint_eq(fake.nr_dirs, 2);
	ck_assert_uint_eq(fake.nr_leaves, 2);
	/* w removed while its directory, damaged, kept the pool from loading */
	wdir = fake_vol(11)->dir;
	fake.damaged[fake.nr_damaged++] = wdir;
	ck_assert_int_eq(thin_reach_find(&fake_ops, NULL, reached_by_10, NULL, &tr), 0);
	ck_assert_uint_eq(tr.nr_dead_dirs + tr.nr_dead_leaves, 2);	/* its directory and leaf */
	ck_assert_uint_eq(tr.damaged, 1);
	ck_assert_int_eq(thin_reach_gc(&fake_ops, NULL, &tr), 0);
	thin_reach_release(&tr);
	ck_assert_ptr_null(fake_dir(wdir));
	ck_assert_uint_eq(fake.nr_dirs, 1);
	ck_assert_uint_eq(fake.nr_leaves, 1);
	ck_assert_ptr_nonnull(fake_dir(fake_vol(10)->dir));
	volume_destroy(w);
	volume_destroy(v);
}
END_TEST


/*
 * A pool that is not loaded reads what its volumes reach from their
 * directories: the same pages are found, and none may go while a
 * directory a volume reaches cannot be read.
 */
START_TEST(the_walk_of_an_unloaded_pool_finds_them_from_the_directories)
{
	struct volume *v = new_volume(10, 8 * BS), *w = new_volume(11, 8 * BS);
	struct thin_walk_vol vols[1];
	struct thin_reach tr;

	fill(v, 0, BS, 4);
	fill(w, 0, BS, 5);
	ck_assert_int_eq(thin_pool_commit(pool), 0);
	fake.damaged[fake.nr_damaged++] = fake_vol(11)->dir;
	vols[0] = (struct thin_walk_vol){ "v", fake_vol(10)->dir, 8 };
	ck_assert_int_eq(thin_reach_find_walk(&fake_ops, NULL, vols, 1, &tr), 0);
	ck_assert_uint_eq(tr.dangling, 0);
	ck_assert_uint_eq(tr.nr_dead_dirs, 1);
	ck_assert_uint_eq(tr.nr_dead_leaves, 1);
	ck_assert_uint_eq(tr.damaged, 1);
	thin_reach_release(&tr);
	/* v's own directory damaged: what it names is unknown */
	fake.damaged[fake.nr_damaged++] = fake_vol(10)->dir;
	ck_assert_int_eq(thin_reach_find_walk(&fake_ops, NULL, vols, 1, &tr), 0);
	ck_assert_uint_eq(tr.dangling, 1);
	thin_reach_release(&tr);
	fake.nr_damaged = 0;
	volume_destroy(w);
	volume_destroy(v);
}
END_TEST

/*
 * The walk keeps its leaves in pages of the leaves' slab, 64 a page:
 * a map of 200 leaves spans four, and every leaf is found by id, each
 * counted once, and one no volume reaches is told as such.
 */
START_TEST(a_walk_over_leaves_of_several_pages_finds_and_counts_each)
{
	static int64_t slots[200];
	struct thin_walk_vol vol = { "v", 1, 200 * THIN_LEAF_ENTRIES };
	struct thin_walk w;

	for (int i = 0; i < 201; i++) {
		fake.leaves[i] = (struct thin_leaf_rec){ .id = 100 + i };
		fake.leaves[i].map[i % THIN_LEAF_ENTRIES] = (uint32_t)i + 1;
		if (i < 200)
			slots[i] = 100 + i;
	}
	fake.nr_leaves = 201;		/* leaf 300 is in no map */
	fake.dirs[fake.nr_dirs++] = (struct thin_dir_rec){ .id = 1, .nr = 200, .leaves = slots };
	ck_assert_int_eq(thin_walk_load(&fake_ops, NULL, 256, &vol, 1, &w), 0);
	ck_assert_uint_eq(w.nr_leaves, 201);
	for (int i = 0; i < 201; i++) {
		struct thin_walk_leaf *l = thin_walk_leaf(&w, 100 + i);

		ck_assert_ptr_nonnull(l);
		ck_assert_int_eq(l->id, 100 + i);
		ck_assert_uint_eq(l->mapped, 1);
		ck_assert(l->reached == (i < 200));
	}
	ck_assert_ptr_null(thin_walk_leaf(&w, 99));
	ck_assert_ptr_null(thin_walk_leaf(&w, 301));
	ck_assert_uint_eq(thin_walk_check(&w, fail_breach, NULL), 0);
	ck_assert_uint_eq(w.used, 200);
	ck_assert_uint_eq(thin_walk_unreached(&w, NULL), 1);
	thin_walk_release(&w);
	fake.nr_dirs--;			/* its slots are not the fake store's to free */
}
END_TEST

START_TEST(failed_commits_change_nothing_and_a_retry_writes_it_all)
{
	struct volume *v = new_volume(10, 8 * BS), *s;
	struct thin_pool_usage pu;

	fill(v, 0, 3 * BS, 4);
	s = snapshot(v, 11);
	fill(v, 0, BS, 5);			/* copies the dir, a leaf, a block */
	fake.failures = 1;
	ck_assert_int_eq(thin_pool_admin_begin(pool, NULL), -EBUSY);
	thin_pool_usage(pool, &pu);
	ck_assert_int_eq(pu.commit_error, -EBUSY);
	ck_assert(!pu.failed);
	fake.failures = 2;			/* fsync waits through two */
	ck_assert_int_eq(thin_pool_commit(pool), 0);
	ck_assert_int_eq(fake.failures, 0);
	thin_pool_usage(pool, &pu);
	ck_assert_int_eq(pu.commit_error, 0);
	volume_destroy(s);
	volume_destroy(v);
	thin_pool_close(pool);

	reload(&v, &s);
	ck_assert_int_eq(thin_pool_stop(pool), 0);
	volume_destroy(s);
	volume_destroy(v);
}
END_TEST

/* Racing first writes to one block: one allocation, both writes land. */
static struct volume *race_vol;

static void *race_writer(void *arg)
{
	struct engine e;
	char buf[512];
	long byte = (long)arg;

	urcu_memb_register_thread();
	engine_init(&e, 8);
	memset(buf, (int)byte, sizeof(buf));
	for (int i = 0; i < 200; i++)
		volume_write(race_vol, &e, buf, (uint64_t)(byte * 512), sizeof(buf));
	engine_exit(&e);
	urcu_memb_unregister_thread();
	return NULL;
}

START_TEST(racing_first_writes_to_one_block_allocate_it_once)
{
	pthread_t t[4];

	race_vol = new_volume(10, 2 * BS);
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, race_writer, (void *)(i + 1));
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	ck_assert_uint_eq(pool_free(), NR_BLOCKS - 1);
	for (int i = 0; i < 4; i++)
		expect(race_vol, (uint64_t)(i + 1) * 512, 512, i + 1);
	volume_destroy(race_vol);
}
END_TEST

START_TEST(external_origin_shows_through_and_is_copied_on_first_write)
{
	struct linear_seg seg = { dev, 40ull * BS, 2ull * BS };
	struct volume *v = new_volume(10, 4 * BS);
	char img[2 * BS];
	struct target *o;

	memset(img, 0x77, sizeof(img));
	ck_assert_int_eq(pwrite(dev->fd, img, sizeof(img), 40 * BS), (ssize_t)sizeof(img));
	ck_assert_int_eq(linear_create(&seg, 1, &o), 0);
	thin_set_origin(v->target, o, BS + BS / 2, true, NULL);
	expect(v, 0, BS + BS / 2, 0x77);		/* the image */
	expect(v, BS + BS / 2, BS / 2 + 2 * BS, 0);	/* past it: zeros */
	fill(v, 100, 10, 1);				/* copies the rest of block 0 */
	expect(v, 0, 100, 0x77);
	expect(v, 100, 10, 1);
	expect(v, 110, BS - 110, 0x77);
	/* Its block, and the origin's bytes (a linear origin maps them all). */
	ck_assert_uint_eq(volume_mapped_bytes(v), BS + BS + BS / 2);
	ck_assert_int_eq(volume_discard(v, &eng, 0, 2 * BS, DISCARD_PUNCH), 0);
	expect(v, 0, 2 * BS, 0);			/* zeros, not the image */
	expect(v, 2 * BS, 2 * BS, 0);
	volume_destroy(v);
}
END_TEST

/* A write of 4 KiB at @off of race_vol, on a thread of its own. */
struct late_write {
	uint64_t off;
	ssize_t r;
};

static void *late_writer(void *arg)
{
	struct late_write *w = arg;
	char buf[4096];
	struct engine e;

	urcu_memb_register_thread();
	engine_init(&e, 8);
	memset(buf, 9, sizeof(buf));
	w->r = volume_write(race_vol, &e, buf, w->off, sizeof(buf));
	engine_exit(&e);
	urcu_memb_unregister_thread();
	return NULL;
}

/*
 * The allocator drops the pool lock while a full pool waits to grow.
 * Meanwhile a snapshot shares the map and the metadata limit is reached,
 * so once the write has its block it cannot own the leaf: it fails, and
 * the block it took must go back, not stay counted with nothing mapping
 * it until the pool reopens.
 */
START_TEST(a_first_write_failing_after_the_allocator_waited_gives_its_block_back)
{
	struct late_write w = { .off = NR_BLOCKS * BS };
	int64_t ids[] = { 10, 11 };
	struct thin_pool_usage u;
	struct volume *s;
	pthread_t t;

	thin_pool_close(pool);
	open_pool(NR_BLOCKS, THIN_FULL_WAIT);
	race_vol = new_volume(10, 32 * BS);
	fill(race_vol, 0, NR_BLOCKS * BS, 7);
	pthread_create(&t, NULL, late_writer, &w);
	do {	/* raised under the lock, which the writer then drops to wait */
		usleep(1000);
		thin_pool_usage(pool, &u);
	} while (!u.raised.full);
	s = snapshot(race_vol, 11);
	thin_pool_usage(pool, &u);
	thin_pool_set_metadata_limit(pool, u.metadata_bytes);
	ck_assert_int_eq(thin_pool_grow_check(pool, 20ull * BS), 0);
	thin_pool_grow(pool, 20ull * BS);
	pthread_join(t, NULL);

	ck_assert_int_eq(w.r, -ENOSPC);		/* metadata full */
	ck_assert_uint_eq(pool_free(), 20 - NR_BLOCKS);
	expect_counts_match_committed_maps(ids, 2, 32 * BS);
	expect(s, 0, NR_BLOCKS * BS, 7);
	volume_destroy(s);
	volume_destroy(race_vol);
}
END_TEST

/* Origin: 3 blocks of the sparse file, data only at BS + 8 KiB for 4 KiB. */
START_TEST(seek_shows_the_holes_of_the_external_origin)
{
	struct linear_seg seg = { dev, 50ull * BS, 3ull * BS };
	struct volume *v = new_volume(10, 4 * BS);
	char page[4096];
	struct target *o;
	uint64_t at;

	memset(page, 0x55, sizeof(page));
	ck_assert_int_eq(pwrite(dev->fd, page, sizeof(page), 51 * BS + 8192), 4096);
	ck_assert_int_eq(linear_create(&seg, 1, &o), 0);
	thin_set_origin(v->target, o, 3 * BS, true, NULL);
	fill(v, 2 * BS + 100, 10, 1);			/* block 2 is mapped */
	ck_assert_int_eq(volume_seek(v, 0, SEEK_HOLE, &at), 0);
	ck_assert_uint_eq(at, 0);
	ck_assert_int_eq(volume_seek(v, 0, SEEK_DATA, &at), 0);
	ck_assert_uint_eq(at, BS + 8192);
	ck_assert_int_eq(volume_seek(v, BS + 8192, SEEK_HOLE, &at), 0);
	ck_assert_uint_eq(at, BS + 12288);
	ck_assert_int_eq(volume_seek(v, BS + 12288, SEEK_DATA, &at), 0);
	ck_assert_uint_eq(at, 2 * BS);
	ck_assert_int_eq(volume_seek(v, 2 * BS, SEEK_HOLE, &at), 0);
	ck_assert_uint_eq(at, 3 * BS);			/* past the origin: zeros */
	ck_assert_int_eq(volume_seek(v, 3 * BS, SEEK_DATA, &at), -ENXIO);
	ck_assert_int_eq(volume_seek_within(v, 0, BS, SEEK_DATA, &at), -ENXIO);
	volume_destroy(v);
}
END_TEST

/* Writes @len bytes of 0x55 at device byte @off. */
static void put_data(uint64_t off, size_t len)
{
	char *buf = malloc(len);

	memset(buf, 0x55, len);
	ck_assert_int_eq(pwrite(dev->fd, buf, len, (off_t)off), (ssize_t)len);
	free(buf);
}

START_TEST(a_block_is_a_hole_only_if_its_device_holds_no_data_in_it_in_any_area)
{
	/* Pool blocks 0-3 at device blocks 8-11, 4-7 at 20-23. */
	struct linear_seg areas[] = { { dev, 8ull * BS, 4ull * BS }, { dev, 20ull * BS, 4ull * BS } };
	struct thin_pool_params pp = { .id = 2, .name = "tp2", .block_size = BS };
	struct thin_pool *two;
	struct target *two_data;
	uint64_t nr = 0, first = 99;

	ck_assert_int_eq(linear_create(areas, 2, &two_data), 0);
	ck_assert_int_eq(thin_pool_open(&pp, two_data, 8ull * BS, &fake_ops, NULL, &two), 0);
	put_data(9ull * BS, BS);			/* pool block 1 */
	put_data(11ull * BS + 8192, 4096);		/* 3: a page of it */
	put_data(20ull * BS, 3 * BS);			/* 4, 5, 6 ... */
	ck_assert_int_eq(fallocate(dev->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				   22 * BS, BS), 0);	/* ... and 6 discarded */
	ck_assert_int_eq(thin_pool_holes(two, 0, 8, &nr, &first), 0);
	ck_assert_uint_eq(nr, 4);			/* 0, 2, 6, 7 */
	ck_assert_uint_eq(first, 0);
	nr = 0;
	ck_assert_int_eq(thin_pool_holes(two, 3, 3, &nr, &first), 0);
	ck_assert_uint_eq(nr, 0);
	ck_assert_int_eq(thin_pool_holes(two, 5, 3, &nr, &first), 0);
	ck_assert_uint_eq(nr, 2);
	ck_assert_uint_eq(first, 6);
	ck_assert_int_eq(thin_pool_holes(two, 2, 1, &nr, &first), 0);
	ck_assert_uint_eq(nr, 3);			/* added; the first stays */
	ck_assert_uint_eq(first, 6);
	ck_assert_int_eq(thin_pool_holes(two, 7, 2, &nr, &first), -EINVAL);
	thin_pool_close(two);
	two_data->ops->destroy(two_data);
}
END_TEST

static Suite *thin_suite(void)
{
	Suite *suite = suite_create("thin");
	TCase *tc = tcase_create("thin");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, unmapped_blocks_read_as_zeros_and_map_nothing);
	tcase_add_test(tc, first_write_provisions_one_block_and_zeroes_the_rest);
	tcase_add_test(tc, write_to_an_owned_block_takes_the_fast_path);
	tcase_add_test(tc, snapshot_shares_every_block_and_write_copies_one);
	tcase_add_test(tc, a_commit_writes_a_changed_map_with_its_count_in_its_row);
	tcase_add_test(tc, usage_of_many_volumes_at_once_is_each_ones_usage);
	tcase_add_test(tc, first_writes_into_blocks_of_several_chunks_keep_the_rest);
	tcase_add_test(tc, snapshot_of_snapshot_keeps_each_generation);
	tcase_add_test(tc, removing_a_snapshot_frees_only_its_own_blocks_after_commit);
	tcase_add_test(tc, a_removals_commit_leaves_the_rows_of_its_dead_pages_to_the_next);
	tcase_add_test(tc, a_copied_map_takes_the_row_of_the_removed_volume_it_was_copied_from);
	tcase_add_test(tc, a_map_a_removal_unshared_is_not_written_in_place_before_its_commit);
	tcase_add_test(tc, sharing_blocks_maps_the_source_and_frees_what_was_replaced);
	tcase_add_test(tc, full_pool_fails_with_enospc_keeps_data_and_grows);
	tcase_add_test(tc, each_time_the_pool_fills_is_counted_even_if_nobody_looked);
	tcase_add_test(tc, discard_unmaps_whole_blocks_and_zeroes_partial_ones);
	tcase_add_test(tc, diff_names_exactly_the_blocks_written_after_the_snapshot);
	tcase_add_test(tc, committed_maps_reload_with_the_same_data_and_counts);
	tcase_add_test(tc, the_garbage_walk_deletes_pages_no_volume_reaches_damaged_ones_too);
	tcase_add_test(tc, the_walk_of_an_unloaded_pool_finds_them_from_the_directories);
	tcase_add_test(tc, a_walk_over_leaves_of_several_pages_finds_and_counts_each);
	tcase_add_test(tc, check_finds_a_shared_block_at_two_virtual_blocks);
	tcase_add_test(tc, failed_commits_change_nothing_and_a_retry_writes_it_all);
	tcase_add_test(tc, racing_first_writes_to_one_block_allocate_it_once);
	tcase_add_test(tc, external_origin_shows_through_and_is_copied_on_first_write);
	tcase_add_test(tc, a_first_write_failing_after_the_allocator_waited_gives_its_block_back);
	tcase_add_test(tc, seek_shows_the_holes_of_the_external_origin);
	tcase_add_test(tc, a_block_is_a_hole_only_if_its_device_holds_no_data_in_it_in_any_area);
	suite_add_tcase(suite, tc);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(thin_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
