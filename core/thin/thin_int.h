/*
 * core/thin/thin_int.h: what thin.c, thin_provision.c and thin_pool.c share.
 * Private to them (and to the unit tests).
 *
 * Locking: p->lock (a mutex) guards every change of a map, of the block
 * counts, of the lists below and of the volume list.  map() takes no
 * lock: it reads the pointers and counts with acquire loads.  p->commit_lock
 * serialises commits and is taken before p->lock, never after.
 */
#ifndef MAPPERFS_THIN_INT_H
#define MAPPERFS_THIN_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "target.h"
#include "thin_alloc.h"
#include "thin_map.h"
#include "thin_pool.h"

struct device;

struct thin {
	struct target target;
	struct thin_pool *pool;
	int64_t volume;
	_Atomic(struct thin_dir *) dir;	/* NULL once removed */
	_Atomic uint64_t mapped;	/* blocks this map maps */
	_Atomic uint32_t inflight;	/* fast-path writes in flight */
	_Atomic bool suspended;		/* fast-path writes defer */
	uint32_t provisioning;		/* slow-path writes in flight; lock */
	struct thin *next;		/* the pool's volumes; lock */
	struct thin **pprev;		/* what points at it there (unlink in O(1)); lock */
	struct target *origin;		/* external origin (read-only), or NULL */
	uint64_t origin_size;		/* bytes of it that show through */
	bool origin_owned;		/* destroy origin with the volume */
	struct device *origin_dev;	/* closed with the volume, or NULL */
};

/* SQEs in flight in a pool's own engine: a flush of its data devices. */
#define THIN_ENGINE_DEPTH	64

/*
 * A page the load read, by id (thin_pool_load_find); id 0: a free slot.
 * @page is its address, bit 0 set for a leaf (pages are 16-aligned): 16
 * bytes an entry.
 */
struct thin_load_entry {
	int64_t id;
	uintptr_t page;
};

/* A pointer array that grows. */
struct thin_vec {
	void **v;
	size_t nr, cap;
};

/* Page ids the store still has rows of. */
struct thin_ids {
	int64_t *v;
	size_t nr, cap;
};

struct thin_pool {
	struct thin_pool_params params;	/* when_full, wait_s, low_water_pct: lock */
	_Atomic bool zero;		/* params.zero as it is now: read unlocked */
	char *name;
	uint8_t block_shift;		/* log2(block_size) */
	const struct thin_meta_ops *meta;
	void *meta_arg;
	/*
	 * The data area: block b at b << block_shift.  RCU; a call outside a
	 * read section holds it (thin_data_get); thin_pool_set_data swaps it.
	 */
	struct target *_Atomic data;
	struct engine engine;		/* commits' flushes and discards: commit_lock */

	pthread_mutex_t lock;
	pthread_cond_t changed;		/* an entry settled, a volume resumed */
	pthread_cond_t grown;		/* the data area grew, or the full policy changed */
	struct thin_alloc alloc;
	/*
	 * The counts came from the store's space map: leaves load their
	 * entries when first needed.  Else (a stale map) they loaded with the
	 * volumes, to derive the counts.  Set at open.
	 */
	bool leaves_on_demand;
	struct thin *vols;
	int64_t next_page_id;
	uint64_t nr_leaves, nr_dirs;
	/*
	 * The memory budget: leaves whose entries are loaded, and the CLOCK
	 * hand that unloads clean ones past thin_pool_cache_budget's bytes
	 * (thin_pool.c: evict): a volume and a slot of its directory.
	 */
	uint64_t nr_resident;
	uint64_t budget_leaves;		/* 0: no budget */
	uint64_t reserved_bytes;	/* of the budget, by walks and removals: thin_pool_cache_reserve */
	uint64_t evictions;
	uint64_t loads;			/* leaves loaded on demand (thin_pool_leaf_load) */
	/* Loads leaves for reads that wait instead of faulting (thin_loader.c). */
	struct thin_loader *loader;
	int64_t hand_volume;
	uint32_t hand_slot;
	struct thin_vec dirty_leaves, dead_leaves;	/* struct thin_leaf * */
	struct thin_vec dirty_dirs, dead_dirs;		/* struct thin_dir * */
	struct thin_vec dirty_vols;			/* struct thin *, by id */
	/* Rows of pages that died in a commit that left them (thin_pool_admin_end_commit). */
	struct thin_ids late_leaf_rows, late_dir_rows;
	bool low_water;			/* logged; cleared when free again */
	bool full;			/* a write found no block, none free since */
	bool metadata_full;		/* a write needed a map page past the limit, none free since */
	bool discard_failed;		/* a discard failed: logged once */
	uint64_t discarded_bytes;	/* passed down or trimmed */
	int commit_error;		/* -errno of the last commit, or 0 */
	uint64_t failing_since_ms;	/* CLOCK_MONOTONIC, while commit_error */
	_Atomic bool failed;		/* commits failed for the patience */
	struct thin_pool_raised raised;	/* each flag above went up, times */
	uint64_t txn;			/* the open transaction, from 1; lock */
	_Atomic uint64_t committed_txn;	/* the last one committed */

	struct thin_load_entry *load_index;	/* open to start: thin_pool.c */
	size_t load_cap, load_nr;
	struct thin_vec loaded_leaves;	/* distinct, for the block counts (a stale map) */

	pthread_mutex_t commit_lock;
	pthread_t worker;
	bool worker_running;
	bool stopping;			/* lock */
	pthread_cond_t kick;		/* wakes the worker */
	bool kicked;			/* lock: changes to commit at once */
};

int thin_vec_push(struct thin_vec *v, void *p);
void thin_vec_release(struct thin_vec *v);

/*
 * Is a page with count @refs and last drop @dropped its volume's alone?
 * Only if the drop committed (thin_map.h).  Fast path: the caller loaded
 * @refs with acquire, then @dropped.
 */
static inline bool thin_pool_alone(struct thin_pool *p, uint32_t refs, uint64_t dropped)
{
	return refs == 1 &&
	       dropped <= atomic_load_explicit(&p->committed_txn, memory_order_acquire);
}

static inline bool thin_leaf_alone(struct thin_pool *p, struct thin_leaf *l)
{
	uint32_t refs = atomic_load_explicit(&l->refs, memory_order_acquire);

	return thin_pool_alone(p, refs, atomic_load_explicit(&l->dropped, memory_order_relaxed));
}

static inline bool thin_dir_alone(struct thin_pool *p, struct thin_dir *d)
{
	uint32_t refs = atomic_load_explicit(&d->refs, memory_order_acquire);

	return thin_pool_alone(p, refs, atomic_load_explicit(&d->dropped, memory_order_relaxed));
}

/*
 * An unmapped piece [off, off + n) of @th, appended to @out at @buf_off:
 * the origin's bytes where it has them, else zeros.  map() reads through
 * it, and a first write copies through it (thin_origin.c).  Under RCU.
 * 0, -ENOMEM, -EIO (the origin deferred a read).
 */
int thin_push_unmapped(struct thin *th, uint64_t off, uint32_t n, uint32_t buf_off,
		       struct segs *out);

/*
 * Reads or writes @n bytes at data offset @at through the pool's data
 * target as the dispatcher would (volume.c): remapped, or deferred (a
 * mirror's write-intent log), or done again another way when the devices
 * failed (a mirror's other legs).  A read may run inside a read section;
 * a write must not.  Blocks on I/O.  0 or -errno (thin_data.c).
 */
int thin_data_io(struct thin_pool *p, struct engine *e, uint64_t at, uint32_t n, void *buf,
		 bool write);
/* Makes @n bytes at data offset @at read zeros.  Blocks.  0 or -errno. */
int thin_data_zero(struct thin_pool *p, struct engine *e, uint64_t at, uint32_t n);
/*
 * The data target, held until thin_data_put, even if thin_pool_set_data
 * replaces it meanwhile: for calls that block outside a read section.
 */
struct target *thin_data_get(struct thin_pool *p);
void thin_data_put(struct target *d);
/*
 * Whether the data target can do a failed read (@write false) or write
 * again another way (a mirror: another leg).  Never blocks.
 */
bool thin_data_retries(struct thin_pool *p, bool write);

/*
 * Waits while @th is suspended (thin.c: Quiescing).  Lock held, dropped
 * while it waits.
 */
static inline void thin_wait_resumed(struct thin *th)
{
	while (atomic_load(&th->suspended))
		pthread_cond_wait(&th->pool->changed, &th->pool->lock);
}

/*
 * The slow path for the part [in, in + n) of virtual block @vb (one
 * block): in place if the block became the volume's alone, else onto a
 * new block (thin_provision.c).  Takes the pool lock; blocks on I/O and
 * may wait for space.  0, -ENOSPC, -ENOMEM, -EIO.
 */
int thin_provision_write(struct thin *th, struct engine *e, uint64_t vb,
			 uint32_t in, uint32_t n, const void *src);

/* What thin.c and thin_provision.c ask of the pool; all with p->lock held. */
/*
 * Makes the directory and the leaf holding @vb the volume's own, copying
 * what is shared (breaking sharing page by page, as dm-thin breaks it node
 * by node) and creating the leaf if there is none: the new pages get ids,
 * count against the metadata limit and are marked for the next commit.
 * O(1); O(slots) for a directory copied, O(THIN_LEAF_ENTRIES) for a leaf.
 * 0, -ENOSPC (metadata full), -ENOMEM, -EIO (the volume was removed).
 */
int thin_pool_own_leaf(struct thin_pool *p, struct thin *th, uint64_t vb,
		       struct thin_leaf **out);
/*
 * Loads @l's entries from the store if they are not loaded yet (blocks
 * on the store, with the lock held; checks that every block is inside
 * the pool).  0, -ENOMEM, or -EIO (a damaged leaf, the store: logged).
 */
int thin_pool_leaf_load(struct thin_pool *p, struct thin_leaf *l);
/*
 * @l's entries into @out: a copy of the loaded ones, or read from the
 * store without loading them (a walk over every leaf keeps none).  Lock
 * held.  0, -ENOMEM or -EIO.
 */
int thin_pool_leaf_peek(struct thin_pool *p, struct thin_leaf *l, struct thin_leaf_rec *out);
/*
 * Entry @vb of map @d (0 past it or where no leaf holds it), its leaf
 * loaded first.  0 or thin_pool_leaf_load's -errno.
 */
int thin_pool_entry(struct thin_pool *p, struct thin_dir *d, uint64_t vb, uint32_t *e);
/* A leaf's entries were loaded or made: counts it, and wakes the evictor past the budget. */
void thin_pool_resident_added(struct thin_pool *p);
/* Marks a leaf changed: the next commit writes it.  0 or -ENOMEM. */
int thin_pool_mark_leaf(struct thin_pool *p, struct thin_leaf *l);
/*
 * Drops a reference on a leaf / dir; at 0 it dies with its references,
 * above 0 it is not alone until the open transaction commits.
 */
int thin_pool_put_leaf(struct thin_pool *p, struct thin_leaf *l);
int thin_pool_put_dir(struct thin_pool *p, struct thin_dir *d);
/*
 * A new block for a write, applying the full policy: may drop and retake
 * the lock (to commit pending frees, or to wait for the pool to grow).
 * 0, -ENOSPC, -EIO if the pool failed.
 */
int thin_pool_new_block(struct thin_pool *p, uint32_t *b);
/* Adds @t to the pool's volumes, or takes it off them (and off the dirty ones).  Lock held. */
void thin_pool_link(struct thin_pool *p, struct thin *t);
void thin_pool_unlink(struct thin_pool *p, struct thin *t);
/*
 * The page loaded with @id as a leaf (@leaf) or a directory, in *page
 * (NULL if none yet).  0, or -EUCLEAN if @id was loaded as the other kind:
 * the two share one id space, so that is a damaged map.  Load time only.
 */
int thin_pool_load_find(struct thin_pool *p, int64_t id, bool leaf, void **page);
/*
 * Makes room in the load index for @n more pages, so that adding them
 * rehashes nothing (a directory's leaves, before they load).  0 or -ENOMEM.
 */
int thin_pool_load_reserve(struct thin_pool *p, size_t n);
/* Records a loaded page (@leaf, or a directory).  0 or -ENOMEM. */
int thin_pool_load_add(struct thin_pool *p, int64_t id, void *page, bool leaf);
/*
 * Wakes the worker to commit soon; a kick while it commits makes it
 * commit again at once.  Lock not held.
 */
void thin_pool_kick(struct thin_pool *p);

#endif
