/*
 * core/thin/thin_pool.c: a thin pool's data area, its page bookkeeping and
 * its commits.
 *
 * Metadata is committed lazily, as dm-thin does.  A write to a new block
 * goes to a block that no committed mapping references, so it need not
 * wait for a commit: if the daemon dies first, the block is simply free
 * again.  On fsync, about once a second (the worker), and after every
 * admin change, the pool
 *
 *   1. gathers, under the lock, every page changed since the last commit
 *      and every block freed since then (they ride on this transaction),
 *   2. fdatasyncs every data device, so that each block the new mappings
 *      point at holds what was written to it (a device no write reached
 *      since its last flush is skipped: that flush covered everything,
 *      device.h; so an admin change on an idle pool flushes nothing),
 *   3. writes the pages in one SQLite transaction (the metadata port),
 *   4. and only then lets the blocks freed in it be allocated again.
 *
 * Step 4 is what keeps a crash from leaving two volumes on one block:
 * until the COMMIT, the last committed metadata may still map a freed
 * block, so it must keep its old content.  After a crash a volume shows
 * its last committed map plus the in-place overwrites made since.
 *
 * Reference counts are derived, not stored (thin_meta.h): at start-up the
 * pool counts, per data block, the distinct leaves mapping it; per leaf,
 * the distinct directories; per directory, the volumes.  So a commit only
 * writes pages, and a snapshot writes one row.
 *
 * A commit that fails changes nothing: what it gathered goes back on the
 * lists (pages marked dirty again, dead pages and freed blocks pending
 * again), and the worker tries again with back-off, so a transient cause
 * (another process holding the database's write lock, a full file system
 * that gets space again) costs a delay, never a restart.  An fsync waits
 * for a commit up to THIN_COMMIT_PATIENCE_MS.  Only when commits have
 * failed for that long does the pool fail writes that need new blocks
 * (-EIO, like dm-thin's fail mode: acknowledging writes whose mappings
 * cannot be made durable would be lying); the first commit that succeeds
 * clears that.
 *
 * Admin changes (create, snapshot, rollback, resize, remove of a volume)
 * hold off commits while they run (thin_pool_admin_begin): the pool first
 * commits what is pending, so the store shows exactly what memory holds;
 * the pool service then records the change in its own transaction and
 * makes memory match it.  The worker never commits half of such a change.
 */
#include "thin_pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bigmem.h"
#include "device.h"
#include "log.h"
#include "rcu.h"
#include "size.h"
#include "thin_int.h"
#include "thin_loader.h"
#include "writelog.h"

int thin_vec_push(struct thin_vec *v, void *p)
{
	if (v->nr == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 64;
		void **n = realloc(v->v, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		v->v = n;
		v->cap = cap;
	}
	v->v[v->nr++] = p;
	return 0;
}

void thin_vec_release(struct thin_vec *v)
{
	free(v->v);
	memset(v, 0, sizeof(*v));
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int check_params(const struct thin_pool_params *pp)
{
	if (!thin_block_size_ok(pp->block_size))
		return -EINVAL;
	if (pp->low_water_pct > 100)
		return -EINVAL;
	return 0;
}

/* Leaves' entries each pool keeps loaded, at most: thin_pool_set_cache_budget. */
static _Atomic uint64_t cache_budget = THIN_CACHE_DEFAULT;

void thin_pool_set_cache_budget(uint64_t bytes)
{
	atomic_store(&cache_budget, bytes);
}

static int load_space_chunk(void *ctx, const struct thin_space_rec *rec)
{
	return thin_alloc_space_load(ctx, rec);
}

/*
 * The block counts from the store's space map, and then the leaves load
 * on demand; if it is stale, the leaves load with the volumes and the
 * counts are derived from them at start (the next commit writes the whole
 * map).  0 or -errno.
 */
static int load_space(struct thin_pool *p)
{
	int r = p->meta->load_space ? p->meta->load_space(p->meta_arg, load_space_chunk,
							  &p->alloc) : 0;

	if (r == -EUCLEAN) {		/* as if stale: derived from the leaves */
		uint64_t nr = p->alloc.nr_blocks;

		log_warn("thin pool '%s': its space map is damaged; counting the blocks from its leaves",
			 p->name);
		thin_alloc_exit(&p->alloc);
		r = thin_alloc_init(&p->alloc, nr);
		if (r)
			return r;
	}
	if (r < 0)
		return r;
	p->leaves_on_demand = r == 1;
	if (!p->leaves_on_demand)
		thin_alloc_space_stale(&p->alloc);
	return 0;
}

/*
 * The loader's step (thin_loader.h): leaf @slot of @th's map, whatever
 * leaf its directory holds there now (none, or no directory: nothing to
 * do).  Takes the pool lock, blocks on the store.
 */
static int load_slot(struct thin *th, uint32_t slot)
{
	struct thin_pool *p = th->pool;
	struct thin_dir *d;
	int r = 0;

	pthread_mutex_lock(&p->lock);
	d = atomic_load(&th->dir);
	if (d && slot < d->nr) {
		struct thin_leaf *l = atomic_load(&d->leaf[slot]);

		if (l)
			r = thin_pool_leaf_load(p, l);
	}
	pthread_mutex_unlock(&p->lock);
	return r;
}

int thin_pool_open(const struct thin_pool_params *params, struct target *data,
		   uint64_t data_bytes, const struct thin_meta_ops *meta, void *meta_arg,
		   struct thin_pool **out)
{
	struct thin_pool *p;
	int r;

	r = check_params(params);
	if (r)
		return r;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->params = *params;
	p->name = strdup(params->name ? params->name : "thin-pool");
	p->params.name = p->name;
	p->block_shift = (uint8_t)__builtin_ctz(params->block_size);
	p->meta = meta;
	p->meta_arg = meta_arg;
	atomic_init(&p->data, data);
	if (!p->name) {
		r = -ENOMEM;
		goto err_free;
	}
	r = engine_init_shared(&p->engine, THIN_ENGINE_DEPTH);
	if (r)
		goto err_free;
	r = thin_alloc_init(&p->alloc, data_bytes >> p->block_shift);
	if (r)
		goto err_engine;
	r = meta->max_page_id(meta_arg, &p->next_page_id);
	if (!r)
		r = load_space(p);
	if (r)
		goto err_alloc;
	p->loader = thin_loader_new(load_slot);
	if (!p->loader) {
		r = -ENOMEM;
		goto err_alloc;
	}
	p->next_page_id++;
	p->txn = 1;
	p->budget_leaves = atomic_load(&cache_budget) / THIN_LEAF_BYTES;
	atomic_init(&p->zero, params->zero);
	atomic_init(&p->committed_txn, 0);
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->commit_lock, NULL);
	pthread_cond_init(&p->changed, NULL);
	pthread_cond_init(&p->grown, NULL);
	pthread_cond_init(&p->kick, NULL);
	*out = p;
	return 0;

err_alloc:
	thin_alloc_exit(&p->alloc);
err_engine:
	engine_exit(&p->engine);
err_free:
	free(p->name);
	free(p);
	return r;
}

/*
 * The load index: pages read so far by id, so that a page that several
 * volumes (or directories) share is loaded once and counted once.  Open
 * addressing, linear probing, at most half full; lives from
 * thin_pool_open to thin_pool_start.  At 1e8 blocks it holds 195,313
 * leaves: it grows once per directory, to what that directory needs
 * (thin_pool_load_reserve), not by doubling as leaves arrive, and lies on
 * huge pages (bigmem.h).
 */
static uint64_t hash_id(int64_t id)
{
	return (uint64_t)id * 0x9e3779b97f4a7c15ull;
}

static struct thin_load_entry *load_entry_of(struct thin_pool *p, int64_t id)
{
	size_t i = hash_id(id) & (p->load_cap - 1);

	while (p->load_index[i].id && p->load_index[i].id != id)
		i = (i + 1) & (p->load_cap - 1);
	return &p->load_index[i];
}

int thin_pool_load_find(struct thin_pool *p, int64_t id, bool leaf, void **page)
{
	struct thin_load_entry *s;

	*page = NULL;
	if (!p->load_cap)
		return 0;
	s = load_entry_of(p, id);
	if (!s->id)
		return 0;
	if ((s->page & 1) != leaf)
		return -EUCLEAN;
	*page = (void *)(s->page & ~(uintptr_t)1);
	return 0;
}

bool thin_pool_reaches(struct thin_pool *p, int64_t id, bool leaf)
{
	void *page;

	return !thin_pool_load_find(p, id, leaf, &page) && page;
}

void thin_pool_pages(struct thin_pool *p, uint64_t *dirs, uint64_t *leaves)
{
	pthread_mutex_lock(&p->lock);
	*dirs = p->nr_dirs;
	*leaves = p->nr_leaves;
	pthread_mutex_unlock(&p->lock);
}

int thin_pool_load_reserve(struct thin_pool *p, size_t n)
{
	struct thin_load_entry *old = p->load_index;
	size_t old_cap = p->load_cap, cap = old_cap ? old_cap : 1024;

	while (cap / 2 < p->load_nr + n)
		cap *= 2;
	if (cap == old_cap)
		return 0;
	p->load_index = bigmem_map(cap * sizeof(*old));
	if (!p->load_index) {
		p->load_index = old;
		return -ENOMEM;
	}
	p->load_cap = cap;
	for (size_t j = 0; j < old_cap; j++)
		if (old[j].id)
			*load_entry_of(p, old[j].id) = old[j];
	bigmem_unmap(old, old_cap * sizeof(*old));
	return 0;
}

int thin_pool_load_add(struct thin_pool *p, int64_t id, void *page, bool leaf)
{
	struct thin_load_entry *s;

	if (thin_pool_load_reserve(p, 1))
		return -ENOMEM;
	s = load_entry_of(p, id);
	*s = (struct thin_load_entry){ .id = id, .page = (uintptr_t)page | leaf };
	p->load_nr++;
	if (!leaf) {
		p->nr_dirs++;
		return 0;
	}
	p->nr_leaves++;
	/* Only a stale space map counts the blocks from the loaded leaves. */
	return p->leaves_on_demand ? 0 : thin_vec_push(&p->loaded_leaves, page);
}

static void load_index_free(struct thin_pool *p)
{
	bigmem_unmap(p->load_index, p->load_cap * sizeof(*p->load_index));
	p->load_index = NULL;
	p->load_cap = p->load_nr = 0;
	thin_vec_release(&p->loaded_leaves);
}

/*
 * Derives the block counts from the distinct leaves the loaded volumes
 * reach: what shares a block is leaves, not volumes.
 */
static int derive_block_refs(struct thin_pool *p, char *why, size_t len)
{
	for (size_t i = 0; i < p->loaded_leaves.nr; i++) {
		struct thin_leaf *l = p->loaded_leaves.v[i];

		for (unsigned int j = 0; j < THIN_LEAF_ENTRIES; j++) {
			uint32_t e = atomic_load_explicit(&l->e[j], memory_order_relaxed);

			if (!e)
				continue;
			if (e - 1 >= p->alloc.nr_blocks) {
				snprintf(why, len, "leaf %lld maps block %u, past the end of the pool (%llu blocks)",
					 (long long)l->id, e - 1,
					 (unsigned long long)p->alloc.nr_blocks);
				return -EUCLEAN;
			}
			thin_alloc_get(&p->alloc, e - 1);
		}
	}
	return 0;
}

static void *worker_main(void *arg);

int thin_pool_start(struct thin_pool *p, char *why, size_t len)
{
	int r;

	r = p->leaves_on_demand ? 0 : derive_block_refs(p, why, len);
	load_index_free(p);
	if (r)
		return r;
	if (!p->leaves_on_demand)	/* else the space map's load counted them */
		thin_alloc_loaded(&p->alloc);
	r = thin_loader_start(p->loader);
	if (r)
		return r;
	r = -pthread_create(&p->worker, NULL, worker_main, p);
	if (r) {
		thin_loader_stop(p->loader);
		return r;
	}
	p->worker_running = true;
	return 0;
}

int thin_pool_stop(struct thin_pool *p)
{
	thin_loader_stop(p->loader);	/* first: no read waits on a pool that stops */
	if (p->worker_running) {
		pthread_mutex_lock(&p->lock);
		p->stopping = true;
		pthread_cond_signal(&p->kick);
		pthread_mutex_unlock(&p->lock);
		pthread_join(p->worker, NULL);
		p->worker_running = false;
	}
	return thin_pool_commit(p);
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;

	return (x > y) - (x < y);
}

/*
 * Pages that never reached a commit: with every volume destroyed, what the
 * commit lists still hold has no reference left (a page may be on a
 * kind's two lists, so each is freed once).
 */
static void free_listed(struct thin_vec *a, struct thin_vec *b, void (*free_page)(void *))
{
	struct thin_vec all = { 0 };

	for (size_t i = 0; i < a->nr; i++)
		if (thin_vec_push(&all, a->v[i]))
			goto out;	/* leak rather than guess */
	for (size_t i = 0; i < b->nr; i++)
		if (thin_vec_push(&all, b->v[i]))
			goto out;
	if (all.nr)	/* all.v is NULL when nothing is uncommitted */
		qsort(all.v, all.nr, sizeof(*all.v), cmp_ptr);
	for (size_t i = 0; i < all.nr; i++)
		if (!i || all.v[i] != all.v[i - 1])
			free_page(all.v[i]);
out:
	thin_vec_release(&all);
}

static void free_leaf(void *l)
{
	thin_leaf_free(l);
}

static void free_uncommitted(struct thin_pool *p)
{
	free_listed(&p->dirty_leaves, &p->dead_leaves, free_leaf);
	free_listed(&p->dirty_dirs, &p->dead_dirs, free);
}

void thin_pool_close(struct thin_pool *p)
{
	if (!p)
		return;
	free_uncommitted(p);
	thin_loader_free(p->loader);
	thin_vec_release(&p->dirty_leaves);
	thin_vec_release(&p->dead_leaves);
	thin_vec_release(&p->dirty_dirs);
	thin_vec_release(&p->dead_dirs);
	thin_vec_release(&p->dirty_vols);
	free(p->late_leaf_rows.v);
	free(p->late_dir_rows.v);
	load_index_free(p);
	thin_alloc_exit(&p->alloc);
	engine_exit(&p->engine);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->commit_lock);
	pthread_cond_destroy(&p->changed);
	pthread_cond_destroy(&p->grown);
	pthread_cond_destroy(&p->kick);
	free(p->name);
	free(p);
}

int thin_pool_grow_check(struct thin_pool *p, uint64_t data_bytes)
{
	uint64_t n = data_bytes >> p->block_shift;
	int r = 0;

	pthread_mutex_lock(&p->lock);
	if (n > THIN_ALLOC_MAX_BLOCKS)
		r = -EFBIG;
	else if (n < p->alloc.nr_blocks)
		r = -EINVAL;
	pthread_mutex_unlock(&p->lock);
	return r;
}

void thin_pool_grow(struct thin_pool *p, uint64_t data_bytes)
{
	pthread_mutex_lock(&p->lock);
	/* checked by thin_pool_grow_check; the data target covers it already */
	thin_alloc_grow(&p->alloc, data_bytes >> p->block_shift);
	p->low_water = false;
	p->full = false;
	pthread_cond_broadcast(&p->grown);
	pthread_mutex_unlock(&p->lock);
}

/* Kicks the pool's watcher.  Lock held. */
static void notify(struct thin_pool *p)
{
	if (p->params.notify)
		p->params.notify(p->params.notify_arg);
}

/* Blocks free now or after the next commit (which a write waits for).  Lock held. */
static uint64_t nr_available(const struct thin_pool *p)
{
	return p->alloc.nr_free + p->alloc.pending.nr + p->alloc.committing.nr +
	       p->alloc.held.nr;
}

/* Another map page would pass the pool's metadata limit.  Lock held. */
static bool thin_pool_metadata_full(const struct thin_pool *p)
{
	return p->params.metadata_limit &&
	       (p->nr_leaves + p->nr_dirs + 1) * THIN_PAGE_STORE_BYTES > p->params.metadata_limit;
}

/* Space came back since a write found none.  Lock held. */
static void clear_full(struct thin_pool *p)
{
	if (!p->full)
		return;
	p->full = false;
	notify(p);
}

/*
 * Makes ->low_water, ->full and ->metadata_full follow the free space,
 * both ways: a block or page freed (remove, rollback, discard, a clone's
 * replaced blocks) clears them as an allocation sets them.  Crossing the
 * mark downwards logs once per crossing; each edge kicks the watcher.
 * Lock held.
 */
static void check_space(struct thin_pool *p)
{
	uint64_t avail = nr_available(p);
	uint64_t pct = p->alloc.nr_blocks ? avail * 100 / p->alloc.nr_blocks : 0;
	bool low = pct < p->params.low_water_pct;

	if (avail)
		clear_full(p);
	if (p->metadata_full && !thin_pool_metadata_full(p)) {
		p->metadata_full = false;
		notify(p);
	}
	if (low == p->low_water)
		return;
	p->low_water = low;
	notify(p);
	if (!low)
		return;
	p->raised.low_water++;
	log_warn("thin pool '%s' crossed its low-water mark: %llu of %llu blocks free (%u%% mark)",
		 p->name, (unsigned long long)avail,
		 (unsigned long long)p->alloc.nr_blocks, p->params.low_water_pct);
}

void thin_pool_usage(struct thin_pool *p, struct thin_pool_usage *out)
{
	pthread_mutex_lock(&p->lock);
	check_space(p);
	out->block_size = p->params.block_size;
	out->nr_blocks = p->alloc.nr_blocks;
	out->nr_free = p->alloc.nr_free;
	out->nr_pending = p->alloc.pending.nr + p->alloc.committing.nr + p->alloc.held.nr;
	out->nr_leaves = p->nr_leaves;
	out->nr_dirs = p->nr_dirs;
	out->cache_bytes = p->nr_resident * THIN_LEAF_BYTES;
	out->cache_budget = p->budget_leaves * THIN_LEAF_BYTES;
	out->cache_reserved = p->reserved_bytes;
	out->evictions = p->evictions;
	out->loads = p->loads;
	out->miss_waits = thin_loader_waits(p->loader);
	out->low_water = p->low_water;
	out->failed = atomic_load(&p->failed);
	out->commit_error = p->commit_error;
	out->failing_ms = p->commit_error ? now_ms() - p->failing_since_ms : 0;
	out->metadata_bytes = (p->nr_leaves + p->nr_dirs) * THIN_PAGE_STORE_BYTES;
	out->metadata_limit = p->params.metadata_limit;
	out->discarded_bytes = p->discarded_bytes;
	out->full = p->full;
	out->metadata_full = p->metadata_full;
	out->raised = p->raised;
	pthread_mutex_unlock(&p->lock);
}

static int64_t thin_pool_page_id(struct thin_pool *p)
{
	return p->next_page_id++;
}

int thin_pool_mark_leaf(struct thin_pool *p, struct thin_leaf *l)
{
	if (l->dirty)
		return 0;
	l->dirty = true;
	return thin_vec_push(&p->dirty_leaves, l);
}

static int thin_pool_mark_dir(struct thin_pool *p, struct thin_dir *d)
{
	if (d->dirty)
		return 0;
	d->dirty = true;
	return thin_vec_push(&p->dirty_dirs, d);
}

static int thin_pool_mark_vol(struct thin_pool *p, struct thin *t)
{
	for (size_t i = 0; i < p->dirty_vols.nr; i++)
		if (p->dirty_vols.v[i] == t)
			return 0;
	return thin_vec_push(&p->dirty_vols, t);
}

/* Leaf @id as committed, through the port's own connection if it has one. */
static int read_leaf(struct thin_pool *p, int64_t id, struct thin_leaf_rec *out)
{
	return (p->meta->fault_leaf ? p->meta->fault_leaf : p->meta->load_leaf)(p->meta_arg, id, out);
}

int thin_pool_leaf_load(struct thin_pool *p, struct thin_leaf *l)
{
	struct thin_leaf_rec *rec;
	int r;

	if (thin_leaf_resident(l))
		return 0;
	rec = malloc(sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	r = read_leaf(p, l->id, rec);
	for (unsigned int i = 0; !r && i < THIN_LEAF_ENTRIES; i++)
		if ((rec->map[i] & ~THIN_PROVISIONING) > p->alloc.nr_blocks)
			r = -EUCLEAN;	/* a block past the end of the pool */
	if (!r)
		r = thin_leaf_fill(l, rec);
	if (!r) {
		p->loads++;
		thin_pool_resident_added(p);
	}
	if (r)
		log_error("thin pool '%s': cannot load leaf %lld of its map: %s", p->name,
			  (long long)l->id, r == -EUCLEAN ? "it is damaged" : strerror(-r));
	free(rec);
	return r == -ENOMEM ? r : r ? -EIO : 0;
}

/* The leaves the cache may keep loaded: the budget less what walks reserved. */
static uint64_t cache_limit(const struct thin_pool *p)
{
	uint64_t reserved = (p->reserved_bytes + THIN_LEAF_BYTES - 1) / THIN_LEAF_BYTES;

	return reserved < p->budget_leaves ? p->budget_leaves - reserved : 0;
}

static bool over_budget(const struct thin_pool *p)
{
	return p->budget_leaves && p->nr_resident > cache_limit(p);
}

/*
 * Where a pass of evict() stops: a 64th under the limit, so that one
 * grace period (a membarrier: an interrupt on every CPU that runs a
 * request) and one wake-up of the worker serve that many misses, not
 * each its own.  A budget under 64 leaves is kept to the leaf.
 */
#define THIN_EVICT_SLACK_SHIFT	6

static bool above_low_water(const struct thin_pool *p)
{
	uint64_t limit = cache_limit(p);

	return p->budget_leaves && p->nr_resident > limit - (limit >> THIN_EVICT_SLACK_SHIFT);
}

void thin_pool_resident_added(struct thin_pool *p)
{
	p->nr_resident++;
	if (over_budget(p) && p->worker_running && !p->kicked) {
		p->kicked = true;	/* the worker unloads some: evict() */
		pthread_cond_signal(&p->kick);
	}
}

int thin_pool_leaf_peek(struct thin_pool *p, struct thin_leaf *l, struct thin_leaf_rec *out)
{
	int r;

	if (thin_leaf_resident(l)) {
		thin_leaf_record(l, out);
		return 0;
	}
	r = read_leaf(p, l->id, out);
	return r == -ENOMEM ? r : r ? -EIO : 0;
}

int thin_pool_entry(struct thin_pool *p, struct thin_dir *d, uint64_t vb, uint32_t *e)
{
	struct thin_leaf *l;
	int r;

	*e = 0;
	if (!d || vb / THIN_LEAF_ENTRIES >= d->nr)
		return 0;
	l = atomic_load(&d->leaf[vb / THIN_LEAF_ENTRIES]);
	if (!l)
		return 0;
	r = thin_pool_leaf_load(p, l);
	if (!r)
		*e = atomic_load(&l->e[vb % THIN_LEAF_ENTRIES]);
	return r;
}

int thin_pool_put_leaf(struct thin_pool *p, struct thin_leaf *l)
{
	struct thin_leaf_rec rec;
	int r = 0;

	/* Counts change under the lock only; mark before the drop shows. */
	if (atomic_load_explicit(&l->refs, memory_order_relaxed) > 1) {
		atomic_store_explicit(&l->dropped, p->txn, memory_order_relaxed);
		atomic_fetch_sub_explicit(&l->refs, 1, memory_order_release);
		return 0;
	}
	atomic_store_explicit(&l->refs, 0, memory_order_release);
	/*
	 * Read, not loaded: removing a volume puts every leaf it alone had,
	 * and the budget would not hold loads kept until the commit.  Entries
	 * that cannot be read keep their blocks: a leak, not a double owner.
	 */
	if (thin_leaf_resident(l))
		p->nr_resident--;	/* dead: freed after the commit, not evicted */
	r = thin_pool_leaf_peek(p, l, &rec);
	for (unsigned int i = 0; !r && i < THIN_LEAF_ENTRIES; i++)
		if (rec.map[i])
			thin_alloc_put(&p->alloc, rec.map[i] - 1);
	p->nr_leaves--;
	return thin_vec_push(&p->dead_leaves, l) ? -ENOMEM : r;
}

int thin_pool_put_dir(struct thin_pool *p, struct thin_dir *d)
{
	int r = 0;

	if (atomic_load_explicit(&d->refs, memory_order_relaxed) > 1) {
		atomic_store_explicit(&d->dropped, p->txn, memory_order_relaxed);
		atomic_fetch_sub_explicit(&d->refs, 1, memory_order_release);
		return 0;
	}
	atomic_store_explicit(&d->refs, 0, memory_order_release);
	for (uint32_t i = 0; i < d->nr; i++) {
		struct thin_leaf *l = atomic_load_explicit(&d->leaf[i], memory_order_relaxed);

		if (l && !r)
			r = thin_pool_put_leaf(p, l);
	}
	p->nr_dirs--;
	return thin_vec_push(&p->dead_dirs, d) ? -ENOMEM : r;
}

/*
 * A write needs a map page that would pass the limit: -ENOSPC, as dm-thin
 * fails a write when its metadata is full, and the pool's watcher is told
 * once per filling (its "metadata-full" event).  Lock held.
 */
static int thin_pool_no_metadata_space(struct thin_pool *p)
{
	char limit[SIZE_STR_LEN];

	if (!p->metadata_full) {
		p->metadata_full = true;
		p->raised.metadata_full++;
		notify(p);
		log_warn("thin pool '%s': its metadata is full (%llu map pages, limit %s): writes needing a new map page fail",
			 p->name, (unsigned long long)(p->nr_leaves + p->nr_dirs),
			 format_size(p->params.metadata_limit, limit));
	}
	return -ENOSPC;
}

int thin_pool_own_leaf(struct thin_pool *p, struct thin *th, uint64_t vb,
		       struct thin_leaf **out)
{
	struct thin_dir *d = atomic_load(&th->dir);
	uint32_t i = (uint32_t)(vb / THIN_LEAF_ENTRIES);
	struct thin_leaf *l;
	int r;

	if (!d)
		return -EIO;
	if (!thin_dir_alone(p, d)) {
		struct thin_dir *nd;

		if (thin_pool_metadata_full(p))
			return thin_pool_no_metadata_space(p);
		nd = thin_dir_copy(d, thin_pool_page_id(p), d->nr);

		if (!nd)
			return -ENOMEM;
		if (!d->dirty && !d->committing && !d->write_whole) {
			nd->source = d->id;	/* its row has @d: adopt_dead_sources */
			nd->stored_mapped = d->stored_mapped;
			nd->mapped_in_store = d->mapped_in_store;
		}
		p->nr_dirs++;
		rcu_publish(th->dir, nd);
		r = thin_pool_put_dir(p, d);
		r = r ? r : thin_pool_mark_dir(p, nd);
		r = r ? r : thin_pool_mark_vol(p, th);
		if (r)
			return r;
		d = nd;
	}
	l = atomic_load(&d->leaf[i]);
	r = l ? thin_pool_leaf_load(p, l) : 0;
	if (r)
		return r;
	if ((!l || !thin_leaf_alone(p, l)) && thin_pool_metadata_full(p))
		return thin_pool_no_metadata_space(p);	/* dm-thin: metadata space exhausted */
	if (!l || !thin_leaf_alone(p, l))
		p->metadata_full = false;	/* a new page fits again */
	if (!l) {
		l = thin_leaf_new(thin_pool_page_id(p));
		if (!l)
			return -ENOMEM;
		p->nr_leaves++;
		thin_pool_resident_added(p);
		atomic_store_explicit(&d->leaf[i], l, memory_order_release);
		thin_dir_slot_changed(d, i);
		r = thin_pool_mark_leaf(p, l);
		r = r ? r : thin_pool_mark_dir(p, d);
		if (r)
			return r;
	} else if (!thin_leaf_alone(p, l)) {
		struct thin_leaf *nl = thin_leaf_copy(l, thin_pool_page_id(p));

		if (!nl)
			return -ENOMEM;
		p->nr_leaves++;
		thin_pool_resident_added(p);
		for (unsigned int j = 0; j < THIN_LEAF_ENTRIES; j++) {
			uint32_t e = atomic_load_explicit(&nl->e[j], memory_order_relaxed);

			if (e)
				thin_alloc_get(&p->alloc, e - 1);
		}
		atomic_store_explicit(&d->leaf[i], nl, memory_order_release);
		thin_dir_slot_changed(d, i);
		r = thin_pool_put_leaf(p, l);
		r = r ? r : thin_pool_mark_leaf(p, nl);
		r = r ? r : thin_pool_mark_dir(p, d);
		if (r)
			return r;
		l = nl;
	}
	*out = l;
	return 0;
}

static void deadline_in(struct timespec *ts, uint32_t ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

int thin_pool_new_block(struct thin_pool *p, uint32_t *b)
{
	bool committed = false, waited = false;
	struct timespec deadline;

	for (;;) {
		int r;

		if (atomic_load(&p->failed))
			return -EIO;
		r = thin_alloc_new(&p->alloc, b);
		if (!r) {
			clear_full(p);	/* the block it found was freed since */
			check_space(p);
			return 0;
		}
		if (!committed && p->alloc.pending.nr + p->alloc.committing.nr +
				  p->alloc.held.nr) {
			/* Freed blocks are one commit away from free. */
			committed = true;
			pthread_mutex_unlock(&p->lock);
			r = thin_pool_commit(p);
			pthread_mutex_lock(&p->lock);
			if (r)
				return r;
			continue;
		}
		if (!p->full) {
			p->full = true;
			p->raised.full++;
			notify(p);
		}
		if (p->params.when_full == THIN_FULL_ERROR || waited)
			return -ENOSPC;
		if (!p->params.wait_s)
			return -ENOSPC;
		log_warn("thin pool '%s' is full: a write waits up to %u s for it to grow",
			 p->params.name, p->params.wait_s);
		deadline_in(&deadline, p->params.wait_s * 1000);
		while (!waited && p->alloc.nr_free == 0 && p->params.when_full == THIN_FULL_WAIT)
			if (pthread_cond_timedwait(&p->grown, &p->lock, &deadline) == ETIMEDOUT)
				waited = true;
		waited = true;
	}
}

void thin_pool_link(struct thin_pool *p, struct thin *t)
{
	t->next = p->vols;
	t->pprev = &p->vols;
	if (p->vols)
		p->vols->pprev = &t->next;
	p->vols = t;
}

/* O(1) off the list (a pool closing unlinks every volume), O(dirty volumes). */
void thin_pool_unlink(struct thin_pool *p, struct thin *t)
{
	if (t->pprev) {
		*t->pprev = t->next;
		if (t->next)
			t->next->pprev = t->pprev;
		t->next = NULL;
		t->pprev = NULL;
	}
	for (size_t i = 0; i < p->dirty_vols.nr; i++) {
		if (p->dirty_vols.v[i] == t) {
			p->dirty_vols.v[i] = p->dirty_vols.v[--p->dirty_vols.nr];
			break;
		}
	}
}

void thin_pool_kick(struct thin_pool *p)
{
	pthread_mutex_lock(&p->lock);
	p->kicked = true;
	pthread_cond_signal(&p->kick);
	pthread_mutex_unlock(&p->lock);
}

/* What one commit writes, gathered under the lock. */
struct batch {
	struct thin_leaf_rec *leaves;
	struct thin_dir_rec *dirs;
	uint64_t **dirs_changed;	/* per dir: its chunks to write, NULL: all */
	struct thin_vol_rec *vols;
	struct thin_dir_mapped *dir_mapped;
	struct thin_vec mapped_dirs;	/* their pages: counts unwritten on failure */
	int64_t *dead_leaf_ids, *dead_dir_ids;
	struct thin_vec leaf_pages, dir_pages;	/* written: dirty again on failure */
	struct thin_vec dead_leaves, dead_dirs;	/* freed after the commit */
	bool leave_dead_rows;		/* their rows to the next commit (thin_pool_admin_end_commit) */
	size_t late_leaves, late_dirs;	/* the late rows' lists before it: ungather */
	uint64_t txn;			/* the transaction this is */
	bool space_stale;		/* the store's answer: its space map is stale */
	struct thin_commit c;
};

static void batch_release(struct batch *b)
{
	for (size_t i = 0; i < b->c.nr_dirs; i++) {
		free(b->dirs[i].leaves);
		free(b->dirs_changed[i]);
	}
	free(b->leaves);
	free(b->dirs);
	free(b->dirs_changed);
	free(b->vols);
	free(b->dir_mapped);
	thin_vec_release(&b->mapped_dirs);
	free(b->dead_leaf_ids);
	free(b->dead_dir_ids);
	thin_vec_release(&b->leaf_pages);
	thin_vec_release(&b->dir_pages);
	thin_vec_release(&b->dead_leaves);
	thin_vec_release(&b->dead_dirs);
}

/* Nothing for the store: the commit is only the devices' flush. */
static bool batch_empty(const struct batch *b)
{
	return !b->c.nr_leaves && !b->c.nr_dirs && !b->c.nr_vols && !b->c.nr_dir_mapped &&
	       !b->c.nr_dead_leaves && !b->c.nr_dead_dirs && !b->c.nr_space;
}

static void *alloc_n(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static int ids_push(struct thin_ids *ids, int64_t id)
{
	if (ids->nr == ids->cap) {
		size_t cap = ids->cap ? 2 * ids->cap : 64;
		int64_t *v = realloc(ids->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ids->v = v;
		ids->cap = cap;
	}
	ids->v[ids->nr++] = id;
	return 0;
}

/*
 * The rows of pages that died: deleted by this commit with those earlier
 * ones left (@late, emptied; ungather puts the count back), or left on
 * @late too.  Lock held.
 */
static int gather_dead_rows(struct batch *b, const struct thin_vec *dead, int64_t id_of(void *),
			    struct thin_ids *late, int64_t **ids, size_t *nr)
{
	*ids = alloc_n(late->nr + dead->nr, sizeof(**ids));
	if (!*ids)
		return -ENOMEM;
	if (b->leave_dead_rows) {
		for (size_t i = 0; i < dead->nr; i++)
			if (ids_push(late, id_of(dead->v[i])))
				return -ENOMEM;
		return 0;
	}
	if (late->nr)		/* late->v is NULL until a first push */
		memcpy(*ids, late->v, late->nr * sizeof(**ids));
	*nr = late->nr;
	late->nr = 0;
	for (size_t i = 0; i < dead->nr; i++)
		(*ids)[(*nr)++] = id_of(dead->v[i]);
	return 0;
}

static int64_t leaf_id(void *page)
{
	return ((struct thin_leaf *)page)->id;
}

static int64_t dir_id(void *page)
{
	return ((struct thin_dir *)page)->id;
}

static int gather_leaves(struct thin_pool *p, struct batch *b)
{
	for (size_t i = 0; i < p->dirty_leaves.nr; i++) {
		struct thin_leaf *l = p->dirty_leaves.v[i];

		l->dirty = false;
		if (!atomic_load(&l->refs))
			continue;
		l->committing = true;
		if (thin_vec_push(&b->leaf_pages, l))
			return -ENOMEM;
		thin_leaf_record(l, &b->leaves[b->c.nr_leaves++]);
	}
	return 0;
}

/*
 * A copied directory whose original died before the copy was first
 * written takes the original's row: the two trade ids, so the commit
 * updates that row in place, which writes only the database pages whose
 * slots changed (a snapshot removed after writes to its origin: a few
 * pages, not the 1.5 MB copy of a 1e8-block map), and deletes the id the
 * copy had, which the store never had.  No volume holds the original
 * (its count is 0); a store row that names it is a removed volume's,
 * deleted already, or one this commit writes: the copy's volume's, marked
 * with the copy (thin_pool_own_leaf), which names the same id again.
 * O(dirty x dead directories).  Lock held.
 */
static void adopt_dead_sources(struct thin_pool *p)
{
	for (size_t i = 0; i < p->dirty_dirs.nr; i++) {
		struct thin_dir *d = p->dirty_dirs.v[i];

		for (size_t j = 0; d->source && j < p->dead_dirs.nr; j++) {
			struct thin_dir *dead = p->dead_dirs.v[j];

			if (dead->id == d->source && atomic_load(&d->refs)) {
				dead->id = d->id;
				d->id = d->source;
				d->write_whole = d->nr != dead->nr;
				break;
			}
		}
		d->source = 0;
	}
}

/*
 * The record of every dirty directory: all its slots, or only the chunks
 * that changed since its row was written (the rest of rec->leaves stays
 * unset), which at 1e8 blocks is a few of 382 chunks, and its mapped
 * count only if that changed (an UPDATE of the count builds the whole
 * 1.5 MB record again: 10 ms).  Clears the changed bits: a failed commit
 * has the next one write it whole (ungather).
 */
static int gather_dirs(struct thin_pool *p, struct batch *b)
{
	for (size_t i = 0; i < p->dirty_dirs.nr; i++) {
		struct thin_dir *d = p->dirty_dirs.v[i];
		struct thin_dir_rec *rec = &b->dirs[b->c.nr_dirs];
		size_t words = thin_dir_changed_words(d->nr);
		uint64_t *changed = NULL;

		d->dirty = false;
		if (!atomic_load(&d->refs))
			continue;
		d->committing = true;
		if (d->write_whole)	/* gather_mapped puts it in the row */
			d->mapped_in_store = false;
		rec->id = d->id;
		rec->nr = d->nr;
		rec->leaves = alloc_n(d->nr, sizeof(*rec->leaves));
		if (!d->write_whole) {
			changed = malloc(words * sizeof(*changed));
			if (changed)
				memcpy(changed, d->changed, words * sizeof(*changed));
		}
		if (!rec->leaves || (!d->write_whole && !changed) ||
		    thin_vec_push(&b->dir_pages, d)) {
			free(changed);
			return -ENOMEM;
		}
		memset(d->changed, 0, words * sizeof(*d->changed));
		b->dirs_changed[b->c.nr_dirs++] = changed;
		for (uint32_t c = 0; c * THIN_DIR_CHUNK < d->nr; c++) {
			uint32_t end = c * THIN_DIR_CHUNK + THIN_DIR_CHUNK;

			if (changed && !thin_dir_chunk_changed(changed, c))
				continue;
			for (uint32_t j = c * THIN_DIR_CHUNK; j < end && j < d->nr; j++) {
				struct thin_leaf *l = atomic_load(&d->leaf[j]);

				rec->leaves[j] = l ? l->id : 0;
			}
		}
	}
	return 0;
}

/* The record gather_dirs made of @d, which this batch writes. */
static struct thin_dir_rec *gathered_rec(struct batch *b, const struct thin_dir *d)
{
	for (size_t i = 0; i < b->c.nr_dirs; i++)
		if (b->dirs[i].id == d->id)
			return &b->dirs[i];
	return NULL;
}

/*
 * The mapped counts of directories that changed since the store last had
 * them: one per directory, from the first of its volumes (all of them map
 * the same).  A directory this batch writes carries its count in its row:
 * a separate UPDATE would rewrite the whole row (a 1e8-block map's is
 * 1.5 MB), as the row grows by the count's bytes.  After gather_dirs.
 * O(volumes x directories written).
 */
static int gather_mapped(struct thin_pool *p, struct batch *b)
{
	size_t n = 0;

	for (struct thin *t = p->vols; t; t = t->next)
		n++;
	b->dir_mapped = alloc_n(n, sizeof(*b->dir_mapped));
	if (!b->dir_mapped)
		return -ENOMEM;
	for (struct thin *t = p->vols; t; t = t->next) {
		struct thin_dir *d = atomic_load(&t->dir);
		uint64_t mapped = atomic_load(&t->mapped);
		struct thin_dir_rec *rec;

		if (!d || !atomic_load(&d->refs) ||
		    (d->mapped_in_store && d->stored_mapped == mapped))
			continue;
		rec = d->committing ? gathered_rec(b, d) : NULL;	/* written here */
		if (thin_vec_push(&b->mapped_dirs, d))
			return -ENOMEM;
		if (rec) {
			rec->mapped_known = true;
			rec->mapped = mapped;
		} else {
			b->dir_mapped[b->c.nr_dir_mapped++] =
				(struct thin_dir_mapped){ d->id, mapped };
		}
		d->stored_mapped = mapped;
		d->mapped_in_store = true;
	}
	return 0;
}

static int gather(struct thin_pool *p, struct batch *b)
{
	b->late_leaves = p->late_leaf_rows.nr;
	b->late_dirs = p->late_dir_rows.nr;
	if (thin_alloc_space_gather(&p->alloc))	/* first: it changes nothing if it fails */
		return -ENOMEM;
	b->c.space = p->alloc.space;
	b->c.nr_space = p->alloc.nr_space;
	b->c.space_whole = p->alloc.space_gathered_whole;
	b->c.space_stale = &b->space_stale;
	b->leaves = alloc_n(p->dirty_leaves.nr, sizeof(*b->leaves));
	b->dirs = alloc_n(p->dirty_dirs.nr, sizeof(*b->dirs));
	b->dirs_changed = alloc_n(p->dirty_dirs.nr, sizeof(*b->dirs_changed));
	b->vols = alloc_n(p->dirty_vols.nr, sizeof(*b->vols));
	adopt_dead_sources(p);
	if (!b->leaves || !b->dirs || !b->dirs_changed || !b->vols ||
	    gather_leaves(p, b) || gather_dirs(p, b) || gather_mapped(p, b) ||
	    gather_dead_rows(b, &p->dead_leaves, leaf_id, &p->late_leaf_rows,
			     &b->dead_leaf_ids, &b->c.nr_dead_leaves) ||
	    gather_dead_rows(b, &p->dead_dirs, dir_id, &p->late_dir_rows,
			     &b->dead_dir_ids, &b->c.nr_dead_dirs))
		return -ENOMEM;
	for (size_t i = 0; i < p->dirty_vols.nr; i++) {
		struct thin *t = p->dirty_vols.v[i];
		struct thin_dir *d = atomic_load(&t->dir);

		b->vols[b->c.nr_vols++] = (struct thin_vol_rec){ t->volume, d ? d->id : 0 };
	}
	b->dead_leaves = p->dead_leaves;
	b->dead_dirs = p->dead_dirs;
	memset(&p->dead_leaves, 0, sizeof(p->dead_leaves));
	memset(&p->dead_dirs, 0, sizeof(p->dead_dirs));
	p->dirty_leaves.nr = 0;
	p->dirty_dirs.nr = 0;
	p->dirty_vols.nr = 0;
	thin_alloc_gather(&p->alloc);
	b->txn = p->txn++;

	b->c.leaves = b->leaves;
	b->c.dirs = b->dirs;
	b->c.dirs_changed = (const uint64_t *const *)b->dirs_changed;
	b->c.vols = b->vols;
	b->c.dir_mapped = b->dir_mapped;
	b->c.dead_leaves = b->dead_leaf_ids;
	b->c.dead_dirs = b->dead_dir_ids;
	return 0;
}

/*
 * The commit did not happen: everything it gathered goes back, so the
 * next one writes it (pages that died meanwhile are on the dead lists).
 * Lock held.  -ENOMEM leaks pages or blocks, safely: never a double owner.
 */
static int ungather(struct thin_pool *p, struct batch *b)
{
	int r = 0;

	for (size_t i = 0; i < b->leaf_pages.nr; i++) {
		struct thin_leaf *l = b->leaf_pages.v[i];

		if (atomic_load(&l->refs) && !r)
			r = thin_pool_mark_leaf(p, l);
	}
	for (size_t i = 0; i < b->dir_pages.nr; i++) {
		struct thin_dir *d = b->dir_pages.v[i];

		d->write_whole = true;	/* its changed bits went with the batch */
		if (atomic_load(&d->refs) && !r)
			r = thin_pool_mark_dir(p, d);
	}
	for (size_t i = 0; i < b->mapped_dirs.nr; i++)
		((struct thin_dir *)b->mapped_dirs.v[i])->mapped_in_store = false;
	for (size_t i = 0; i < b->c.nr_vols && !r; i++)
		for (struct thin *t = p->vols; t; t = t->next)
			if (t->volume == b->vols[i].volume && atomic_load(&t->dir))
				r = thin_pool_mark_vol(p, t);
	for (size_t i = 0; i < b->dead_leaves.nr && !r; i++)
		r = thin_vec_push(&p->dead_leaves, b->dead_leaves.v[i]);
	for (size_t i = 0; i < b->dead_dirs.nr && !r; i++)
		r = thin_vec_push(&p->dead_dirs, b->dead_dirs.v[i]);
	b->dead_leaves.nr = b->dead_dirs.nr = 0;	/* not freed: back on the lists */
	p->late_leaf_rows.nr = b->late_leaves;
	p->late_dir_rows.nr = b->late_dirs;
	thin_alloc_space_done(&p->alloc, false, false);
	thin_alloc_abandoned(&p->alloc);
	return r;
}

/* Pages of @b are off the commit lists again.  Lock held. */
static void settle_pages(struct batch *b, bool committed)
{
	for (size_t i = 0; i < b->leaf_pages.nr; i++)
		((struct thin_leaf *)b->leaf_pages.v[i])->committing = false;
	for (size_t i = 0; i < b->dir_pages.nr; i++) {
		struct thin_dir *d = b->dir_pages.v[i];

		d->committing = false;
		if (committed)
			d->write_whole = false;	/* the store has its row now */
	}
}

/* Makes every completed write to the data area durable.  commit_lock held. */
static int sync_data(struct thin_pool *p)
{
	struct target *d = atomic_load(&p->data);	/* set_data waits for commit_lock */
	int r = d->ops->flush(d, &p->engine);

	if (r)
		log_error("thin pool '%s': cannot flush its data area: %s", p->name,
			  strerror(-r));
	return r ? -EIO : 0;
}

/* Records the outcome of a commit in the pool's failure state.  Lock held. */
static void note_outcome(struct thin_pool *p, int r)
{
	if (!r) {
		if (p->commit_error)
			log_info("thin pool '%s': metadata commits work again", p->name);
		if (atomic_load(&p->failed))
			notify(p);
		p->commit_error = 0;
		atomic_store(&p->failed, false);
		return;
	}
	if (!p->commit_error) {
		p->failing_since_ms = now_ms();
		log_warn("thin pool '%s': metadata commit failed (%s); retrying",
			 p->name, strerror(-r));
	}
	p->commit_error = r;
	if (!atomic_load(&p->failed) &&
	    now_ms() - p->failing_since_ms >= THIN_COMMIT_PATIENCE_MS) {
		atomic_store(&p->failed, true);
		p->raised.failed++;
		notify(p);
		log_error("thin pool '%s': metadata commits have failed for %u s (%s); writes that need new blocks fail until one succeeds",
			  p->name, THIN_COMMIT_PATIENCE_MS / 1000, strerror(-r));
	}
}

/*
 * Steps 2 and 3: the data, then the metadata that points at it.  A power-
 * cut test may turn the order round on purpose (writelog.h) to prove it
 * notices.
 */
static int make_durable(struct thin_pool *p, struct batch *b)
{
	int r;

	if (batch_empty(b))
		return sync_data(p);
	if (writelog_broken(WRITELOG_BREAK_COMMIT_BEFORE_FLUSH)) {
		r = p->meta->commit(p->meta_arg, &b->c);
		return r ? r : sync_data(p);
	}
	r = sync_data(p);
	return r ? r : p->meta->commit(p->meta_arg, &b->c);
}

/* No slow-path write in flight in any volume of the pool.  Lock held. */
static bool settled(const struct thin_pool *p)
{
	for (const struct thin *t = p->vols; t; t = t->next)
		if (t->provisioning)
			return false;
	return true;
}

/*
 * Copies the block counts as the commit being gathered will leave them:
 * once no block is being provisioned (an allocated block that no leaf
 * maps yet), they are exactly the counts of the committed pages.  Waits
 * up to a second for that.  Lock held.  0, -EBUSY, -ENOMEM.
 */
static int snapshot_counts(struct thin_pool *p, struct thin_pool_counts *out)
{
	struct timespec deadline;

	deadline_in(&deadline, 1000);
	while (!settled(p))
		if (pthread_cond_timedwait(&p->changed, &p->lock, &deadline) == ETIMEDOUT)
			return -EBUSY;
	out->nr_blocks = p->alloc.nr_blocks;
	out->nr_free = p->alloc.nr_free;
	return thin_alloc_copy_counts(&p->alloc, &out->refs, &out->pending, &out->nr_pending);
}

/* ---- discard passdown ---------------------------------------------------- */

/* A piece of the data area to discard. */
/* Discards blocks [@first, @first + @n) and counts them.  p->lock not held.  0 or -errno. */
static int discard_run(struct thin_pool *p, struct target *data, uint64_t first, uint64_t n,
		       uint64_t *done)
{
	uint64_t len = n << p->block_shift;
	int r = data->ops->discard(data, &p->engine, first << p->block_shift, len, DISCARD_UNMAP);

	if (r)
		return r;
	/* Counted as each is done: status agrees with du meanwhile. */
	pthread_mutex_lock(&p->lock);
	p->discarded_bytes += len;
	pthread_mutex_unlock(&p->lock);
	*done += len;
	return 0;
}

/*
 * Discards the blocks the allocator holds, runs of neighbours merged, and
 * lets them go, adding the bytes discarded to *done.  Called with
 * p->commit_lock held and p->lock not: nothing else changes the held set
 * meanwhile (thin_alloc_hold_committed).  A failure loses only the
 * discard: the blocks are free either way.
 */
static int discard_held(struct thin_pool *p, uint64_t *done)
{
	struct target *data = atomic_load(&p->data);	/* set_data waits for commit_lock */
	struct thin_blocks_walk w = THIN_BLOCKS_WALK_INIT;
	uint64_t word, mask, first = 0, n = 0;
	int r = 0;

	while (!r && thin_blocks_next(&p->alloc.held, &w, &word, &mask)) {
		if (mask == ~0ull && n && first + n == word * 64) {
			n += 64;	/* a whole word extends the run */
			continue;
		}
		for (; mask && !r; mask &= mask - 1) {
			uint64_t b = word * 64 + (uint64_t)__builtin_ctzll(mask);

			if (n && first + n == b) {
				n++;
				continue;
			}
			if (n)
				r = discard_run(p, data, first, n, done);
			first = b;
			n = 1;
		}
	}
	if (!r && n)
		r = discard_run(p, data, first, n, done);
	pthread_mutex_lock(&p->lock);
	if (r && !p->discard_failed) {
		p->discard_failed = true;
		log_warn("thin pool '%s': cannot discard freed blocks on the raw devices: %s",
			 p->name, strerror(-r));
	}
	thin_alloc_release(&p->alloc, !r);
	pthread_mutex_unlock(&p->lock);
	return r;
}

/*
 * Loaded leaves a commit must free for good (a removal's, a rollback's)
 * before it trims the slab: 1 MiB of entries.  Fewer are left for the
 * loads to reuse.
 */
#define THIN_TRIM_LEAVES	512u

/* One attempt.  p->commit_lock held. */
static int commit_locked(struct thin_pool *p, struct thin_pool_counts *counts,
			 bool leave_dead_rows)
{
	struct batch b = { .leave_dead_rows = leave_dead_rows };
	uint64_t nr_held = 0, nr_loaded = 0;
	uint64_t discarded = 0;
	int r = 0;

	pthread_mutex_lock(&p->lock);
	if (counts)
		r = snapshot_counts(p, counts);
	if (r) {
		pthread_mutex_unlock(&p->lock);
		return r;
	}
	r = gather(p, &b);
	pthread_mutex_unlock(&p->lock);
	if (!r)
		r = make_durable(p, &b);
	/*
	 * Blocks this transaction freed become reusable, and pages that died
	 * are freed, only once every request that may still hold them is
	 * done: requests run their I/O inside an RCU read section (volume.c).
	 */
	if (!r)
		rcu_wait_readers();
	pthread_mutex_lock(&p->lock);
	settle_pages(&b, !r);
	if (!r) {
		atomic_store_explicit(&p->committed_txn, b.txn, memory_order_release);
		thin_alloc_space_done(&p->alloc, true, b.space_stale);
	}
	if (!r && p->params.discard_passdown) {
		nr_held = thin_alloc_hold_committed(&p->alloc);
		if (!nr_held)
			thin_alloc_release(&p->alloc, false);
	} else if (!r) {
		thin_alloc_committed(&p->alloc);
	} else {
		ungather(p, &b);
	}
	note_outcome(p, r);
	pthread_mutex_unlock(&p->lock);
	if (nr_held)
		discard_held(p, &discarded);
	for (size_t i = 0; i < b.dead_leaves.nr; i++) {
		struct thin_leaf *l = b.dead_leaves.v[i];

		nr_loaded += atomic_load_explicit(&l->e, memory_order_relaxed) != NULL;
		thin_leaf_free(l);
	}
	if (nr_loaded >= THIN_TRIM_LEAVES)
		thin_leaf_slab_trim();	/* a removed map's memory leaves the daemon */
	for (size_t i = 0; i < b.dead_dirs.nr; i++)
		free(b.dead_dirs.v[i]);
	batch_release(&b);
	if (r && counts)
		thin_pool_counts_release(counts);
	return r;
}

static int commit_once(struct thin_pool *p, struct thin_pool_counts *counts)
{
	int r;

	pthread_mutex_lock(&p->commit_lock);
	r = commit_locked(p, counts, false);
	pthread_mutex_unlock(&p->commit_lock);
	return r;
}

/* Back-off between attempts: 100 ms doubling to 2 s. */
static uint32_t backoff_ms(unsigned int attempt)
{
	return attempt >= 5 ? 2000 : 100u << attempt;
}

int thin_pool_commit(struct thin_pool *p)
{
	uint64_t start = now_ms();

	for (unsigned int attempt = 0;; attempt++) {
		struct timespec ts;
		uint32_t ms;
		int r = commit_once(p, NULL);

		if (!r)
			return 0;
		if (r == -ENOMEM || atomic_load(&p->failed) ||
		    now_ms() - start >= THIN_COMMIT_PATIENCE_MS)
			return -EIO;
		ms = backoff_ms(attempt);
		ts = (struct timespec){ ms / 1000, (long)(ms % 1000) * 1000000 };
		nanosleep(&ts, NULL);
	}
}

void thin_pool_counts_release(struct thin_pool_counts *c)
{
	thin_refs_exit(&c->refs);
	free(c->pending);
	memset(c, 0, sizeof(*c));
}

int thin_pool_admin_begin(struct thin_pool *p, struct thin_pool_counts *counts)
{
	int r;

	if (counts)
		memset(counts, 0, sizeof(*counts));
	pthread_mutex_lock(&p->commit_lock);
	r = commit_locked(p, counts, false);
	if (r)
		pthread_mutex_unlock(&p->commit_lock);
	return r;
}

void thin_pool_admin_hold(struct thin_pool *p)
{
	pthread_mutex_lock(&p->commit_lock);
}

void thin_pool_admin_end(struct thin_pool *p)
{
	pthread_mutex_unlock(&p->commit_lock);
	thin_pool_kick(p);
}

int thin_pool_admin_end_commit(struct thin_pool *p)
{
	int r = commit_locked(p, NULL, true);

	thin_pool_admin_end(p);		/* the worker deletes the rows at once */
	return r ? thin_pool_commit(p) : 0;
}

int64_t thin_pool_reserve_page_id(struct thin_pool *p)
{
	int64_t id;

	pthread_mutex_lock(&p->lock);
	id = thin_pool_page_id(p);
	pthread_mutex_unlock(&p->lock);
	return id;
}

/*
 * The whole blocks of device bytes [@from, @to), a hole, counted: the
 * range's blocks start at block @b0 at byte @base, of 1 << @shift bytes.
 */
static void count_hole(uint64_t base, uint64_t b0, uint8_t shift, uint64_t from,
		       uint64_t to, uint64_t *nr_holes, uint64_t *first_hole)
{
	uint64_t lo = (from - base + (1ull << shift) - 1) >> shift, hi = (to - base) >> shift;

	if (lo >= hi)
		return;
	if (!*nr_holes)
		*first_hole = b0 + lo;
	*nr_holes += hi - lo;
}

int thin_pool_holes(struct thin_pool *p, uint64_t first, uint64_t n, uint64_t *nr_holes,
		    uint64_t *first_hole)
{
	uint64_t nr_blocks, base = first << p->block_shift, end, pos = base, data, size;
	struct target *d;
	int r = 0;

	pthread_mutex_lock(&p->lock);
	nr_blocks = p->alloc.nr_blocks;
	pthread_mutex_unlock(&p->lock);
	if (first > nr_blocks || n > nr_blocks - first)
		return -EINVAL;
	size = nr_blocks << p->block_shift;
	end = (first + n) << p->block_shift;
	d = thin_data_get(p);
	while (pos < end) {
		r = d->ops->seek(d, pos, size, SEEK_DATA, &data);
		if (r == -ENXIO)
			data = end;		/* no data from pos to the area's end */
		else if (r)
			break;
		r = 0;
		count_hole(base, first, p->block_shift, pos, data < end ? data : end, nr_holes,
			   first_hole);
		if (data >= end)
			break;
		r = d->ops->seek(d, data, size, SEEK_HOLE, &pos);
		if (!r && pos <= data)
			r = -EIO;		/* a file system that contradicts itself */
		if (r)
			break;
	}
	thin_data_put(d);
	return r;
}

#define TRIM_CHUNK	4096		/* blocks held at once by a trim */

int thin_pool_trim(struct thin_pool *p, uint64_t *bytes)
{
	uint64_t next = 0;
	int r;

	*bytes = 0;
	r = thin_pool_commit(p);
	if (r)
		return r;
	for (;;) {
		uint64_t n;

		pthread_mutex_lock(&p->commit_lock);
		pthread_mutex_lock(&p->lock);
		n = next < p->alloc.nr_blocks ? thin_alloc_hold_free(&p->alloc, &next, TRIM_CHUNK) : 0;
		if (!n)
			thin_alloc_release(&p->alloc, false);
		pthread_mutex_unlock(&p->lock);
		r = n ? discard_held(p, bytes) : 0;
		pthread_mutex_unlock(&p->commit_lock);
		if (r || !n)
			break;
	}
	return r;
}

uint64_t thin_metadata_estimate(uint64_t nr_blocks, uint64_t max_thins)
{
	uint64_t leaves = 2 * ((nr_blocks + THIN_LEAF_ENTRIES - 1) / THIN_LEAF_ENTRIES);

	return (leaves + 2 * max_thins) * THIN_PAGE_STORE_BYTES + THIN_METADATA_OVERHEAD;
}

void thin_pool_set_metadata_limit(struct thin_pool *p, uint64_t bytes)
{
	pthread_mutex_lock(&p->lock);
	p->params.metadata_limit = bytes;
	pthread_mutex_unlock(&p->lock);
}

void thin_pool_set_discard_passdown(struct thin_pool *p, bool on)
{
	pthread_mutex_lock(&p->lock);
	p->params.discard_passdown = on;
	pthread_mutex_unlock(&p->lock);
}

void thin_pool_set_when_full(struct thin_pool *p, enum thin_full_policy when_full,
			     uint32_t wait_s)
{
	pthread_mutex_lock(&p->lock);
	p->params.when_full = when_full;
	p->params.wait_s = wait_s;
	pthread_cond_broadcast(&p->grown);	/* waiters look at the policy again */
	pthread_mutex_unlock(&p->lock);
}

void thin_pool_set_low_water(struct thin_pool *p, uint32_t pct)
{
	pthread_mutex_lock(&p->lock);
	p->params.low_water_pct = pct;
	check_space(p);
	pthread_mutex_unlock(&p->lock);
}

void thin_pool_set_zero(struct thin_pool *p, bool on)
{
	atomic_store(&p->zero, on);
}

static bool has_changes(const struct thin_pool *p)
{
	return p->dirty_leaves.nr || p->dirty_dirs.nr || p->dirty_vols.nr ||
	       p->dead_leaves.nr || p->dead_dirs.nr || p->late_leaf_rows.nr ||
	       p->late_dir_rows.nr || p->alloc.pending.nr ||
	       p->alloc.nr_dirty || p->alloc.space_whole;
}

/*
 * The memory budget (docs/thin.md).  CLOCK over the volumes' directory
 * slots: a leaf read since the hand last passed (referenced) gets another
 * round; one that is clean (not dirty, not being committed) and has no
 * entry being provisioned has its entries unloaded.  Every reader copes:
 * map() answers a miss, the slow paths load first under the lock, which
 * this holds.  Entries are freed after a grace period: a map() may still
 * read them.  A request's fault holds the pool lock until it has mapped
 * again (thin.c: thin_fault), so nothing it loaded goes before.  At most
 * two turns of the hand per pass: a pass that found every leaf read since
 * the last (bits set) unloads on its second turn, so the budget holds
 * after each pass, not a pass later.  A pass, started over the budget,
 * goes on to a 64th under it (above_low_water).  Worker thread; a
 * reservation unloads by slab pages instead (evict_pages), and comes
 * here only if it ran out of memory.
 */
static bool unloadable(struct thin_leaf *l)
{
	_Atomic uint32_t *e = atomic_load_explicit(&l->e, memory_order_relaxed);

	if (!e || l->dirty || l->committing || !atomic_load(&l->refs))
		return false;
	for (unsigned int i = 0; i < THIN_LEAF_ENTRIES; i++)
		if (atomic_load_explicit(&e[i], memory_order_relaxed) & THIN_PROVISIONING)
			return false;
	return true;
}

static struct thin *hand_volume(struct thin_pool *p)
{
	for (struct thin *t = p->vols; t; t = t->next)
		if (t->volume == p->hand_volume)
			return t;
	p->hand_slot = 0;
	return p->vols;
}

/* Unloads @l (pool lock held), its entries kept in @unloaded for free_unloaded.  0 or -ENOMEM. */
static int unload_into(struct thin_pool *p, struct thin_leaf *l, struct thin_vec *unloaded)
{
	if (thin_vec_push(unloaded, NULL))
		return -ENOMEM;
	unloaded->v[unloaded->nr - 1] = (void *)thin_leaf_unload(l);
	p->nr_resident--;
	p->evictions++;
	return 0;
}

/* Frees the entries unload_into kept, after a grace period.  No lock held. */
static void free_unloaded(struct thin_vec *unloaded)
{
	if (unloaded->nr)
		rcu_wait_readers();
	for (size_t i = 0; i < unloaded->nr; i++)
		thin_leaf_entries_free(unloaded->v[i]);
	thin_vec_release(unloaded);
}

static void evict(struct thin_pool *p)
{
	struct thin_vec unloaded = { 0 };
	uint64_t slots = 0, seen = 0;
	struct thin *t;

	pthread_mutex_lock(&p->lock);
	for (t = p->vols; t; t = t->next) {
		struct thin_dir *d = atomic_load(&t->dir);

		slots += d ? d->nr : 0;
	}
	t = hand_volume(p);
	while (t && above_low_water(p) && seen < 2 * slots) {
		struct thin_dir *d = atomic_load(&t->dir);
		struct thin_leaf *l;

		if (!d || p->hand_slot >= d->nr) {
			t = t->next ? t->next : p->vols;
			p->hand_slot = 0;
			continue;
		}
		seen++;
		l = atomic_load(&d->leaf[p->hand_slot++]);
		if (!l || !unloadable(l))
			continue;
		if (atomic_exchange_explicit(&l->referenced, false, memory_order_relaxed))
			continue;
		if (unload_into(p, l, &unloaded))
			break;
	}
	p->hand_volume = t ? t->volume : 0;
	pthread_mutex_unlock(&p->lock);
	free_unloaded(&unloaded);
}

/* A loaded leaf and its entries' slab page, which the sort reads without a miss. */
struct leaf_page {
	uintptr_t page;
	struct thin_leaf *l;
};

static int by_page(const void *a, const void *b)
{
	const struct leaf_page *x = a, *y = b;

	if (x->page != y->page)
		return x->page < y->page ? -1 : 1;
	return (uintptr_t)x->l < (uintptr_t)y->l ? -1 : (uintptr_t)x->l > (uintptr_t)y->l;
}

/*
 * The loaded leaves of every volume's directory into *@out (*@nr of
 * them, malloc'ed), once each, by their entries' page; whether each can
 * be unloaded (which reads its entries) is for the caller to ask of the
 * few it picks.  0 or -ENOMEM.
 */
static int loaded_by_page(struct thin_pool *p, size_t page, struct leaf_page **out,
			      size_t *nr)
{
	struct leaf_page *v = NULL;
	size_t n = 0, cap = 0, k = 0;

	for (struct thin *t = p->vols; t; t = t->next) {
		struct thin_dir *d = atomic_load(&t->dir);

		for (uint32_t i = 0; d && i < d->nr; i++) {
			struct thin_leaf *l = atomic_load(&d->leaf[i]);

			if (!l || !atomic_load_explicit(&l->e, memory_order_relaxed))
				continue;
			if (n == cap) {
				struct leaf_page *g = realloc(v, (cap = cap ? 2 * cap : 1024) * sizeof(*v));

				if (!g) {
					free(v);
					return -ENOMEM;
				}
				v = g;
			}
			v[n].page = (uintptr_t)atomic_load_explicit(&l->e, memory_order_relaxed) / page;
			v[n++].l = l;
		}
	}
	qsort(v, n, sizeof(*v), by_page);
	for (size_t i = 0; i < n; i++)	/* a shared leaf is in several directories */
		if (!k || v[i].l != v[k - 1].l)
			v[k++] = v[i];
	*out = v;
	*nr = k;
	return 0;
}

/*
 * A reservation's unloading: down to the reduced budget, by pages of the
 * slab rather than by CLOCK, so that what it unloads goes back to the OS
 * (thin_leaf_slab_trim) and a removal's or a walk's memory, which does
 * not all come from the slab, takes its place instead of coming on top.
 * Leaves whose entries share a page (two a 4 KiB page) go together, page
 * by page in address order; single ones (whose page's other part may be
 * free already) then, if whole pages were not enough.  How recently a
 * leaf was read does not count here: reads load again what they miss.
 * O(slots + leaves log leaves), 16 bytes a loaded leaf for the while; the
 * pool lock, a grace period.  0 or -ENOMEM (evict() then does the rest).
 */
static int evict_pages(struct thin_pool *p)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), nr = 0;
	size_t per_page = page > THIN_LEAF_BYTES ? page / THIN_LEAF_BYTES : 1;
	struct thin_vec unloaded = { 0 };
	struct leaf_page *v = NULL;
	int r;

	pthread_mutex_lock(&p->lock);
	r = loaded_by_page(p, page, &v, &nr);
	for (size_t i = 0, j; !r && i < nr && over_budget(p); i = j) {
		bool whole;

		for (j = i + 1; j < nr && v[j].page == v[i].page; j++)
			;
		whole = j - i == per_page;
		for (size_t k = i; whole && k < j; k++)
			whole = unloadable(v[k].l);
		for (size_t k = i; !r && whole && k < j; k++) {
			r = unload_into(p, v[k].l, &unloaded);
			v[k].l = NULL;
		}
	}
	for (size_t i = 0; !r && i < nr && over_budget(p); i++)
		if (v[i].l && unloadable(v[i].l))	/* not gone with its page */
			r = unload_into(p, v[i].l, &unloaded);
	pthread_mutex_unlock(&p->lock);
	free(v);
	free_unloaded(&unloaded);
	return r;
}

void thin_pool_cache_reserve(struct thin_pool *p, uint64_t bytes)
{
	char need[SIZE_STR_LEN], budget[SIZE_STR_LEN];
	size_t trimmed;
	bool over;

	if (!bytes)
		return;		/* nothing to unload for, even past the budget */
	pthread_mutex_lock(&p->lock);
	p->reserved_bytes += bytes;
	if (p->budget_leaves && p->reserved_bytes >= p->budget_leaves * THIN_LEAF_BYTES)
		log_warn("thin pool '%s': walks and removals in it need %s, its memory budget is %s: every clean leaf is unloaded while they run, and their memory comes on top",
			 p->name, format_size(p->reserved_bytes, need),
			 format_size(p->budget_leaves * THIN_LEAF_BYTES, budget));
	over = over_budget(p);
	pthread_mutex_unlock(&p->lock);
	if (!over)
		return;
	if (evict_pages(p))
		evict(p);
	trimmed = thin_leaf_slab_trim();
	log_debug("thin pool '%s': %s of its budget reserved, %s of unloaded leaves given back",
		  p->name, format_size(bytes, need), format_size(trimmed, budget));
}

void thin_pool_cache_unreserve(struct thin_pool *p, uint64_t bytes)
{
	if (!bytes)
		return;
	pthread_mutex_lock(&p->lock);
	p->reserved_bytes -= bytes < p->reserved_bytes ? bytes : p->reserved_bytes;
	pthread_mutex_unlock(&p->lock);
	/*
	 * What the walk or removal held is free in the slab now: give it back
	 * too, or it stays resident beside a cache that reads fill again
	 * (a daemon at 1e8 held budget + 73 MiB after two checks, with 202 MiB
	 * of leaves loaded).  Loads take trimmed pages again as they need.
	 */
	thin_leaf_slab_trim();
}

static void *worker_main(void *arg)
{
	struct thin_pool *p = arg;
	struct timespec deadline;
	unsigned int failures = 0;
	bool changes, full;

	urcu_memb_register_thread();
	pthread_mutex_lock(&p->lock);
	while (!p->stopping) {
		deadline_in(&deadline, p->commit_error ? backoff_ms(failures++) :
							 THIN_COMMIT_PERIOD_MS);
		if (!p->commit_error)
			failures = 0;
		if (!p->kicked)		/* a kick during the last commit is not lost */
			pthread_cond_timedwait(&p->kick, &p->lock, &deadline);
		p->kicked = false;
		changes = has_changes(p);
		full = over_budget(p);
		if (p->stopping || (!changes && !full))
			continue;
		pthread_mutex_unlock(&p->lock);
		if (changes)
			commit_once(p, NULL);	/* first: what it commits becomes clean */
		if (full)
			evict(p);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	urcu_memb_unregister_thread();
	return NULL;
}
