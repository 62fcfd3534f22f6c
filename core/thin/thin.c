/*
 * core/thin/thin.c: the thin target.
 *
 * The fast path.  map() walks the volume's directory and leaf with
 * acquire loads.  A read maps each block to its data block, or to a hole
 * (zeros) where nothing is mapped.  A write maps only when the volume
 * owns everything on the way alone: the directory and the leaf (refs 1,
 * not dropped in a transaction that has not committed: thin_map.h) and
 * the data block (count 1, likewise: thin_alloc_exclusive); then it goes
 * straight to the data block: no lock, no SQL.  Anything else is
 * deferred to the slow path, thin_provision.c.
 *
 * Misses.  A read whose leaf the memory budget unloaded answers MAP_MISS:
 * thin_fault loads the leaf on the caller's thread, or thin_fault_start
 * hands it to the pool's loader (thin_loader.c) for a caller with other
 * requests to serve meanwhile.  A write defers and loads on the slow path.
 *
 * External origin.  A volume created over a read-only base image reads
 * its unwritten blocks from the image (the origin target's own map(),
 * called inside ours), and a first write fills the rest of the new block
 * from it instead of zeros.  Discarding such a block must make it read
 * zeros, not the image again, so inside the image discard writes zeros.
 *
 * Quiescing.  A fast-path write checked "owned alone" before its I/O; a
 * snapshot that shares the block before that I/O lands would see a write
 * it should not, and worse, the origin's copy-on-write could copy the
 * block before it lands and lose it.  So every fast-path write counts
 * itself in t->inflight (end_write() uncounts it), and an operation that
 * shares or frees blocks (snapshot, discard, rollback, remove) first sets
 * t->suspended, which sends new writes to the slow path, where they wait;
 * then waits for the count and for slow-path provisioning to drain.
 */
#include "thin.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device.h"
#include "rcu.h"
#include "thin_int.h"
#include "thin_loader.h"

static struct thin *to_thin(struct target *t)
{
	return (struct thin *)t;
}

static uint32_t block_size(const struct thin_pool *p)
{
	return p->params.block_size;
}

/* Is the write to [@vb] the volume's alone?  Fast path: loads only. */
static bool owned(struct thin_pool *p, struct thin_dir *d, uint64_t vb,
		  uint32_t *entry)
{
	struct thin_leaf *l = atomic_load_explicit(&d->leaf[vb / THIN_LEAF_ENTRIES],
						   memory_order_acquire);
	_Atomic uint32_t *entries;
	uint32_t e;

	if (!l || !thin_leaf_alone(p, l))
		return false;
	entries = atomic_load_explicit(&l->e, memory_order_acquire);
	if (!entries)
		return false;		/* not loaded: the slow path loads it */
	e = atomic_load_explicit(&entries[vb % THIN_LEAF_ENTRIES], memory_order_acquire);
	if (!e || (e & THIN_PROVISIONING) || !thin_alloc_exclusive(&p->alloc, e - 1))
		return false;
	*entry = e;
	return true;
}

/*
 * Appends the data target's segments for a run of @n bytes at data offset
 * @at, the request's bytes from @buf_off on: the target answers for a
 * request of its own, whose buffer starts at the run.  A write the target
 * copies (a mirror's legs) covers the request once per copy, so it is
 * taken only when the run is the whole request (@whole); otherwise it is
 * deferred, and the slow path writes run by run.
 */
static int push_run(struct thin_pool *p, enum io_dir dir, uint64_t at, uint32_t n,
		    uint32_t buf_off, bool whole, struct segs *out)
{
	struct target *d = rcu_load(p->data);
	unsigned int first = out->nr;
	uint64_t bytes = 0;
	int r = d->ops->map(d, dir, at, n, out);

	if (r == MAP_REMAPPED) {
		for (unsigned int i = first; i < out->nr; i++) {
			out->v[i].buf_off += buf_off;
			bytes += out->v[i].len;
		}
		if (bytes == n || (whole && dir == IO_WRITE))
			return MAP_REMAPPED;
		r = dir == IO_WRITE ? MAP_DEFER : -EIO;
	}
	segs_truncate(out, first);
	return r == MAP_DEFER && dir == IO_READ ? -EIO : r;
}

static int thin_map(struct target *t, enum io_dir dir, uint64_t off,
		    uint32_t len, struct segs *out)
{
	struct thin *th = to_thin(t);
	struct thin_pool *p = th->pool;
	bool write = dir == IO_WRITE;
	uint64_t run_at = 0;		/* the data run being gathered */
	uint32_t run_len = 0, run_buf = 0, buf_off = 0, total = len;
	unsigned int first = out->nr;
	struct thin_dir *d;
	int r;

	if (write) {
		atomic_fetch_add(&th->inflight, 1);
		if (atomic_load(&th->suspended))
			goto defer;
	}
	d = rcu_load(th->dir);
	if (!d)
		goto err_io;
	if (write && !thin_dir_alone(p, d))
		goto defer;
	while (len) {
		uint64_t vb = off >> p->block_shift;
		uint32_t in = (uint32_t)(off & (block_size(p) - 1));
		uint32_t n = block_size(p) - in < len ? block_size(p) - in : len;
		uint64_t at;
		uint32_t e;

		if (vb / THIN_LEAF_ENTRIES >= d->nr)
			goto err_io;	/* size and map disagree */
		if (write) {
			if (!owned(p, d, vb, &e))
				goto defer;
		} else if (thin_dir_lookup(d, vb, &e)) {
			e &= ~THIN_PROVISIONING;
		} else {
			r = MAP_MISS;		/* its leaf is not loaded: thin_fault */
			goto fail;
		}
		at = e ? ((uint64_t)(e - 1) << p->block_shift) + in : 0;
		if (e && run_len && run_at + run_len == at) {
			run_len += n;		/* the data run goes on */
		} else {
			r = run_len ? push_run(p, dir, run_at, run_len, run_buf, false, out) : 0;
			run_len = 0;
			if (!r && e) {
				run_at = at;
				run_len = n;
				run_buf = buf_off;
			} else if (!r) {
				r = thin_push_unmapped(th, off, n, buf_off, out);
			}
			if (r)
				goto fail;
		}
		off += n;
		buf_off += n;
		len -= n;
	}
	r = run_len ? push_run(p, dir, run_at, run_len, run_buf, run_len == total, out) : 0;
	if (!r)
		return MAP_REMAPPED;
fail:
	if (write)
		atomic_fetch_sub(&th->inflight, 1);
	if (r == MAP_MISS)
		segs_truncate(out, first);
	return r;

defer:
	atomic_fetch_sub(&th->inflight, 1);
	return MAP_DEFER;
err_io:
	if (write)
		atomic_fetch_sub(&th->inflight, 1);
	return -EIO;
}

/* Loads the leaves [off, off + len) of @t reads through, and its origin's. */
/*
 * Loads the leaves of [off, off + len), its origin's first (never held:
 * it may be a volume of this pool, whose lock is ours).  With @hold, the
 * pool lock stays held (thin_fault_release), so the pool's eviction,
 * which unloads under it, waits until the caller has mapped again.
 */
static int thin_fault(struct target *t, uint64_t off, uint32_t len, bool hold)
{
	struct thin *th = to_thin(t);
	struct thin_pool *p = th->pool;
	uint64_t first = off >> p->block_shift, last = (off + len - 1) >> p->block_shift;
	struct thin_dir *d;
	int r = 0;

	if (th->origin && off < th->origin_size) {
		r = th->origin->ops->fault(th->origin, off,
					   th->origin_size - off < len ?
					   (uint32_t)(th->origin_size - off) : len, false);
		if (r)
			return r;
	}
	pthread_mutex_lock(&p->lock);
	d = atomic_load(&th->dir);
	for (uint64_t i = first / THIN_LEAF_ENTRIES; d && !r && i <= last / THIN_LEAF_ENTRIES &&
						      i < d->nr; i++) {
		struct thin_leaf *l = atomic_load(&d->leaf[i]);

		if (l)
			r = thin_pool_leaf_load(p, l);
	}
	if (r || !hold)
		pthread_mutex_unlock(&p->lock);
	return r;
}

static void thin_fault_release(struct target *t)
{
	pthread_mutex_unlock(&to_thin(t)->pool->lock);
}

/*
 * Queues the leaves of [off, off + len) that are not loaded on the pool's
 * loader, for @w (thin_loader.c).  Inside the caller's read section.
 * -EAGAIN when none is missing (the miss was the external origin's, which
 * thin_fault loads), or more than a wait may name.
 */
static int thin_fault_start(struct target *t, uint64_t off, uint32_t len,
			    struct target_wait *w)
{
	struct thin *th = to_thin(t);
	struct thin_pool *p = th->pool;
	uint64_t first = (off >> p->block_shift) / THIN_LEAF_ENTRIES;
	uint64_t last = ((off + len - 1) >> p->block_shift) / THIN_LEAF_ENTRIES;
	struct thin_load_slot slots[THIN_LOADER_SLOTS];
	struct thin_dir *d = rcu_load(th->dir);
	unsigned int nr = 0;

	for (uint64_t i = first; d && i <= last && i < d->nr; i++) {
		struct thin_leaf *l = atomic_load_explicit(&d->leaf[i], memory_order_acquire);

		if (!l || thin_leaf_resident(l))
			continue;
		if (nr == THIN_LOADER_SLOTS)
			return -EAGAIN;
		slots[nr++] = (struct thin_load_slot){ (uint32_t)i, l };
	}
	return nr ? thin_loader_queue(p->loader, th, slots, nr, w) : -EAGAIN;
}

static void thin_end_write(struct target *t)
{
	atomic_fetch_sub_explicit(&to_thin(t)->inflight, 1, memory_order_release);
}

static int thin_write_deferred(struct target *t, struct engine *e, uint64_t off,
			       uint32_t len, const void *buf)
{
	struct thin *th = to_thin(t);
	struct thin_pool *p = th->pool;
	const char *src = buf;
	int r = 0;

	while (len && !r) {
		uint32_t in = (uint32_t)(off & (block_size(p) - 1));
		uint32_t n = block_size(p) - in < len ? block_size(p) - in : len;

		r = thin_provision_write(th, e, off >> p->block_shift, in, n, src);
		off += n;
		src += n;
		len -= n;
	}
	return r;
}

/*
 * A remapped read failed on the devices: read it again block by block,
 * the mapped ones through the data target's own retry (a mirror's other
 * legs).  A data target without one has nothing else to try.
 */
static int thin_read_failed(struct target *t, struct engine *e, uint64_t off,
			    uint32_t len, void *buf, int err)
{
	struct thin *th = to_thin(t);
	struct thin_pool *p = th->pool;
	char *dst = buf;
	int r = 0;

	if (!thin_data_retries(p, false))
		return err;
	while (len && !r) {
		uint32_t in = (uint32_t)(off & (block_size(p) - 1));
		uint32_t n = block_size(p) - in < len ? block_size(p) - in : len;
		struct thin_dir *d;
		struct segs segs;
		uint32_t entry = 0;

		segs_init(&segs);
		rcu_read_begin();
		d = rcu_load(th->dir);
		r = d ? 0 : -EIO;
		/* Mapped just now: its leaf is loaded (leaves are never unloaded). */
		if (d && (off >> p->block_shift) / THIN_LEAF_ENTRIES < d->nr &&
		    !thin_dir_lookup(d, off >> p->block_shift, &entry))
			r = err;
		entry &= ~THIN_PROVISIONING;
		/* The block stays the volume's while the section lasts. */
		if (!r && entry)
			r = thin_data_io(p, e, ((uint64_t)(entry - 1) << p->block_shift) + in, n,
					 dst, false);
		else if (!r)
			r = thin_push_unmapped(th, off, n, 0, &segs);
		if (!r && !entry)
			r = engine_read(e, &segs, dst);
		rcu_read_end();
		segs_release(&segs);
		off += n;
		dst += n;
		len -= n;
	}
	return r;
}

/* A remapped write failed: the slow path does it again, run by run. */
static int thin_write_failed(struct target *t, struct engine *e, uint64_t off,
			     uint32_t len, const void *buf, int err)
{
	if (!thin_data_retries(to_thin(t)->pool, true))
		return err;
	return thin_write_deferred(t, e, off, len, buf);
}

static int thin_flush(struct target *t, struct engine *e)
{
	(void)e;
	return thin_pool_commit(to_thin(t)->pool);
}

/*
 * Stops the volume's writes and waits for those in flight.  Returns with
 * the pool lock held; thin_resume() undoes it.  Admin and discard paths.
 */
static void thin_quiesce(struct thin *th)
{
	struct thin_pool *p = th->pool;

	pthread_mutex_lock(&p->lock);
	thin_wait_resumed(th);
	atomic_store(&th->suspended, true);
	while (th->provisioning)
		pthread_cond_wait(&p->changed, &p->lock);
	pthread_mutex_unlock(&p->lock);
	/* Fast-path writes end without the lock: a short spin. */
	while (atomic_load(&th->inflight))
		sched_yield();
	pthread_mutex_lock(&p->lock);
}

static void thin_resume(struct thin *th)
{
	atomic_store(&th->suspended, false);
	pthread_cond_broadcast(&th->pool->changed);
	pthread_mutex_unlock(&th->pool->lock);
}

void thin_suspend(struct target *t)
{
	struct thin *th = to_thin(t);

	thin_quiesce(th);
	pthread_mutex_unlock(&th->pool->lock);
}

void thin_unsuspend(struct target *t)
{
	struct thin *th = to_thin(t);

	pthread_mutex_lock(&th->pool->lock);
	thin_resume(th);
}

/* Unmaps whole virtual blocks [first, end).  Quiesced, lock held. */
static int unmap_blocks(struct thin *th, uint64_t first, uint64_t end)
{
	struct thin_pool *p = th->pool;
	int r = 0;

	for (uint64_t vb = first; vb < end && !r; vb++) {
		struct thin_dir *d = atomic_load(&th->dir);
		struct thin_leaf *l;
		uint32_t e;

		if (!d || vb / THIN_LEAF_ENTRIES >= d->nr)
			break;		/* past the map: nothing mapped there */
		l = atomic_load(&d->leaf[vb / THIN_LEAF_ENTRIES]);

		if (!l) {
			vb |= THIN_LEAF_ENTRIES - 1;	/* the next leaf */
			continue;
		}
		r = thin_pool_leaf_load(p, l);
		if (r)
			break;
		if (!atomic_load(&l->e[vb % THIN_LEAF_ENTRIES]))
			continue;
		r = thin_pool_own_leaf(p, th, vb, &l);
		if (r)
			break;
		e = atomic_load(&l->e[vb % THIN_LEAF_ENTRIES]);
		atomic_store_explicit(&l->e[vb % THIN_LEAF_ENTRIES], 0, memory_order_release);
		atomic_fetch_sub(&th->mapped, 1);
		thin_alloc_put(&p->alloc, e - 1);
		r = thin_pool_mark_leaf(p, l);
	}
	return r;
}

/* Entry @vb of @d (0 past it), its leaf loaded first.  Lock held.  0 or -errno. */
static int dir_entry_at(struct thin_pool *p, struct thin_dir *d, uint64_t vb, uint32_t *e)
{
	int r = thin_pool_entry(p, d, vb, e);

	*e &= ~THIN_PROVISIONING;
	return r;
}

/*
 * Sharing a range of another volume's blocks (a server-side copy) is
 * discard's mirror: the destination's entries are replaced under the
 * pool lock while both volumes are quiesced, each data block it now maps
 * gains a reference, each it mapped before loses one (and goes back to
 * the pool after the next commit).  Quiescing the source too keeps a
 * fast-path write from landing in a block after it became shared, which
 * copy-on-write would then lose.
 */
static bool reads_origin(const struct thin *th, uint64_t vb)
{
	return th->origin && (vb << th->pool->block_shift) < th->origin_size;
}

/*
 * Shares one block; *stop when it cannot (an external origin shows).
 * Counts it in *mapped if @src maps it.
 */
static int share_block(struct thin *dst, uint64_t dvb, struct thin *src, uint64_t svb,
		       bool *stop, uint64_t *mapped)
{
	struct thin_pool *p = dst->pool;
	struct thin_leaf *l;
	uint32_t se, de;
	int r;

	r = dir_entry_at(p, atomic_load(&src->dir), svb, &se);
	r = r ? r : dir_entry_at(p, atomic_load(&dst->dir), dvb, &de);
	if (r)
		return r;
	if ((!se && reads_origin(src, svb)) || (!se && reads_origin(dst, dvb))) {
		*stop = true;
		return 0;
	}
	if (se)
		(*mapped)++;
	if (se == de)
		return 0;
	r = thin_pool_own_leaf(p, dst, dvb, &l);
	if (r)
		return r;
	de = atomic_load(&l->e[dvb % THIN_LEAF_ENTRIES]);
	if (se)
		thin_alloc_get(&p->alloc, se - 1);
	atomic_store_explicit(&l->e[dvb % THIN_LEAF_ENTRIES], se, memory_order_release);
	if (se && !de)
		atomic_fetch_add(&dst->mapped, 1);
	if (!se && de)
		atomic_fetch_sub(&dst->mapped, 1);
	r = thin_pool_mark_leaf(p, l);
	if (de)
		thin_alloc_put(&p->alloc, de - 1);
	return r;
}

#define SHARE_BATCH	4096		/* blocks between two takes of the lock */

int thin_share(struct target *dst, uint64_t dvb, struct target *src, uint64_t svb,
	       uint64_t count, uint64_t *done, uint64_t *mapped)
{
	struct thin *d = to_thin(dst), *s = to_thin(src);
	struct thin_pool *p = d->pool;
	bool stop = false;
	uint64_t i;
	int r = 0;

	*done = *mapped = 0;
	if (s->pool != p)
		return -EXDEV;
	thin_suspend(dst);
	if (s != d)
		thin_suspend(src);
	pthread_mutex_lock(&p->lock);
	for (i = 0; i < count; i++) {
		struct thin_dir *dd = atomic_load(&d->dir);

		if (!dd || !atomic_load(&s->dir) || (dvb + i) / THIN_LEAF_ENTRIES >= dd->nr) {
			r = -EIO;	/* removed, or size and map disagree */
			break;
		}
		r = share_block(d, dvb + i, s, svb + i, &stop, mapped);
		if (r || stop)
			break;
		if (i % SHARE_BATCH == SHARE_BATCH - 1) {
			pthread_mutex_unlock(&p->lock);
			pthread_mutex_lock(&p->lock);
		}
	}
	*done = i;
	pthread_mutex_unlock(&p->lock);
	if (s != d)
		thin_unsuspend(src);
	thin_unsuspend(dst);
	thin_pool_kick(p);
	return *done ? 0 : r;
}

/* Zeroes [off, off + n) inside one block, if that block is mapped. */
static int zero_partial(struct thin *th, struct engine *e, uint64_t off, uint32_t n)
{
	struct thin_dir *d;
	uint32_t entry = 0;
	void *zeros;
	int r;

	if (!n)
		return 0;
	r = thin_fault(&th->target, off, n, false);	/* its leaf loaded, to look */
	if (r)
		return r;
	rcu_read_begin();
	d = rcu_load(th->dir);
	if (d && !thin_dir_lookup(d, off >> th->pool->block_shift, &entry))
		entry = 1;		/* unloaded again: the slow path looks */
	rcu_read_end();
	if (!entry && !(th->origin && off < th->origin_size))
		return 0;
	zeros = calloc(1, n);
	if (!zeros)
		return -ENOMEM;
	r = thin_write_deferred(&th->target, e, off, n, zeros);
	free(zeros);
	return r;
}

/*
 * Whole blocks [*first, end) that would show the origin once unmapped are
 * written with zeros instead; *first moves past them.
 */
static int zero_origin_blocks(struct thin *th, struct engine *e, uint64_t *first,
			      uint64_t end)
{
	uint64_t bs = block_size(th->pool);
	void *zeros;
	int r = 0;

	if (*first * bs >= th->origin_size)
		return 0;
	zeros = calloc(1, bs);
	if (!zeros)
		return -ENOMEM;
	for (; *first < end && *first * bs < th->origin_size && !r; (*first)++)
		r = thin_write_deferred(&th->target, e, *first * bs, (uint32_t)bs, zeros);
	free(zeros);
	return r;
}

/*
 * Whole blocks go back to the pool (after the next commit); the partly
 * covered blocks at either end are written with zeros.
 */
static int thin_discard(struct target *t, struct engine *e, uint64_t off,
			uint64_t len, enum discard_mode mode)
{
	struct thin *th = to_thin(t);
	uint64_t bs = block_size(th->pool), end = off + len;
	uint64_t first = (off + bs - 1) / bs, last = end / bs;
	int r;

	(void)mode;			/* both read zeros after */
	if (first > last) 		/* inside one block */
		return zero_partial(th, e, off, (uint32_t)len);
	r = zero_partial(th, e, off, (uint32_t)(first * bs - off));
	if (!r)
		r = zero_partial(th, e, last * bs, (uint32_t)(end - last * bs));
	if (!r && th->origin)
		r = zero_origin_blocks(th, e, &first, last);
	if (r || first >= last)
		return r;
	thin_quiesce(th);
	r = unmap_blocks(th, first, last);
	thin_resume(th);
	thin_pool_kick(th->pool);	/* the blocks go back, and to the device, soon */
	return r;
}

/*
 * The next offset >= @at of kind @whence that the origin shows to an
 * unmapped block: its own data and holes (its seek), and a hole past its
 * end.  UINT64_MAX for no more data.  Outside any read section: the
 * origin's seek may block (an lseek), and the origin lives as long as @th.
 */
static int origin_seek(struct thin *th, uint64_t at, int whence, uint64_t *next)
{
	int r;

	if (!th->origin || at >= th->origin_size) {
		*next = whence == SEEK_HOLE ? at : UINT64_MAX;
		return 0;
	}
	r = th->origin->ops->seek(th->origin, at, th->origin_size, whence, next);
	if (r == -ENXIO) {
		*next = UINT64_MAX;
		r = 0;
	}
	return r;
}

/*
 * A mapped block is data; an unmapped one shows what the origin has
 * there (its data and its holes, asked once and remembered for the
 * blocks that follow), zeros past it.  O(blocks) loads, and one origin
 * seek each time the scan passes what the origin said last.  A leaf not
 * loaded is loaded and held (thin_fault) while the scan looks at it.
 */
static int thin_seek(struct target *t, uint64_t off, uint64_t size, int whence,
		     uint64_t *out)
{
	struct thin *th = to_thin(t);
	uint8_t shift = th->pool->block_shift;
	uint64_t end = (size + block_size(th->pool) - 1) >> shift;
	uint64_t next = 0;		/* the origin's answer from below here */
	bool asked = false, loaded;
	struct thin_dir *d;
	int r = whence == SEEK_DATA ? -ENXIO : 0;

	*out = size;
	rcu_read_begin();
	d = rcu_load(th->dir);
	for (uint64_t vb = off >> shift; d && vb < end; vb++) {
		uint64_t at = vb << shift < off ? off : vb << shift;
		uint32_t e;

		if (vb / THIN_LEAF_ENTRIES >= d->nr)
			break;
		if (!atomic_load_explicit(&d->leaf[vb / THIN_LEAF_ENTRIES],
					  memory_order_acquire) &&
		    (vb << shift) >= th->origin_size) {
			if (whence == SEEK_HOLE) {
				*out = at;
				r = 0;
				break;
			}
			vb |= THIN_LEAF_ENTRIES - 1;
			continue;
		}
		if (!thin_dir_lookup(d, vb, &e)) {	/* not loaded: load, then look again */
			rcu_read_end();
			r = thin_fault(t, vb << shift, block_size(th->pool), true);
			rcu_read_begin();
			if (r)
				break;
			/* The same map: changing it takes the lock, held. */
			d = rcu_load(th->dir);
			loaded = d && vb / THIN_LEAF_ENTRIES < d->nr && thin_dir_lookup(d, vb, &e);
			thin_fault_release(t);
			r = loaded ? (whence == SEEK_DATA ? -ENXIO : 0) : -EIO;
			if (!loaded)
				break;
		}
		if ((e & ~THIN_PROVISIONING) != 0) {
			if (whence == SEEK_DATA) {
				*out = at;
				r = 0;
				break;
			}
			continue;
		}
		if (!asked || next < at) {
			rcu_read_end();
			r = origin_seek(th, at, whence, &next);
			rcu_read_begin();
			d = rcu_load(th->dir);
			asked = true;
			if (r)
				break;
			r = whence == SEEK_DATA ? -ENXIO : 0;
		}
		if (next < (vb + 1) << shift) {
			*out = next;
			r = 0;
			break;
		}
	}
	rcu_read_end();
	if (!r && whence == SEEK_DATA && *out >= size)
		r = -ENXIO;
	if (*out < off)
		*out = off;
	if (*out > size)
		*out = size;
	return r;
}

/*
 * The pool's blocks it maps, and what its origin takes (st_blocks: a
 * volume whose data is all in its image is not empty).  Blocks written
 * over the origin count twice; the sum stops at @size.
 */
static uint64_t thin_mapped_bytes(struct target *t, uint64_t size)
{
	struct thin *th = to_thin(t);
	uint64_t n = atomic_load(&th->mapped) << th->pool->block_shift;

	if (th->origin)
		n += th->origin->ops->mapped_bytes(th->origin, th->origin_size);
	return n < size ? n : size;
}

/*
 * Frees the in-memory map only: the store keeps it (shutdown, or a load
 * that failed).  The volume is unreachable, so no reader holds its pages;
 * a page still waiting in a commit list (dirty, or being committed) is
 * left to leak rather than freed under the commit.
 */
static void forget_dir(struct thin_pool *p, struct thin_dir *d)
{
	if (atomic_fetch_sub(&d->refs, 1) != 1)
		return;
	for (uint32_t i = 0; i < d->nr; i++) {
		struct thin_leaf *l = atomic_load(&d->leaf[i]);

		if (!l || atomic_fetch_sub(&l->refs, 1) != 1)
			continue;
		p->nr_leaves--;
		if (!l->dirty && !l->committing)
			thin_leaf_free(l);
	}
	p->nr_dirs--;
	if (!d->dirty && !d->committing)
		free(d);
}

void thin_set_origin(struct target *t, struct target *origin, uint64_t size,
		     bool owned, struct device *dev)
{
	struct thin *th = to_thin(t);

	th->origin = origin;
	th->origin_size = size;
	th->origin_owned = owned;
	th->origin_dev = dev;
}

static void thin_destroy(struct target *t)
{
	struct thin *th = to_thin(t);
	struct thin_dir *d;

	if (th->origin && th->origin_owned)
		th->origin->ops->destroy(th->origin);
	if (th->origin_dev)
		device_close(th->origin_dev);
	pthread_mutex_lock(&th->pool->lock);
	thin_pool_unlink(th->pool, th);
	d = atomic_load(&th->dir);
	if (d)
		forget_dir(th->pool, d);
	pthread_mutex_unlock(&th->pool->lock);
	free(th);
}

static const struct target_ops thin_ops = {
	.name = "thin",
	.parks = true,
	.map = thin_map,
	.read_failed = thin_read_failed,
	.write_failed = thin_write_failed,
	.end_write = thin_end_write,
	.fault = thin_fault,
	.fault_release = thin_fault_release,
	.fault_start = thin_fault_start,
	.write_deferred = thin_write_deferred,
	.flush = thin_flush,
	.discard = thin_discard,
	.seek = thin_seek,
	.mapped_bytes = thin_mapped_bytes,
	.destroy = thin_destroy,
};

static struct thin *thin_alloc_target(struct thin_pool *p, int64_t volume)
{
	struct thin *th = calloc(1, sizeof(*th));

	if (!th)
		return NULL;
	th->target.ops = &thin_ops;
	th->pool = p;
	th->volume = volume;
	return th;
}

static int load_leaf(struct thin_pool *p, int64_t id, struct thin_leaf **out)
{
	struct thin_leaf_rec rec;
	struct thin_leaf *l;
	void *page;
	int r;

	r = thin_pool_load_find(p, id, true, &page);
	if (r)
		return r;
	l = page;
	if (l) {
		atomic_fetch_add(&l->refs, 1);
		*out = l;
		return 0;
	}
	l = thin_leaf_stub(id);
	if (!l)
		return -ENOMEM;
	/* On demand, its entries load when first needed (thin_pool_leaf_load). */
	if (!p->leaves_on_demand) {
		r = p->meta->load_leaf(p->meta_arg, id, &rec);
		if (!r)
			r = thin_leaf_fill(l, &rec);
		if (!r)
			p->nr_resident++;
	}
	if (!r)
		r = thin_pool_load_add(p, id, l, true);
	if (r) {
		thin_leaf_free(l);
		return r;
	}
	*out = l;
	return 0;
}

/* The blocks @d maps, its leaves read (not loaded) to count them.  0 or -errno. */
static int count_mapped(struct thin_pool *p, const struct thin_dir *d, uint64_t *out)
{
	struct thin_leaf_rec rec;
	uint64_t n = 0;

	for (uint32_t i = 0; i < d->nr; i++) {
		struct thin_leaf *l = atomic_load(&d->leaf[i]);
		int r = l ? thin_pool_leaf_peek(p, l, &rec) : 0;

		if (r)
			return r;
		for (unsigned int j = 0; l && j < THIN_LEAF_ENTRIES; j++)
			n += rec.map[j] != 0;
	}
	*out = n;
	return 0;
}

static int load_dir(struct thin_pool *p, int64_t id, uint32_t slots,
		    struct thin_dir **out)
{
	struct thin_dir_rec rec = { 0 };
	struct thin_dir *d;
	void *page;
	int r;

	r = thin_pool_load_find(p, id, false, &page);
	if (r)
		return r;
	d = page;
	if (d && d->nr != slots)
		return -EUCLEAN;	/* shared by volumes whose sizes need other shapes */
	if (d) {
		atomic_fetch_add(&d->refs, 1);
		*out = d;
		return 0;
	}
	r = p->meta->load_dir(p->meta_arg, id, &rec);
	if (r)
		return r;
	if (rec.nr != slots) {
		free(rec.leaves);
		return -EUCLEAN;	/* a map that would lose or invent blocks */
	}
	d = thin_dir_new(id, slots);
	if (!d) {
		free(rec.leaves);
		return -ENOMEM;
	}
	r = thin_pool_load_reserve(p, 1 + (size_t)rec.nr);
	if (!r)
		r = thin_pool_load_add(p, id, d, false);
	for (uint32_t i = 0; i < rec.nr && !r; i++) {
		struct thin_leaf *l = NULL;

		if (rec.leaves[i])
			r = load_leaf(p, rec.leaves[i], &l);
		atomic_init(&d->leaf[i], l);
	}
	free(rec.leaves);
	d->write_whole = rec.nr != slots;	/* as stored, or the row changes size */
	d->mapped_in_store = rec.mapped_known;
	d->stored_mapped = rec.mapped;
	if (!r && !rec.mapped_known)	/* counted once however many volumes share it */
		r = count_mapped(p, d, &d->stored_mapped);
	*out = d;
	return r;
}

/* Links a new target with map @d, of @mapped blocks, into the pool.  Lock held. */
static void adopt(struct thin_pool *p, struct thin *th, struct thin_dir *d,
		  uint64_t mapped)
{
	atomic_init(&th->dir, d);
	atomic_init(&th->mapped, mapped);
	thin_pool_link(p, th);
}

int thin_load(struct thin_pool *p, int64_t volume, uint64_t size, int64_t dir,
	      struct target **out)
{
	uint32_t slots = thin_dir_slots((size + block_size(p) - 1) >> p->block_shift);
	struct thin *th = thin_alloc_target(p, volume);
	struct thin_dir *d = NULL;
	int r;

	if (!th)
		return -ENOMEM;
	pthread_mutex_lock(&p->lock);
	r = load_dir(p, dir, slots, &d);
	if (d)
		adopt(p, th, d, d->stored_mapped);
	pthread_mutex_unlock(&p->lock);
	if (r) {
		if (d)
			thin_destroy(&th->target);
		else
			free(th);
		return r;
	}
	*out = &th->target;
	return 0;
}

int thin_create(struct thin_pool *p, int64_t volume, uint64_t size, int64_t dir,
		struct target **out)
{
	uint32_t slots = thin_dir_slots((size + block_size(p) - 1) >> p->block_shift);
	struct thin *th = thin_alloc_target(p, volume);
	struct thin_dir *d = thin_dir_new(dir, slots);

	if (!th || !d) {
		free(th);
		free(d);
		return -ENOMEM;
	}
	pthread_mutex_lock(&p->lock);
	p->nr_dirs++;
	adopt(p, th, d, 0);
	pthread_mutex_unlock(&p->lock);
	*out = &th->target;
	return 0;
}

int thin_snapshot(struct target *origin, int64_t volume, struct target **out)
{
	struct thin *o = to_thin(origin), *th = thin_alloc_target(o->pool, volume);
	struct thin_pool *p = o->pool;
	struct thin_dir *d;

	if (!th)
		return -ENOMEM;
	pthread_mutex_lock(&p->lock);
	d = atomic_load(&o->dir);
	if (!d) {
		pthread_mutex_unlock(&p->lock);
		free(th);
		return -ENOENT;
	}
	/* Quiesced (thin.h): the origin's count is its map's, nothing in flight. */
	atomic_fetch_add(&d->refs, 1);
	adopt(p, th, d, atomic_load(&o->mapped));
	pthread_mutex_unlock(&p->lock);
	*out = &th->target;
	return 0;
}

void thin_bind(struct target *t, int64_t volume)
{
	struct thin *th = to_thin(t);

	pthread_mutex_lock(&th->pool->lock);
	th->volume = volume;
	pthread_mutex_unlock(&th->pool->lock);
}

int64_t thin_dir_id(struct target *t)
{
	struct thin *th = to_thin(t);
	struct thin_dir *d;
	int64_t id;

	pthread_mutex_lock(&th->pool->lock);
	d = atomic_load(&th->dir);
	id = d ? d->id : 0;
	pthread_mutex_unlock(&th->pool->lock);
	return id;
}

int thin_dir_record(struct target *t, uint64_t size, int64_t id,
		    struct thin_dir_rec *out)
{
	struct thin *th = to_thin(t);
	struct thin_pool *p = th->pool;
	struct thin_dir *d;

	out->id = id;
	out->nr = thin_dir_slots((size + block_size(p) - 1) >> p->block_shift);
	out->leaves = calloc(out->nr ? out->nr : 1, sizeof(*out->leaves));
	if (!out->leaves)
		return -ENOMEM;
	pthread_mutex_lock(&p->lock);
	d = atomic_load(&th->dir);
	for (uint32_t i = 0; d && i < d->nr && i < out->nr; i++) {
		struct thin_leaf *l = atomic_load(&d->leaf[i]);

		out->leaves[i] = l ? l->id : 0;
	}
	pthread_mutex_unlock(&p->lock);
	return 0;
}

/*
 * Drops the last reference on directory @d, whose volume is gone: the
 * directory dies at once (a commit deletes its row with the volume's),
 * its leaves in batches of REMOVE_BATCH with the lock dropped between, so
 * that removing a large volume does not hold up other volumes' first
 * writes.  No one else reaches @d meanwhile (its volume's pointer is
 * gone), and it joins the dead directories, which a commit frees, only
 * after its last leaf: so the loop reads its slots, not a copy (1.5 MiB of
 * fresh memory at 1e8 blocks, 5 ms of page faults per removal).  Lock
 * held on entry and exit.
 */
#define REMOVE_BATCH	16		/* leaves: 8192 block references */

static int drop_dir(struct thin_pool *p, struct thin_dir *d)
{
	int r = 0;

	if (atomic_load(&d->refs) != 1)
		return thin_pool_put_dir(p, d);
	atomic_store(&d->refs, 0);
	p->nr_dirs--;
	for (uint32_t i = 0; i < d->nr && !r; i++) {
		struct thin_leaf *l = atomic_load_explicit(&d->leaf[i], memory_order_relaxed);

		if (l)
			r = thin_pool_put_leaf(p, l);
		if (i % REMOVE_BATCH == REMOVE_BATCH - 1) {
			pthread_mutex_unlock(&p->lock);
			pthread_mutex_lock(&p->lock);
		}
	}
	return thin_vec_push(&p->dead_dirs, d) ? -ENOMEM : r;
}

/* A bitmap's bytes over @blocks blocks of a pool of @nr_blocks: a page each at worst. */
static uint64_t bits_bytes(uint64_t blocks, uint64_t nr_blocks)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), all = (nr_blocks / 8 + page) / page * page;

	return blocks < all / page ? blocks * page : all;
}

uint64_t thin_remove_bytes(struct target *t)
{
	struct thin *th = to_thin(t);
	struct thin_pool *p = th->pool;
	uint64_t leaves = 0, blocks, bits, slots;
	struct thin_dir *d;

	pthread_mutex_lock(&p->lock);
	d = atomic_load(&th->dir);
	slots = d ? d->nr : 0;
	for (uint32_t i = 0; d && atomic_load(&d->refs) == 1 && i < d->nr; i++) {
		struct thin_leaf *l = atomic_load(&d->leaf[i]);

		leaves += l && atomic_load_explicit(&l->refs, memory_order_relaxed) == 1;
	}
	blocks = leaves * THIN_LEAF_ENTRIES;
	if (blocks > atomic_load(&th->mapped))
		blocks = atomic_load(&th->mapped);
	/* The freed set's bits and the allocator's, and the unshared set's. */
	bits = bits_bytes(blocks, p->alloc.nr_blocks) * (p->alloc.nr_shared ? 3 : 2);
	pthread_mutex_unlock(&p->lock);
	if (leaves < THIN_REMOVE_RESERVE_LEAVES)
		return 0;
	return bits + leaves * THIN_REMOVE_LEAF_BYTES + THIN_REMOVE_STORE_BYTES +
	       slots * sizeof(void *);
}

int thin_remove(struct target *t)
{
	struct thin *th = to_thin(t);
	struct thin_pool *p = th->pool;
	struct thin_dir *d;
	int r = 0;

	pthread_mutex_lock(&p->lock);
	d = atomic_load(&th->dir);
	rcu_publish(th->dir, NULL);
	atomic_store(&th->mapped, 0);
	thin_pool_unlink(p, th);	/* no row to write any more ... */
	thin_pool_link(p, th);		/* ... but destroy unlinks it */
	if (d)
		r = drop_dir(p, d);
	pthread_mutex_unlock(&p->lock);
	return r;
}

int thin_resize(struct target *t, uint64_t size, int64_t dir)
{
	struct thin *th = to_thin(t);
	struct thin_pool *p = th->pool;
	uint32_t slots = thin_dir_slots((size + block_size(p) - 1) >> p->block_shift);
	struct thin_dir *d, *nd;
	int r;

	pthread_mutex_lock(&p->lock);
	d = atomic_load(&th->dir);
	nd = d ? thin_dir_copy(d, dir, slots > d->nr ? slots : d->nr) : NULL;
	if (!nd) {
		pthread_mutex_unlock(&p->lock);
		return d ? -ENOMEM : -ENOENT;
	}
	p->nr_dirs++;
	rcu_publish(th->dir, nd);
	r = thin_pool_put_dir(p, d);
	pthread_mutex_unlock(&p->lock);
	return r;
}

int thin_shrink(struct target *t, uint64_t size, int64_t dir)
{
	struct thin *th = to_thin(t);
	struct thin_pool *p = th->pool;
	uint32_t slots = thin_dir_slots((size + block_size(p) - 1) >> p->block_shift);
	struct thin_dir *d, *nd;
	int r;

	pthread_mutex_lock(&p->lock);
	d = atomic_load(&th->dir);
	nd = d ? thin_dir_new(dir, slots < d->nr ? slots : d->nr) : NULL;
	if (!nd) {
		pthread_mutex_unlock(&p->lock);
		return d ? -ENOMEM : -ENOENT;
	}
	for (uint32_t i = 0; i < nd->nr; i++) {
		struct thin_leaf *l = atomic_load_explicit(&d->leaf[i], memory_order_relaxed);

		if (l)
			atomic_fetch_add_explicit(&l->refs, 1, memory_order_relaxed);
		atomic_init(&nd->leaf[i], l);
	}
	p->nr_dirs++;
	rcu_publish(th->dir, nd);
	r = thin_pool_put_dir(p, d);	/* leaves past the end go with it if it was alone */
	pthread_mutex_unlock(&p->lock);
	return r;
}

int thin_rollback(struct target *t, struct target *from)
{
	struct thin *th = to_thin(t), *f = to_thin(from);
	struct thin_pool *p = th->pool;
	struct thin_dir *d, *old;
	int r;

	if (f->pool != p)
		return -EXDEV;
	pthread_mutex_lock(&p->lock);
	old = atomic_load(&th->dir);
	d = atomic_load(&f->dir);
	if (!old || !d || d->nr != old->nr) {
		pthread_mutex_unlock(&p->lock);
		return old && d ? -EINVAL : -ENOENT;
	}
	atomic_fetch_add(&d->refs, 1);
	rcu_publish(th->dir, d);
	atomic_store(&th->mapped, atomic_load(&f->mapped));
	r = thin_pool_put_dir(p, old);
	pthread_mutex_unlock(&p->lock);
	return r;
}

/* Slot @i's entries of @d into @out (zeros where no leaf), read, not loaded. */
static int slot_entries(struct thin_pool *p, const struct thin_dir *d, uint32_t i,
			struct thin_leaf_rec *out)
{
	struct thin_leaf *l = d && i < d->nr ? atomic_load(&d->leaf[i]) : NULL;

	if (l)
		return thin_pool_leaf_peek(p, l, out);
	memset(out->map, 0, sizeof(out->map));
	return 0;
}

/*
 * Leaves that both maps share hold the same entries: skipped whole.  The
 * others are read, not loaded: a diff of two maps that share nothing
 * reads both whole, and keeps neither.
 */
int thin_diff(struct target *a, struct target *b,
	      int (*fn)(void *arg, uint64_t first, uint64_t count), void *arg)
{
	struct thin *ta = to_thin(a), *tb = to_thin(b);
	struct thin_pool *p = ta->pool;
	uint64_t run = 0, nr_run = 0;
	struct thin_leaf_rec ra, rb;
	struct thin_dir *da, *db;
	uint32_t na, nb;
	int r = 0;

	if (tb->pool != p)
		return -EXDEV;
	pthread_mutex_lock(&p->lock);
	da = atomic_load(&ta->dir);
	db = atomic_load(&tb->dir);
	na = da ? da->nr : 0;
	nb = db ? db->nr : 0;
	for (uint32_t i = 0; i < (na > nb ? na : nb) && !r; i++) {
		struct thin_leaf *la = i < na ? atomic_load(&da->leaf[i]) : NULL;
		struct thin_leaf *lb = i < nb ? atomic_load(&db->leaf[i]) : NULL;

		if (la == lb) {
			if (nr_run)
				r = fn(arg, run, nr_run);
			nr_run = 0;
			continue;
		}
		r = slot_entries(p, da, i, &ra);
		r = r ? r : slot_entries(p, db, i, &rb);
		for (unsigned int k = 0; !r && k < THIN_LEAF_ENTRIES; k++) {
			uint64_t vb = (uint64_t)i * THIN_LEAF_ENTRIES + k;

			if (ra.map[k] != rb.map[k]) {
				if (!nr_run)
					run = vb;
				nr_run++;
			} else if (nr_run) {
				r = fn(arg, run, nr_run);
				nr_run = 0;
			}
		}
	}
	if (!r && nr_run)
		r = fn(arg, run, nr_run);
	pthread_mutex_unlock(&p->lock);
	return r;
}
