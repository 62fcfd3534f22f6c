/*
 * core/target/volume.h: a volume served by the daemon, and its I/O entry points.
 *
 * A volume is a name, a size and a target.  Requests arrive here from the
 * FUSE glue: volume_read/volume_write clip them to the volume, let the
 * target map them inside an RCU read-side section, and hand the segments
 * to the calling thread's io engine.  Nothing here takes a lock.
 *
 * The RCU contract is the same for every call: the caller holds no read
 * section, each call takes the one it needs.  A read section lasts until
 * the data left (volume_read_iov: until volume_read_done), a write's
 * until its I/O completed; a deferred write runs outside one, since it
 * may wait for a grace period.
 *
 * Lifetime: the glue holds a volume while a file on it is open
 * (volume_hold); volume_retire refuses a volume that is held, so a volume
 * is destroyed only after the last holder let go and an RCU grace period
 * passed.  An admin operation that rewrites a volume's content while it
 * stays served (clone) holds it alone (volume_hold_alone): refused while
 * a file is open on it, and no file opens meanwhile, since a file system
 * on a loop device would see its blocks change under it.  Threads that
 * call in must be registered with liburcu.
 *
 * The entry points check their callers' contract and their targets'
 * (target.h) on every request, in every build: a request that would
 * break one fails with -EIO, logged once per rule (volume.c says which
 * and what that costs).
 */
#ifndef MAPPERFS_VOLUME_H
#define MAPPERFS_VOLUME_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "engine.h"
#include "target.h"

struct engine;

#define VOLUME_ZEROS_UNKNOWN	UINT64_MAX

struct volume_stats {
	_Atomic uint64_t reads, writes;			/* requests */
	_Atomic uint64_t read_bytes, write_bytes;	/* bytes */
	_Atomic uint64_t errors;			/* requests failed: I/O errors */
	_Atomic uint64_t no_space;			/* writes refused: ENOSPC */
};

struct volume {
	int64_t id;			/* the pool's id; also the inode - 1 */
	char *_Atomic name;		/* read in an RCU section; volume_rename */
	_Atomic uint64_t size;		/* bytes */
	_Atomic bool read_only;		/* writes and discards fail with -EROFS */
	int64_t created;		/* seconds since the epoch: the files' ctime */
	_Atomic int64_t modified;	/* seconds: last write (mtime), or created */
	/*
	 * Bytes: from here to the end the volume reads zeros as far as the
	 * daemon knows (it was emptied, and nothing was written there since),
	 * or VOLUME_ZEROS_UNKNOWN.  A truncate that would cut off only such
	 * zeros is harmless (fs/ops.c).
	 */
	_Atomic uint64_t zeros_from;
	struct target *_Atomic target;	/* RCU; volume_reload replaces it */
	_Atomic int holders;		/* open files, and an alone holder */
	_Atomic bool retired;		/* removed: no new holders */
	_Atomic bool alone;		/* held alone: no new holders (EBUSY) */
	struct volume_stats stats;
};

/*
 * Takes ownership of @t, also on failure.  0, -ENOMEM, or -EINVAL (logged)
 * if @t's ops leave one unset (target.h: every op is set).
 */
int volume_create(int64_t id, const char *name, uint64_t size,
		  struct target *t, struct volume **out);
/*
 * Serves @v with @t (taken) instead of its target, online, as dmsetup's
 * reload and resume do: requests that began on the old target finish on
 * it, later ones go to @t.  Waits for a grace period and for the old
 * target's calls outside read sections (a deferred write, a flush) to
 * return.  Returns the old target for the caller to destroy, or NULL and
 * destroys @t if its ops leave one unset.  Admin path.
 */
struct target *volume_reload(struct volume *v, struct target *t);

/*
 * Gives @v the name @name (malloc'ed, taken): readers in an RCU read
 * section see the old name or the new one.  Waits for a grace period
 * before it frees the old one: admin path only, outside any read section.
 */
void volume_rename(struct volume *v, char *name);
/* Destroys the volume and its target.  Only once nobody can reach it. */
void volume_destroy(struct volume *v);

/* 0, -ENOENT if the volume was retired, -EBUSY if it is held alone. */
int volume_hold(struct volume *v);
void volume_unhold(struct volume *v);
/*
 * Holds @v as its only holder: 0, or -EBUSY if anyone holds it (an open
 * file) or holds it alone already, -ENOENT if it was retired.  Until
 * volume_unhold_alone, volume_hold fails with -EBUSY and volume_retire
 * with -EBUSY, as for any holder.  Never blocks.
 */
int volume_hold_alone(struct volume *v);
/*
 * volume_hold_alone, but @theirs holders are the caller's own (the file
 * and the request of a truncate that shrinks it): -EBUSY if anyone else
 * holds it.  volume_unhold_alone lets go, and leaves @theirs held.
 */
int volume_hold_alone_with(struct volume *v, int theirs);
void volume_unhold_alone(struct volume *v);
/* Marks the volume retired.  0, or -EBUSY if it is held (then unchanged). */
int volume_retire(struct volume *v);
/* Serves a retired volume again (a change that retired it failed). */
void volume_unretire(struct volume *v);

/*
 * Reads up to @len bytes at @off into @buf.  Returns the bytes read (short
 * or 0 at the end of the volume) or -errno.  Blocks on the backing I/O;
 * takes no lock.
 */
ssize_t volume_read(struct volume *v, struct engine *e, void *buf,
		    uint64_t off, uint32_t len);
/*
 * A read waiting for its target's loader instead of holding its thread
 * (volume_read_or_wait).  The caller sets @loaded and keeps the wait in
 * place until it was called.
 */
struct volume_wait {
	struct target_wait tw;		/* volume.c's */
	struct target *t;		/* held while the load is in flight */
	/*
	 * Called once, from the loader's thread, when the load is over
	 * (@result 0, or -errno: the read will fault or fail as it would
	 * have): serve the read with volume_read now.  Must not block.  The
	 * read holds nothing any more, and volume.c does not touch @w after.
	 */
	void (*loaded)(struct volume_wait *w, int result);
};

/*
 * Reads like volume_read, except where what maps the read is not in
 * memory (a thin leaf the memory budget unloaded) and its target can load
 * it on a thread of its own (target.h: fault_start): then returns
 * -EINPROGRESS at once, not counted yet, and @w->loaded is called once
 * the load is over.  Meanwhile the read holds its target (volume_reload
 * waits for it), but no read section and no lock.  For a thread that
 * serves other requests while one waits (the io_uring rings).  Blocks on
 * the backing I/O as volume_read does, and on the store only for a miss
 * the target cannot queue (it faults it in here).
 */
ssize_t volume_read_or_wait(struct volume *v, struct engine *e, void *buf,
			    uint64_t off, uint32_t len, struct volume_wait *w);
/*
 * Reads like volume_read, but describes the data in @iov (at most
 * VOLUME_READ_IOV entries) instead of always copying it into @buf: pieces
 * on memory-mapped devices point into the mapping, the rest into @buf.
 * Returns inside an RCU read section, whatever the result, so that what
 * the pointers show cannot be freed or reused before the caller is done
 * with @iov and calls volume_read_done().  Returns the bytes read and
 * sets *nr_iov, or -errno.
 */
#define VOLUME_READ_IOV 16
ssize_t volume_read_iov(struct volume *v, struct engine *e, void *buf,
			uint64_t off, uint32_t len, struct iovec *iov,
			unsigned int *nr_iov);
/* Ends the read section of volume_read_iov().  Never blocks. */
void volume_read_done(void);
/*
 * A read of @len bytes that volume_read_iov() counted as done never
 * reached the reader (its reply failed: a mapped device shrank under it):
 * count it as failed.
 */
void volume_read_lost(struct volume *v, uint32_t len);
/*
 * Writes up to @len bytes.  Returns the bytes written (short at the end of
 * the volume), -ENOSPC at or past the end, -EROFS if it is read-only, or
 * -errno.  A write that lands sets ->modified.  Blocks on the backing
 * I/O; a write the target defers (a thin block not yet provisioned, or
 * shared with a snapshot) also takes the pool's lock, may allocate, copy
 * or zero a block and wait for a grace period or for space.
 */
ssize_t volume_write(struct volume *v, struct engine *e, const void *buf,
		     uint64_t off, uint32_t len);
/*
 * A read or write parked on the engine (engine.h: engine_start) while
 * its thread serves others: started by volume_start, ended by
 * volume_finish once engine_reap returned &io->job.  The caller keeps it
 * in place, and the buffer, until then.  Meanwhile it holds an RCU park
 * token (rcu.h) in place of the read section volume_read holds, so
 * nothing it was mapped onto is freed or reused under it.
 */
struct volume_io {
	struct engine_job job;
	struct volume *v;
	struct target *t;
	struct segs segs;
	uint64_t off;
	uint32_t len;			/* clipped to the volume */
	unsigned int park;		/* rcu_park's token */
};

/*
 * Starts a read (@write false) of up to @len bytes at @off into @buf, or
 * a write of them from it, if the target maps it at once onto devices
 * the engine can park it on (NBD devices: engine_start).  -EINPROGRESS:
 * parked.  -EAGAIN: not started (another device, a write the target
 * defers, the end of the volume, a read-only volume, an error): serve
 * it with volume_read or volume_write, which say why.  Returns nothing
 * else.  Takes no lock; may block to connect to an NBD server.
 */
int volume_start(struct volume_io *io, struct volume *v, struct engine *e, bool write,
		 void *buf, uint64_t off, uint32_t len);
/*
 * Ends a parked request, its token given back: the bytes read or
 * written, or -EAGAIN when the devices failed it: then volume_retry
 * ends it.  Never blocks.
 */
ssize_t volume_finish(struct volume_io *io);
/*
 * A request volume_finish said -EAGAIN of: the target's retry (a mirror
 * reads or writes its other legs; else the failure stands), counted as
 * volume_read or volume_write count.  May block and wait for a grace
 * period, so the calling thread must hold no park token (it finishes
 * every parked request first).  The bytes, or -errno.
 */
ssize_t volume_retry(struct volume_io *io, struct engine *e);

/*
 * Makes every write completed before the call durable (fsync, O_DSYNC).
 * Blocks, for as long as the devices and the store take: a linear or
 * switch volume fdatasyncs its devices; a thin volume commits its pool
 * (thin_pool_commit: fdatasync of the data devices, one SQLite COMMIT of
 * the metadata changed so far, then an RCU grace period before freed
 * blocks may be reused), waiting behind a commit in progress and retrying
 * a failing one for up to THIN_COMMIT_PATIENCE_MS.  0 or -EIO.
 */
int volume_flush(struct volume *v, struct engine *e);
/*
 * Bytes [@off, @off + @len) may not read zeros any more: moves ->zeros_from
 * past them.  volume_write() calls it; so does whoever changes a volume's
 * content another way.  Never blocks.
 */
void volume_written(struct volume *v, uint64_t off, uint64_t len);
/*
 * Discards or zeroes [@off, @off + @len), as a block device's fallocate
 * does with FALLOC_FL_KEEP_SIZE (blkdev_fallocate): a range that runs past
 * the end is cut at it, one that starts at or past it is -EINVAL.  -EROFS
 * if it is read-only; 0 for an empty range.  Blocks: on the devices
 * (fallocate), and on a thin volume behind its writes in flight and the
 * pool's lock.
 */
int volume_discard(struct volume *v, struct engine *e, uint64_t off,
		   uint64_t len, enum discard_mode mode);
/*
 * lseek(SEEK_DATA/SEEK_HOLE).  0, -ENXIO at or past the end, -EINVAL.
 * O(blocks from @off to the answer) for a thin volume, O(1) otherwise;
 * never blocks.
 */
int volume_seek(struct volume *v, uint64_t off, int whence, uint64_t *out);
/*
 * volume_seek as if the volume ended @len bytes past @off (or at its end):
 * the scan costs O(@len), not O(size).  A hole to there is -ENXIO for
 * SEEK_DATA; SEEK_HOLE finds one there at the latest.  @len 0 is -ENXIO.
 */
int volume_seek_within(struct volume *v, uint64_t off, uint64_t len, int whence,
		       uint64_t *out);
/* Bytes the volume takes on its devices (st_blocks * 512).  O(1); never blocks. */
uint64_t volume_mapped_bytes(struct volume *v);

#endif
