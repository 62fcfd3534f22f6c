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
 * device fails.  And the target can be swapped while the pool runs
 * (thin_pool_set_data, dmsetup reload of a pool's data device): a move
 * of the pool's data off a device runs it on a mirror of where it is and
 * where it goes, then on the new place alone.
 */
#include <errno.h>
#include <time.h>

#include "rcu.h"
#include "thin_int.h"

struct target *thin_data_get(struct thin_pool *p)
{
	struct target *d;

	rcu_read_begin();
	d = rcu_load(p->data);
	atomic_fetch_add(&d->users, 1);
	rcu_read_end();
	return d;
}

void thin_data_put(struct target *d)
{
	atomic_fetch_sub_explicit(&d->users, 1, memory_order_release);
}

bool thin_data_retries(struct thin_pool *p, bool write)
{
	struct target *d;
	bool yes;

	rcu_read_begin();
	d = rcu_load(p->data);
	yes = write ? d->ops->write_failed != target_no_write_retry :
		      d->ops->read_failed != target_no_read_retry;
	rcu_read_end();
	return yes;
}

int thin_data_io(struct thin_pool *p, struct engine *e, uint64_t at, uint32_t n, void *buf,
		 bool write)
{
	struct target *d = thin_data_get(p);
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
		r = write ? d->ops->write_deferred(d, e, at, n, buf) : -EIO;
	else if (r == -EIO)
		r = write ? d->ops->write_failed(d, e, at, n, buf, r) :
			    d->ops->read_failed(d, e, at, n, buf, r);
	thin_data_put(d);
	return r > 0 ? -EIO : r;
}

int thin_data_zero(struct thin_pool *p, struct engine *e, uint64_t at, uint32_t n)
{
	struct target *d = thin_data_get(p);
	int r = d->ops->discard(d, e, at, n, DISCARD_ZERO);

	thin_data_put(d);
	return r;
}

struct target *thin_pool_set_data(struct thin_pool *p, struct target *data)
{
	struct target *old;

	pthread_mutex_lock(&p->commit_lock);	/* commits use it unheld */
	old = rcu_publish(p->data, data);
	rcu_wait_readers();		/* what began on @old took its hold by now */
	while (atomic_load(&old->users))
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	pthread_mutex_unlock(&p->commit_lock);
	return old;
}
