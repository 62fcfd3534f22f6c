/*
 * core/thin.h: the thin target: a volume whose blocks live in a thin
 * pool, provisioned on first write, shared with its snapshots.
 *
 * See thin.c for how writes, copy-on-write and snapshots work, and
 * thin_pool.c for commits.  Everything here except map() takes the pool
 * lock and may block; call it from the admin path or the I/O slow path.
 */
#ifndef MAPPERFS_THIN_H
#define MAPPERFS_THIN_H

#include <stdbool.h>
#include <stdint.h>

#include "target.h"

struct device;
struct thin_pool;

/*
 * A thin volume of @size bytes in @p.  With @load, its map is read from
 * the store (at start-up, before thin_pool_start); without, it starts
 * empty and its row is written by the next commit.  0, -ENOENT (no row
 * to load), -EUCLEAN (the map is inconsistent), -ENOMEM, -EIO.
 */
int thin_create(struct thin_pool *p, int64_t volume, uint64_t size,
		bool load, struct target **out);

/*
 * Makes @volume a snapshot of @origin: it shares the origin's map, O(1).
 * Waits for the origin's writes in flight, so none lands after the
 * blocks became shared.  Not durable until the next commit.
 */
int thin_snapshot(struct target *origin, int64_t volume, struct target **out);

/*
 * Drops the volume's map: blocks nobody else maps go back to the pool
 * after the next commit, which also deletes its rows.  The target then
 * maps nothing; destroy it once unreachable.  0 or -ENOMEM.
 */
int thin_remove(struct target *t);

/* Grows the virtual size to @size bytes.  0, -EINVAL to shrink, -ENOMEM. */
int thin_resize(struct target *t, uint64_t size);

/*
 * Gives thin volume @t a read-only external origin: blocks it has not
 * written read as @origin's first @size bytes (zeros past them), and a
 * first write copies the rest of the block from it.  @origin's map() must
 * remap reads; it must outlive @t unless @owned, in which case @t destroys
 * it (and closes @dev, if not NULL).  Before any I/O on @t.
 */
void thin_set_origin(struct target *t, struct target *origin, uint64_t size,
		     bool owned, struct device *dev);

/* Replaces @t's map by a copy of @from's (rollback). */
int thin_rollback(struct target *t, struct target *from);

struct thin_usage {
	uint64_t mapped;		/* blocks */
	uint64_t exclusive;		/* blocks no one else maps */
	uint64_t shared;		/* blocks mapped by others too */
};

/* Walks the map, O(mapped blocks).  Takes the pool lock. */
void thin_usage(struct target *t, struct thin_usage *out);

/* The pool of thin target @t (which must be one). */
struct thin_pool *thin_pool_of(struct target *t);
bool target_is_thin(const struct target *t);

/*
 * Calls @fn for every run of virtual blocks whose mappings differ between
 * @a and @b (same pool).  Blocks in units of the pool's block size.
 */
int thin_diff(struct target *a, struct target *b,
	      int (*fn)(void *arg, uint64_t first, uint64_t count), void *arg);

#endif
