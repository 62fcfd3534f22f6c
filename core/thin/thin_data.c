/*
 * core/thin/thin_data.c: the pool's data area is a target of its own.
 *
 * Data block b lies at byte b << block_shift of the data target: a linear
 * target over the pool's extents, or a mirror of several such legs (a
 * mirrored thin pool, dm-raid1 under a thin-pool's data device).  The
 * thin map turns a volume offset into a data offset; the data target
 * turns that into devices.  So a pool's data gets, without the thin
 * engine knowing of it, everything its target does: copies on every leg,
 * a write-intent log, reads from a leg in sync, another leg tried when a
 * device fails.
 */
#include <errno.h>

#include "rcu.h"
#include "thin_int.h"

int thin_data_io(struct thin_pool *p, struct engine *e, uint64_t at, uint32_t n, void *buf,
		 bool write)
{
	struct target *d = p->data;
	struct segs segs;
	int r;

	segs_init(&segs);
	rcu_read_begin();
	r = d->ops->map(d, write ? IO_WRITE : IO_READ, at, n, &segs);
	if (r == MAP_REMAPPED)
		r = write ? engine_write(e, &segs, buf) : engine_read(e, &segs, buf);
	rcu_read_end();
	segs_release(&segs);
	if (r == MAP_DEFER)
		return write ? d->ops->write_deferred(d, e, at, n, buf) : -EIO;
	if (r == -EIO)
		return write ? d->ops->write_failed(d, e, at, n, buf, r) :
			       d->ops->read_failed(d, e, at, n, buf, r);
	return r > 0 ? -EIO : r;
}
