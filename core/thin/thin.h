/*
 * core/thin/thin.h: the thin target: a volume whose blocks live in a thin
 * pool, provisioned on first write, shared with its snapshots.
 *
 * See thin.c for the fast path and snapshots, thin_provision.c for a
 * first write and copy-on-write, and thin_pool.c for commits.  Everything
 * here except map() takes the pool lock and may block; call it from the
 * admin path or the I/O slow path.
 */
#ifndef MAPPERFS_THIN_H
#define MAPPERFS_THIN_H

#include <stdbool.h>
#include <stdint.h>

#include "target.h"

struct device;
struct thin_pool;

struct thin_dir_rec;

/*
 * Thin volume @volume of @size bytes in @p, its map read from the store
 * (directory @dir), at start-up before thin_pool_start.  0, -ENOENT (no
 * such page), -EUCLEAN (the map is inconsistent: a page of the wrong kind
 * or length, a directory whose slots do not fit @size), -ENOMEM, -EIO.
 */
int thin_load(struct thin_pool *p, int64_t volume, uint64_t size, int64_t dir,
	      struct target **out);

/*
 * A new, empty thin volume whose directory @dir (from
 * thin_pool_reserve_page_id) the caller has recorded empty.  0 or -ENOMEM.
 */
int thin_create(struct thin_pool *p, int64_t volume, uint64_t size, int64_t dir,
		struct target **out);

/*
 * The changes below mirror what an admin change recorded: the caller
 * holds thin_pool_admin_begin() and has suspended (thin_suspend) the
 * volumes whose maps they touch, so the store and memory agree.
 */

/* Gives a target made before its volume had an id (admin) the id. */
void thin_bind(struct target *t, int64_t volume);

/* Stops @t's writes and waits for those in flight; unsuspend resumes. */
void thin_suspend(struct target *t);
void thin_unsuspend(struct target *t);

/* @t's directory id: committed, once begun and suspended. */
int64_t thin_dir_id(struct target *t);

/*
 * The record of @t's map grown to @size bytes, under page id @id, for the
 * store; out->leaves malloc'ed.  0 or -ENOMEM.
 */
int thin_dir_record(struct target *t, uint64_t size, int64_t id,
		    struct thin_dir_rec *out);

/* Makes @volume a snapshot of @origin (suspended): it shares its map, O(1). */
int thin_snapshot(struct target *origin, int64_t volume, struct target **out);

/*
 * Drops the volume's map: blocks nobody else maps go back to the pool
 * after the next commit, which also deletes its pages.  The target then
 * maps nothing; destroy it once unreachable.  0 or -ENOMEM.
 */
int thin_remove(struct target *t);
/*
 * The memory thin_remove of @t (or thin_rollback, which drops its map
 * likewise) holds until the commit that follows it, for the pool's
 * memory budget (thin_pool_cache_reserve): the sets of blocks
 * it frees and unshares (thin_blocks.h, and the allocator's bits: a page
 * per block at worst, the pool's blocks / 8 at most, each), per leaf it
 * drops (those no other map shares) its place in the lists of dead pages
 * and what reading it and deleting its row take of the store, and the
 * store's page caches, which those fill.  Measured, not derived: at 1e7
 * and 1e8 mapped blocks (docs/thin.md).  0 when it drops fewer than
 * THIN_REMOVE_RESERVE_LEAVES leaves (removing a snapshot whose leaves its
 * origin shares costs nothing).  O(directory slots), the pool lock.
 */
#define THIN_REMOVE_RESERVE_LEAVES	512u		/* 256 Ki blocks */
#define THIN_REMOVE_LEAF_BYTES		128u
#define THIN_REMOVE_STORE_BYTES		(4u << 20)	/* two connections' 2 MiB */
uint64_t thin_remove_bytes(struct target *t);

/*
 * Gives @t a copy of its map grown to @size bytes, under directory @dir
 * (recorded by the caller from thin_dir_record).  0, -ENOMEM.
 */
int thin_resize(struct target *t, uint64_t size, int64_t dir);
/*
 * Gives @t a copy of its map cut to the slots @size bytes need, under
 * directory @dir (recorded by the caller from thin_dir_record): reduce,
 * once the blocks past @size are unmapped.  Leaves past it lose @t's
 * reference, and go at the next commit if no other map holds them.
 * Takes the pool lock.  0, -ENOMEM.
 */
int thin_shrink(struct target *t, uint64_t size, int64_t dir);

/*
 * Gives thin volume @t a read-only external origin: blocks it has not
 * written read as @origin's first @size bytes (zeros past them), and a
 * first write copies the rest of the block from it.  @origin's map() must
 * remap reads; it must outlive @t unless @owned, in which case @t destroys
 * it (and closes @dev, if not NULL).  Before any I/O on @t.
 */
void thin_set_origin(struct target *t, struct target *origin, uint64_t size,
		     bool owned, struct device *dev);

/*
 * Makes @t share @from's map (rollback; same size, both suspended).
 * 0, -EXDEV (another pool), -EINVAL (maps of another shape).
 */
int thin_rollback(struct target *t, struct target *from);

/*
 * Makes virtual blocks [@dvb, @dvb + @count) of @dst map what blocks
 * [@svb, ...) of @src map (same pool; @src may be @dst, the ranges apart):
 * no data is copied, each data block gains a reference, and what @dst
 * mapped there is freed as a discard frees it.  Both are quiesced
 * meanwhile.  Stops early at a block whose content comes from an external
 * origin (of either): the caller copies that one.  *done counts the blocks
 * shared, *mapped those of them that @src mapped (the others were holes,
 * and are holes in @dst now).  Blocks on the pool lock, O(count).  0 (with
 * *done possibly short), -EXDEV, -ENOSPC (metadata full; then *done may be
 * short and 0 is returned if it is not 0), -ENOMEM, -EIO.
 */
int thin_share(struct target *dst, uint64_t dvb, struct target *src, uint64_t svb,
	       uint64_t count, uint64_t *done, uint64_t *mapped);

struct thin_usage {
	uint64_t mapped;		/* blocks */
	uint64_t exclusive;		/* blocks no one else maps */
	uint64_t shared;		/* blocks mapped by others too */
};

/*
 * Counts kept answer it: O(the map's directory slots), plus the leaves
 * the volume holds alone when the pool has shared blocks (read, not
 * loaded: may block on the store).  Takes the pool lock.
 */
void thin_usage(struct target *t, struct thin_usage *out);
/*
 * The same for @n thin volumes at once (`list`), into out[i]; a volume
 * whose directory others share costs O(1).  Takes each pool's lock once
 * (volumes grouped by pool).  0, -ENOMEM or -EIO.
 */
int thin_usage_many(struct target *const *t, size_t n, struct thin_usage *out);

/*
 * Calls @fn for every run of virtual blocks whose mappings differ between
 * @a and @b (same pool).  Blocks in units of the pool's block size.
 */
int thin_diff(struct target *a, struct target *b,
	      int (*fn)(void *arg, uint64_t first, uint64_t count), void *arg);

#endif
