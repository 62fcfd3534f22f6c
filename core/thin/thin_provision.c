/*
 * core/thin/thin_provision.c: the thin target's slow path, a write that
 * map() deferred (thin.c).
 *
 * The slow path (thin_provision_write) runs on the writing thread under
 * the pool lock for the bookkeeping only.  dm-thin hands such bios to its
 * worker thread; we do the same work on the FUSE thread that already waits
 * for the answer, which saves two thread hops per first write and keeps as
 * many provisioning writes in flight as there are FUSE threads.  What
 * dm-thin gets from its single worker we get from the lock: two writers
 * racing for one block never both allocate.  The first takes a block,
 * marks the entry THIN_PROVISIONING (keeping the old value under the flag,
 * so readers go on reading the old block or zeros and never wait), drops
 * the lock, writes the data and zeroes (or copies from the shared block)
 * the part of the block the write does not cover, and publishes the entry
 * with a release store.  The second finds the flag and waits for it to
 * clear, then writes in place.
 *
 * Breaking sharing is lazy and page by page, as dm-thin breaks sharing of
 * btree nodes: the first write after a snapshot copies the directory
 * (each leaf gains a reference), then the leaf (each data block gains one,
 * dm-thin's inc_children), then copies the block on write.  A snapshot is
 * therefore one reference more on a directory, whatever the volume maps
 * (thin_pool_own_leaf).
 *
 * The file follows a first write: claim_block, fill_block, settle, and
 * thin_provision_write, which puts the three together.  The functions a
 * first write to a hole crosses, in order (after a snapshot
 * thin_pool_own_leaf copies pages instead of making a leaf, and
 * fill_chunk copies the old block instead of zeroing):
 *
 *   volume_write (volume.c)  thin_map (thin.c): not owned alone: MAP_DEFER
 *   thin_write_deferred (thin.c): one block at a time
 *   thin_provision_write, pool lock taken
 *     claim_block   thin_wait_resumed (thin_int.h): while suspended
 *                   thin_pool_own_leaf (thin_pool.c): the leaf made
 *                   thin_pool_new_block (thin_pool.c): may drop the lock,
 *                     so claim_block looks at the entry once more
 *     entry |= THIN_PROVISIONING, lock dropped
 *     fill_block    fill_chunk, per chunk of up to 1 MiB (a whole block
 *                   of the usual sizes): block_io of the data alone if
 *                   it covers the chunk, device_zero if the chunk read as
 *                   zeros and has none; else load_range (block_io from
 *                   the old block, the origin through thin_push_unmapped
 *                   (thin_origin.c), or zeros) into the engine's scratch
 *                   buffer, the data laid over it, one block_io
 *     pool lock taken
 *     settle        the entry published (release store)
 *                   thin_pool_mark_leaf (thin_pool.c): the next commit
 *                     writes the leaf
 *     lock dropped
 */
#include "thin_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "engine.h"
#include "rcu.h"

#define COPY_CHUNK	(1u << 20)	/* bytes per read/write when copying */

enum { CLAIM_IN_PLACE = 1 };	/* claim_block: write the old block in place */

/*
 * Step 1: the entry of @vb in a leaf of the volume's own (*l, *old) and a
 * new block for it (*nb).  Waits while the volume is suspended or another
 * write provisions the entry; the allocator may drop the lock too; each
 * time it looks at the entry again.  Lock held, dropped meanwhile.
 * Returns 0, CLAIM_IN_PLACE if the block became the volume's alone
 * (another write provisioned it), or -errno; with either of the last two
 * it holds no new block.
 */
static int claim_block(struct thin *th, uint64_t vb, struct thin_leaf **l,
		       uint32_t *old, uint32_t *nb)
{
	struct thin_pool *p = th->pool;
	bool have_new = false;
	int r;

	for (;;) {
		thin_wait_resumed(th);
		r = thin_pool_own_leaf(p, th, vb, l);
		if (r)
			break;
		*old = atomic_load(&(*l)->e[vb % THIN_LEAF_ENTRIES]);
		if (*old & THIN_PROVISIONING) {
			pthread_cond_wait(&p->changed, &p->lock);
			continue;
		}
		if (*old && thin_alloc_exclusive(&p->alloc, *old - 1)) {
			r = CLAIM_IN_PLACE;
			break;
		}
		if (have_new)
			return 0;
		/* May drop the lock: look at the entry again after. */
		r = thin_pool_new_block(p, nb);
		if (r)
			return r;
		have_new = true;
	}
	/*
	 * Whatever changed while the lock was dropped (a snapshot shared the
	 * map and the metadata is full, the volume was removed, another write
	 * provisioned the block), the block taken is not published: it goes
	 * back, or it would stay counted with nothing mapping it.
	 */
	if (have_new)
		thin_alloc_unnew(&p->alloc, *nb);
	return r;
}

/* Transfers [in, in + n) of data block @b from or to @buf. */
static int block_io(struct thin_pool *p, struct engine *e, uint32_t b,
		    uint32_t in, uint32_t n, void *buf, bool write)
{
	return thin_data_io(p, e, ((uint64_t)b << p->block_shift) + in, n, buf, write);
}

/* Zeroes [in, in + n) of data block @b on the devices. */
static int zero_range(struct thin_pool *p, struct engine *e, uint32_t b, uint32_t in,
		      uint32_t n)
{
	return thin_data_zero(p, e, ((uint64_t)b << p->block_shift) + in, n);
}

/*
 * Reads into @buf what [in, in + n) of the block that stands for volume
 * offset @vol_off reads as before the write: @old's bytes, or the
 * origin's, or zeros.  @n <= COPY_CHUNK.
 */
static int load_range(struct thin *th, struct engine *e, uint64_t vol_off, uint32_t old,
		      uint32_t in, uint32_t n, void *buf)
{
	struct segs segs;
	int r;

	if (old)
		return block_io(th->pool, e, old - 1, in, n, buf, false);
	if (!th->origin || vol_off + in >= th->origin_size) {
		memset(buf, 0, n);
		return 0;
	}
	segs_init(&segs);
	/*
	 * A miss is a thin origin's leaf not loaded: loaded and held while we
	 * map again.  A miss after that is the origin's own origin, unloaded
	 * again meanwhile: a few more tries.
	 */
	for (int tries = 0;; tries++) {
		r = tries ? th->origin->ops->fault(th->origin, vol_off + in, n, true) : 0;
		if (r)
			break;
		rcu_read_begin();
		r = thin_push_unmapped(th, vol_off + in, n, 0, &segs);
		rcu_read_end();
		if (tries)
			th->origin->ops->fault_release(th->origin);
		if (r != MAP_MISS || tries == 8)
			break;
	}
	if (r == MAP_MISS)
		r = -EIO;
	if (!r)
		r = engine_read(e, &segs, buf);
	segs_release(&segs);
	return r;
}

/*
 * Makes chunk [at, at + c) of new block @nb read as it did before (@old,
 * the origin or zeros), with [from, to) of it taken from @data (the
 * write's bytes for [from, to); from == to: none).
 * What the chunk read as is loaded into the engine's scratch buffer, the
 * data laid over it, and the chunk written once.  Short cuts: a chunk the
 * data covers is written from it; one that read as zeros is zeroed on the
 * device when no data falls in it, and left out but for the data when the
 * pool does not zero new blocks.
 */
static int fill_chunk(struct thin *th, struct engine *e, uint32_t nb, uint64_t vol_off,
		      uint32_t old, uint32_t at, uint32_t c, uint32_t from, uint32_t to,
		      const char *data)
{
	struct thin_pool *p = th->pool;
	bool zeros = !old && (!th->origin || vol_off + at >= th->origin_size);
	bool zero = atomic_load_explicit(&p->zero, memory_order_relaxed);
	char *buf;
	int r;

	if (from == at && to == at + c)
		return block_io(p, e, nb, at, c, (void *)data, true);
	if (zeros && from == to)
		return zero ? zero_range(p, e, nb, at, c) : 0;
	if (zeros && !zero)
		return block_io(p, e, nb, from, to - from, (void *)data, true);
	buf = engine_scratch(e, c);
	if (!buf)
		return -ENOMEM;
	r = load_range(th, e, vol_off, old, at, c, buf);
	if (r)
		return r;
	memcpy(buf + (from - at), data, to - from);
	return block_io(p, e, nb, at, c, buf, true);
}

/*
 * Step 2, lock not held: makes new block @nb, which stands for volume
 * block @vb, read as @old did (or the origin, or zeros) with @n bytes of
 * @src at @in; chunk by chunk of at most COPY_CHUNK, a whole block of the
 * usual sizes, so that a small first write into a shared block costs one
 * read and one write.
 */
static int fill_block(struct thin *th, struct engine *e, uint32_t nb, uint64_t vb,
		      uint32_t old, uint32_t in, uint32_t n, const void *src)
{
	uint32_t size = th->pool->params.block_size, c;
	uint64_t vol_off = vb << th->pool->block_shift;
	int r = 0;

	for (uint32_t at = 0; at < size && !r; at += c) {
		uint32_t from, to;

		c = size - at < COPY_CHUNK ? size - at : COPY_CHUNK;
		from = in > at ? in : at;
		to = in + n < at + c ? in + n : at + c;
		if (from < to)
			r = fill_chunk(th, e, nb, vol_off, old, at, c, from, to,
				       (const char *)src + (from - in));
		else
			r = fill_chunk(th, e, nb, vol_off, old, at, c, at, at, NULL);
	}
	return r;
}

/* Step 3: publishes the outcome of provisioning @vb.  Lock held. */
static int settle(struct thin *th, uint64_t vb, uint32_t old, uint32_t nb, int r)
{
	struct thin_pool *p = th->pool;
	struct thin_dir *d = atomic_load(&th->dir);
	struct thin_leaf *l = atomic_load(&d->leaf[vb / THIN_LEAF_ENTRIES]);
	_Atomic uint32_t *slot = &l->e[vb % THIN_LEAF_ENTRIES];

	th->provisioning--;
	pthread_cond_broadcast(&p->changed);
	if (r) {
		atomic_store_explicit(slot, old, memory_order_release);
		thin_alloc_unnew(&p->alloc, nb);
		return r;
	}
	atomic_store_explicit(slot, nb + 1, memory_order_release);
	thin_alloc_published(&p->alloc, nb);
	r = thin_pool_mark_leaf(p, l);
	if (old) {
		thin_alloc_put(&p->alloc, old - 1);
		return r;
	}
	atomic_fetch_add(&th->mapped, 1);
	return r;
}

/* The three steps, with the lock taken and dropped between them. */
int thin_provision_write(struct thin *th, struct engine *e, uint64_t vb,
			 uint32_t in, uint32_t n, const void *src)
{
	struct thin_pool *p = th->pool;
	struct thin_leaf *l;
	uint32_t old = 0, nb = 0;
	int r;

	pthread_mutex_lock(&p->lock);
	r = claim_block(th, vb, &l, &old, &nb);
	if (r == CLAIM_IN_PLACE) {
		/* Ours alone now (someone provisioned it): in place. */
		atomic_fetch_add(&th->inflight, 1);
		pthread_mutex_unlock(&p->lock);
		r = block_io(p, e, old - 1, in, n, (void *)src, true);
		atomic_fetch_sub(&th->inflight, 1);
		return r;
	}
	if (r) {
		pthread_mutex_unlock(&p->lock);
		return r;
	}
	atomic_store_explicit(&l->e[vb % THIN_LEAF_ENTRIES], old | THIN_PROVISIONING,
			      memory_order_release);
	th->provisioning++;
	pthread_mutex_unlock(&p->lock);

	r = fill_block(th, e, nb, vb, old, in, n, src);

	pthread_mutex_lock(&p->lock);
	r = settle(th, vb, old, nb, r);
	pthread_mutex_unlock(&p->lock);
	return r;
}
