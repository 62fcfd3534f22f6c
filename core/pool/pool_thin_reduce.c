/*
 * core/pool/pool_thin_reduce.c: shrinking a thin volume (lvreduce of a
 * thin LV): its blocks past the new end go back to its pool.
 *
 * The blocks are unmapped as a discard unmaps them (volume_discard: whole
 * blocks freed, the partial block at the new end zeroed past it), then
 * the pool's admin bracket commits that, and the new size is recorded in
 * the same bracket; ending it with a commit makes the blocks free for
 * `list` at once.  The unmapping comes first so that no committed state
 * ever maps past the volume's end; if recording the size then fails, the
 * volume keeps its size and reads zeros past the size asked for, which
 * the administrator gave up already (reduce needs --yes).
 *
 * The map's directory is cut to the slots the new size needs, as extend
 * grows it: a new directory page is recorded with the size (the leaves
 * past the end, holes now, lose the volume's reference and go at the
 * next commit unless a snapshot holds them), then published.
 *
 * A thin volume over an external origin is refused: past the new end it
 * would show its origin again rather than zeros, and unmapping it there
 * would take new blocks of zeros (thin.c's discard of an origin block).
 */
#include "pool_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "log.h"
#include "thin.h"
#include "volume.h"

struct thin_cut {
	int64_t id;
	uint64_t size;
	struct thin_rec row;		/* with the new directory */
	struct thin_dir_rec dir;
};

static int record_cut(struct pool *p, void *arg)
{
	const struct thin_cut *c = arg;
	const struct pool_meta_ops *m = p->meta->ops;
	int r;

	r = m->thin_dir_put(p->meta, c->row.pool, &c->dir);
	if (!r)
		r = m->thin_put(p->meta, &c->row);
	return r ? r : m->volume_set_size(p->meta, c->id, c->size);
}

/* Unmaps [@size, its end) of @v.  Blocks on the devices and the pool. */
static int unmap_tail(struct pool_volume *v, uint64_t size, struct pool_error *err)
{
	struct engine e;
	int r;

	r = engine_init(&e, 8);
	if (r)
		return pool_fail(err, r, "cannot start an io engine: %s", strerror(-r));
	r = volume_discard(v->served, &e, size, v->rec.size - size, DISCARD_PUNCH);
	engine_exit(&e);
	return r ? pool_fail(err, r, "cannot unmap its blocks past the new end: %s",
			     strerror(-r)) : 0;
}

int pool_thin_reduce(struct pool *p, struct pool_volume *v, uint64_t size,
		     struct pool_error *err)
{
	struct pool_volume *tp = pool_volume_by_id(p, v->thin.rec.pool);
	struct thin_cut c = { .id = v->rec.id, .size = size, .row = v->thin.rec };
	/* served, so its records hold: its pool is a thin pool */
	struct thin_pool *pool = tp ? tp->tp.pool : NULL;
	int r;

	if (!pool)
		return pool_fail(err, -EIO, "its thin pool is not running");
	if (v->thin.origin)
		return pool_fail(err, -EOPNOTSUPP, "thin volume '%s' reads an external origin: shrinking it is not supported",
				 v->rec.name);
	r = unmap_tail(v, size, err);
	if (r)
		return r;
	r = thin_pool_admin_begin(pool, NULL);
	if (r)
		return pool_store_fail(err, r, "commit its thin pool first");
	c.row.dir = thin_pool_reserve_page_id(pool);
	r = thin_dir_record(v->served->target, size, c.row.dir, &c.dir);
	if (r)
		r = pool_fail(err, r, "out of memory");
	if (!r)
		r = pool_record(p, "record the new size", record_cut, &c, err);
	if (!r) {
		atomic_store(&v->served->size, size);
		if (thin_shrink(v->served->target, size, c.row.dir))
			pool_volume_failed(v, "out of memory while cutting its map");
		v->thin.rec = c.row;
		v->rec.size = size;
		pool_stale_file(p, v->rec.id);
	}
	free(c.dir.leaves);
	thin_pool_admin_end(pool);
	if (!r && thin_pool_commit(pool))
		log_warn("thin pool '%s': the blocks freed by reducing '%s' wait for a commit that works",
			 tp->rec.name, v->rec.name);
	return r;
}
