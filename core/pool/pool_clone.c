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
 * maps) rather than allocating a block of zeros.  What the source cannot
 * tell a hole (a linear volume on a block device, a trimmed disk that
 * reads zeros) is read, and a whole block of the thin destination that
 * reads zeros is discarded rather than written: a clone into a thin
 * volume maps only the blocks that hold something.
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

/* Whether the @n bytes at @p are all zero. */
static bool all_zero(const char *p, size_t n)
{
	return !n || (!p[0] && !memcmp(p, p + 1, n - 1));
}

/* Writes all @n bytes of @buf to @dst at @off.  0 or -errno. */
static int write_all(struct volume *dst, struct engine *e, const char *buf, uint64_t off,
		     uint32_t n)
{
	while (n) {
		ssize_t w = volume_write(dst, e, buf, off, n);

		if (w <= 0)
			return w ? (int)w : -EIO;
		buf += w;
		off += (uint64_t)w;
		n -= (uint32_t)w;
	}
	return 0;
}

/*
 * The piece of @buf[@at, @n) up to the next boundary of @unit on the
 * destination (at @dst_off), and whether it is a whole unit of zeros.
 */
static uint32_t piece(const char *buf, uint32_t at, uint32_t n, uint64_t dst_off,
		      uint32_t unit, bool *zero)
{
	uint32_t len = unit ? unit - (uint32_t)((dst_off + at) % unit) : n - at;

	if (len > n - at)
		len = n - at;
	*zero = unit && len == unit && all_zero(buf + at, len);
	return len;
}

/*
 * Writes the @n bytes read into @buf to @dst at @dst_off, but where @unit
 * (the block of a thin destination, at most a chunk; 0: any other) is set,
 * discards the whole units that read zeros instead: a thin volume then
 * maps no block for them.  A run of such units goes in one discard, so
 * that whole blocks are unmapped.  Adds to how->copied and how->zeros.
 */
static int write_data(struct volume *dst, uint64_t dst_off, const char *buf, uint32_t n,
		      uint32_t unit, struct engine *e, struct pool_copied *how)
{
	uint32_t at = 0;
	int r = 0;

	while (at < n && !r) {
		bool zero, next;
		uint32_t end = at + piece(buf, at, n, dst_off, unit, &zero);

		while (end < n) {
			uint32_t len = piece(buf, end, n, dst_off, unit, &next);

			if (next != zero)
				break;
			end += len;
		}
		if (zero)
			r = volume_discard(dst, e, dst_off + at, end - at, DISCARD_ZERO);
		else
			r = write_all(dst, e, buf + at, dst_off + at, end - at);
		if (!r)
			*(zero ? &how->zeros : &how->copied) += end - at;
		at = end;
	}
	return r;
}

/*
 * Copies @len bytes: data by reading and writing (write_data: a thin
 * destination's whole blocks of zeros are discarded), the holes of @src
 * by discarding @dst there (it reads zeros after).  Reads end on a
 * boundary of @unit where they can, so that no block of zeros is split
 * between two reads.  Adds them to @how.
 */
static int copy_bytes(struct volume *src, uint64_t src_off, struct volume *dst,
		      uint64_t dst_off, uint64_t len, uint32_t unit, struct engine *e,
		      struct pool_copied *how)
{
	uint64_t run = 0;
	bool hole = false;
	void *buf;
	int r = 0;

	if (posix_memalign(&buf, 4096, COPY_CHUNK))
		return -ENOMEM;
	while (len && !r) {
		uint32_t n = COPY_CHUNK;
		ssize_t got;

		if (!run)
			r = next_run(src, src_off, len, &hole, &run);
		if (r)
			break;
		if (hole) {
			r = volume_discard(dst, e, dst_off, run, DISCARD_ZERO);
			if (r)
				break;
			how->holes += run;
			got = (ssize_t)run;
		} else {
			if (unit)
				n -= (uint32_t)((dst_off + n) % unit);
			got = volume_read(src, e, buf, src_off, run < n ? (uint32_t)run : n);
			if (got == 0)
				got = -EIO;
			if (got > 0)
				r = write_data(dst, dst_off, buf, (uint32_t)got, unit, e, how);
			if (got < 0)
				r = (int)got;
			if (r)
				break;
		}
		src_off += (uint64_t)got;
		dst_off += (uint64_t)got;
		len -= (uint64_t)got;
		run -= (uint64_t)got;
	}
	free(buf);
	return r;
}

/*
 * The block size of @v's thin pool if it is a served thin volume, else 0.
 * Admin lock held.
 */
static uint32_t thin_block_size(struct pool *p, struct volume *v)
{
	struct pool_volume *pv = pool_volume_by_id(p, v->id);
	struct pool_volume *tp;

	if (!pv || pv->served != v || pv->type != &thin_type)
		return 0;
	tp = pool_volume_by_id(p, pv->thin.rec.pool);
	return tp && tp->tp.pool ? tp->tp.rec->block_size : 0;
}

/* The block size if @src and @dst are thin volumes of one pool, else 0. */
static uint32_t shared_block_size(struct pool *p, struct volume *src, struct volume *dst)
{
	uint32_t bs = thin_block_size(p, src);

	if (!bs || thin_block_size(p, dst) != bs ||
	    pool_volume_by_id(p, src->id)->thin.rec.pool !=
	    pool_volume_by_id(p, dst->id)->thin.rec.pool)
		return 0;
	return bs;
}

/* What a copy into @dst checks for zeros: its thin block, at most a chunk, or 0. */
static uint32_t zero_unit(struct pool *p, struct volume *dst)
{
	uint32_t bs = thin_block_size(p, dst);

	return bs < COPY_CHUNK ? bs : COPY_CHUNK;
}

/* The bytes @how counts, all told. */
static uint64_t total(const struct pool_copied *how)
{
	return how->shared + how->copied + how->holes + how->zeros;
}

/* Shares whole blocks from @src_off; copies a block it cannot share. */
static int share_blocks(struct pool *p, struct volume *src, uint64_t src_off,
			struct volume *dst, uint64_t dst_off, uint64_t len, uint32_t bs,
			uint32_t unit, struct engine *e, struct pool_copied *how)
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
			r = copy_bytes(src, src_off, dst, dst_off, bs, unit, e, how);
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
	uint32_t bs, unit;
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
	unit = zero_unit(p, dst);
	pool_admin_unlock(p);
	if (!bs || src_off % bs != dst_off % bs) {
		r = copy_bytes(src, src_off, dst, dst_off, len < COPY_MAX ? len : COPY_MAX, unit,
			       e, how);
		return total(how) ? 0 : r;
	}
	head = (bs - dst_off % bs) % bs;
	if (head > len)
		head = len;
	r = copy_bytes(src, src_off, dst, dst_off, head, unit, e, how);
	body = (len - head) / bs * bs;
	if (!r && body)
		r = share_blocks(p, src, src_off + head, dst, dst_off + head, body, bs, unit, e,
				 how);
	done = total(how);
	if (!r && done == head + body)
		r = copy_bytes(src, src_off + done, dst, dst_off + done, len - done, unit, e, how);
	return total(how) ? 0 : r;
}

/*
 * Holds @s for the copy, and @d alone: the copy rewrites it, so it must
 * not be open (a file system on a loop device would see its blocks
 * change under it), nor be opened until the copy is done.  Admin lock held.
 */
static int hold_for_clone(struct pool_volume *s, struct pool_volume *d,
			  struct pool_error *err)
{
	int r = volume_hold(s->served);

	if (r)
		return pool_fail(err, r, "volume '%s' is %s", s->rec.name,
				 r == -ENOENT ? "being removed" : "being cloned into");
	r = volume_hold_alone(d->served);
	if (r) {
		volume_unhold(s->served);
		return pool_fail(err, r, "volume '%s' is %s", d->rec.name,
				 r == -ENOENT ? "being removed" : "busy (open)");
	}
	return 0;
}

int pool_clone(struct pool *p, const char *src, const char *dst, struct pool_copied *how,
	       struct pool_error *err)
{
	char shared[SIZE_STR_LEN], copied[SIZE_STR_LEN], holes[SIZE_STR_LEN], zeros[SIZE_STR_LEN];
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
	if (!r)
		r = hold_for_clone(s, d, err);
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
		how->zeros += n.zeros;
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
			 "and %s of zeros left holes", src, dst, format_size(how->shared, shared),
			 format_size(how->copied, copied), format_size(how->holes, holes),
			 format_size(how->zeros, zeros));
out:
	volume_unhold(sv);
	volume_unhold_alone(dv);
	return r;
}
