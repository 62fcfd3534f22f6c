/*
 * core/pool/pool_clone.c: server-side copies between volumes (copy_file_range
 * on the mount, and `mapperctl clone`).
 *
 * Between two thin volumes of one thin pool whose offsets sit alike in
 * their blocks, whole blocks are not copied but shared (thin_share):
 * each data block gains a reference, as a snapshot's do, so the copy
 * takes no space and no time per byte; the first write to either side
 * copies the block then.  The partial blocks at either end, blocks that
 * read an external origin, and every other pair of volumes are copied by
 * reading and writing through the volumes, as the kernel's fallback
 * would, in the daemon; but the source's holes (SEEK_HOLE) are not read
 * and written: the destination is discarded there, so that a thin
 * destination keeps a hole a hole (and writes zeros only over a block it
 * maps) rather than allocating a block of zeros.
 *
 * The sharing runs under the admin lock, so that it never suspends two
 * volumes in the other order than a group snapshot does; the copying of
 * bytes runs without it (a write may wait for a full pool to grow, which
 * the monitor does under that lock).
 */
#include "pool_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "log.h"
#include "size.h"
#include "thin.h"
#include "volume.h"

#define COPY_CHUNK	(1u << 20)		/* bytes per read/write */
#define COPY_MAX	(64ull << 20)		/* bytes copied per call, the rest short */

/*
 * The run of bytes from @off, at most @len: *n of them, a hole of @src
 * (*hole) or data.  0 or -errno.
 */
static int next_run(struct volume *src, uint64_t off, uint64_t len, bool *hole,
		    uint64_t *n)
{
	uint64_t at;
	int r = volume_seek_within(src, off, len, SEEK_DATA, &at);

	if (r == -ENXIO) {		/* a hole to there */
		at = off + len;
		r = 0;
	}
	*hole = at > off;
	if (!r && !*hole)
		r = volume_seek_within(src, off, len, SEEK_HOLE, &at);
	if (r)
		return r;
	*n = at - off < len ? at - off : len;
	return *n ? 0 : -EIO;		/* a seek that does not move */
}

/*
 * Copies @len bytes: data by reading and writing, the holes of @src by
 * discarding @dst there (it reads zeros after).  Adds them to @how.
 */
static int copy_bytes(struct volume *src, uint64_t src_off, struct volume *dst,
		      uint64_t dst_off, uint64_t len, struct engine *e,
		      struct pool_copied *how)
{
	uint64_t run = 0;
	bool hole = false;
	void *buf;
	int r = 0;

	if (posix_memalign(&buf, 4096, COPY_CHUNK))
		return -ENOMEM;
	while (len && !r) {
		ssize_t got;

		if (!run)
			r = next_run(src, src_off, len, &hole, &run);
		if (!r && hole)
			r = volume_discard(dst, e, dst_off, run, DISCARD_ZERO);
		if (r)
			break;
		if (hole) {
			how->holes += run;
			got = (ssize_t)run;
		} else {
			got = volume_read(src, e, buf, src_off,
					  run < COPY_CHUNK ? (uint32_t)run : COPY_CHUNK);
			if (got == 0)
				got = -EIO;
			if (got > 0)
				got = volume_write(dst, e, buf, dst_off, (uint32_t)got);
			if (got < 0) {
				r = (int)got;
				break;
			}
			how->copied += (uint64_t)got;
		}
		src_off += (uint64_t)got;
		dst_off += (uint64_t)got;
		len -= (uint64_t)got;
		run -= (uint64_t)got;
	}
	free(buf);
	return r;
}

/* The block size if @src and @dst are thin volumes of one pool, else 0. */
static uint32_t shared_block_size(struct pool *p, struct volume *src, struct volume *dst)
{
	struct pool_volume *s = pool_volume_by_id(p, src->id);
	struct pool_volume *d = pool_volume_by_id(p, dst->id);
	struct pool_volume *tp;

	if (!s || !d || s->served != src || d->served != dst || s->type != &thin_type ||
	    d->type != &thin_type || s->thin.rec.pool != d->thin.rec.pool)
		return 0;
	tp = pool_volume_by_id(p, s->thin.rec.pool);
	return tp && tp->tp.pool ? tp->tp.rec.block_size : 0;
}

/* The bytes @how counts, all told. */
static uint64_t total(const struct pool_copied *how)
{
	return how->shared + how->copied + how->holes;
}

/* Shares whole blocks from @src_off; copies a block it cannot share. */
static int share_blocks(struct pool *p, struct volume *src, uint64_t src_off,
			struct volume *dst, uint64_t dst_off, uint64_t len, uint32_t bs,
			struct engine *e, struct pool_copied *how)
{
	int r = 0;

	while (len >= bs && !r) {
		uint64_t shared = 0, mapped = 0;

		pool_admin_lock(p);
		if (shared_block_size(p, src, dst) != bs)
			r = -EXDEV;	/* changed meanwhile */
		else
			r = thin_share(dst->target, dst_off / bs, src->target, src_off / bs,
				       len / bs, &shared, &mapped);
		pool_admin_unlock(p);
		how->shared += mapped * bs;
		how->holes += (shared - mapped) * bs;
		src_off += shared * bs;
		dst_off += shared * bs;
		len -= shared * bs;
		if (!r && len >= bs)	/* stopped at a block it must copy */
			r = copy_bytes(src, src_off, dst, dst_off, bs, e, how);
		if (!r && len >= bs) {
			src_off += bs;
			dst_off += bs;
			len -= bs;
		}
	}
	return r;
}

int pool_clone_range(struct pool *p, struct volume *src, uint64_t src_off,
		     struct volume *dst, uint64_t dst_off, uint64_t len,
		     struct engine *e, struct pool_copied *how)
{
	uint64_t src_size = atomic_load(&src->size), dst_size = atomic_load(&dst->size);
	uint64_t head, body, done;
	uint32_t bs;
	int r;

	*how = (struct pool_copied){ 0 };
	if (atomic_load(&dst->read_only))
		return -EROFS;
	if (src_off >= src_size || dst_off >= dst_size)
		return 0;
	if (len > src_size - src_off)
		len = src_size - src_off;
	if (len > dst_size - dst_off)
		len = dst_size - dst_off;
	volume_written(dst, dst_off, len);	/* before: a racing truncate sees it */
	pool_admin_lock(p);
	bs = shared_block_size(p, src, dst);
	pool_admin_unlock(p);
	if (!bs || src_off % bs != dst_off % bs) {
		r = copy_bytes(src, src_off, dst, dst_off, len < COPY_MAX ? len : COPY_MAX, e,
			       how);
		return total(how) ? 0 : r;
	}
	head = (bs - dst_off % bs) % bs;
	if (head > len)
		head = len;
	r = copy_bytes(src, src_off, dst, dst_off, head, e, how);
	body = (len - head) / bs * bs;
	if (!r && body)
		r = share_blocks(p, src, src_off + head, dst, dst_off + head, body, bs, e, how);
	done = total(how);
	if (!r && done == head + body)
		r = copy_bytes(src, src_off + done, dst, dst_off + done, len - done, e, how);
	return total(how) ? 0 : r;
}

/* Holds both volumes for the copy; -ENOENT if either is being removed. */
static int hold_both(struct volume *a, struct volume *b)
{
	if (volume_hold(a))
		return -ENOENT;
	if (volume_hold(b)) {
		volume_unhold(a);
		return -ENOENT;
	}
	return 0;
}

int pool_clone(struct pool *p, const char *src, const char *dst, struct pool_copied *how,
	       struct pool_error *err)
{
	char shared[SIZE_STR_LEN], copied[SIZE_STR_LEN], holes[SIZE_STR_LEN];
	struct volume *sv = NULL, *dv = NULL;
	struct pool_volume *s, *d;
	uint64_t done = 0, size = 0;
	struct engine e;
	int r;

	pool_admin_lock(p);
	r = pool_volume_get(p, src, NULL, false, &s, err);
	if (!r && !pool_volume_by_name(p, dst))
		r = pool_fail(err, -ENOENT, "no volume '%s' (clone copies into an existing "
			      "volume: create it first)", dst);
	if (!r)
		r = pool_volume_get(p, dst, NULL, false, &d, err);
	if (!r && (!s->type->served || !d->type->served))
		r = pool_fail(err, -EINVAL, "'%s' is a thin pool, not a volume",
			      s->type->served ? dst : src);
	if (!r && s == d)
		r = pool_fail(err, -EINVAL, "'%s' cannot be cloned into itself", src);
	if (!r && d->rec.read_only)
		r = pool_fail(err, -EROFS, "volume '%s' is read-only", dst);
	if (!r && d->rec.size < s->rec.size)
		r = pool_fail(err, -ENOSPC, "volume '%s' is smaller than '%s'", dst, src);
	if (!r && hold_both(s->served, d->served))
		r = pool_fail(err, -ENOENT, "'%s' or '%s' is being removed", src, dst);
	if (!r) {
		sv = s->served;
		dv = d->served;
		size = s->rec.size;
	}
	pool_admin_unlock(p);
	if (r)
		return r;
	*how = (struct pool_copied){ 0 };
	r = engine_init(&e, 8);
	if (r) {
		pool_fail(err, r, "cannot set up I/O: %s", strerror(-r));
		goto out;
	}
	while (!r && done < size) {
		struct pool_copied n;

		r = pool_clone_range(p, sv, done, dv, done, size - done, &e, &n);
		if (!r && !total(&n))
			r = -EIO;
		done += total(&n);
		how->shared += n.shared;
		how->copied += n.copied;
		how->holes += n.holes;
	}
	pool_stale_file(p, dv->id);	/* its content, also if cut short */
	/* Durable as it returns; a thin pool's commit also frees what was replaced. */
	if (!r)
		r = volume_flush(dv, &e);
	engine_exit(&e);
	if (r)
		pool_fail(err, r, "cannot clone '%s' into '%s' past byte %llu: %s", src, dst,
			  (unsigned long long)done, strerror(-r));
	else
		log_info("cloned volume '%s' into '%s': %s shared, %s copied, %s of holes "
			 "left holes", src, dst, format_size(how->shared, shared),
			 format_size(how->copied, copied), format_size(how->holes, holes));
out:
	volume_unhold(sv);
	volume_unhold(dv);
	return r;
}
