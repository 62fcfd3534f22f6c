/*
 * core/target/target.h: the interface every target (linear, thin, switch)
 * implements, in the manner of a device-mapper target_type.
 *
 * map() is the fast path.  It runs inside an RCU read-side section, does
 * atomic loads only, never blocks, never allocates more than segs_push
 * needs and never calls SQLite; what it cannot answer that way it returns
 * as MAP_DEFER, and volume.c calls the target's write_deferred(), which
 * may block; or, where the map it needs is not in memory (a thin leaf not
 * loaded yet), as MAP_MISS, and volume.c calls fault(), which loads it,
 * and maps again; or, for a read whose thread has other requests to
 * serve meanwhile (volume_read_or_wait), fault_start(), which hands the
 * load to the target's own thread and lets the read wait for it there.
 * Every other op is a slow path and may block.
 *
 * A write may be remapped onto several copies (a mirror's legs): its
 * segments then cover the request exactly, in order, once per copy, one
 * copy after the other.  A remapped request that failed on the devices is
 * handed to read_failed() or write_failed(), outside the read section,
 * which may do it again another way (a mirror: from or to each leg in
 * turn, marking the legs that fail).
 *
 * Every op is set: a target without a use for one names the default
 * below, so volume.c, the one dispatcher, calls them without looking
 * first (volume_create refuses a target with an op unset).  The
 * dispatcher checks what the ops answer on every request, in every build:
 * a remapped request covered exactly and in order, no read deferred, a
 * seek inside the range asked, no positive number where 0 or -errno is
 * due.  An answer that breaks the contract fails the request with -EIO
 * and is logged once (volume.c).
 */
#ifndef MAPPERFS_TARGET_H
#define MAPPERFS_TARGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "segs.h"

struct engine;

enum io_dir {
	IO_READ,
	IO_WRITE,
};

enum map_result {
	MAP_REMAPPED = 0,	/* @out covers the whole range */
	MAP_DEFER = 1,		/* hand the request to write_deferred() */
	MAP_MISS = 2,		/* call fault() and map again */
};

enum discard_mode {
	DISCARD_PUNCH,		/* fallocate(PUNCH_HOLE): reads zeros after */
	DISCARD_ZERO,		/* fallocate(ZERO_RANGE): reads zeros after */
	DISCARD_UNMAP,		/* device_discard: reads anything after; a thin
				 * pool's freed blocks, passed down */
};

struct target;

/*
 * A read waiting for what a target loads on its own thread (fault_start).
 * The waiter sets @done; the target owns @next while the wait is queued.
 */
struct target_wait {
	/*
	 * Called once, from the target's loading thread, when the load is
	 * over: @result 0 (loaded: map again; it may have been unloaded
	 * again since, and fault() then loads it) or -errno (not loaded).
	 * Must not block.  The target does not touch @w after the call.
	 */
	void (*done)(struct target_wait *w, int result);
	struct target_wait *next;
};

struct target_ops {
	const char *name;
	/*
	 * Whether map() may be called for a request that is then mapped
	 * again (volume_start maps it to see if it can park, and leaves it to
	 * volume_read or volume_write if not): false for a target whose map()
	 * does what a second call would do twice (switch counts each path's
	 * bytes there; mirror marks the regions a write dirties).
	 */
	bool parks;

	/*
	 * Maps [off, off + len) of the volume, which the caller has checked
	 * lies inside it, onto segments appended to @out.  Returns a
	 * map_result or -errno (-ENOMEM).
	 */
	int (*map)(struct target *t, enum io_dir dir, uint64_t off,
		   uint32_t len, struct segs *out);

	/*
	 * Loads what map() needs for [off, off + len) and answered MAP_MISS
	 * for, outside the read section.  May block.  0 or -errno.  With
	 * @hold and 0, what it loaded stays loaded until fault_release(),
	 * which the caller calls once it has mapped again, blocking on
	 * nothing in between (a thin pool holds its lock, so its eviction
	 * cannot unload the leaves meanwhile).
	 */
	int (*fault)(struct target *t, uint64_t off, uint32_t len, bool hold);
	void (*fault_release)(struct target *t);

	/*
	 * Starts loading what map() answered MAP_MISS for, for a read of
	 * [off, off + len), on the target's own thread, without waiting.
	 * Called inside the read section: never blocks but on a short lock,
	 * never waits for a grace period.  0: queued, @w->done will be
	 * called; -errno: nothing queued (-EAGAIN: the target cannot load
	 * this miss that way), call fault() instead.
	 */
	int (*fault_start)(struct target *t, uint64_t off, uint32_t len,
			   struct target_wait *w);

	/* Writes what map() deferred.  May block.  0 or -errno. */
	int (*write_deferred)(struct target *t, struct engine *e, uint64_t off,
			      uint32_t len, const void *buf);

	/*
	 * The remapped read of [off, off + len) into @buf failed on the
	 * devices with @err: read it again another way, or return @err.
	 * May block on I/O, but never waits for a grace period: it may be
	 * called inside the read section of a zero-copy read.  0 or -errno.
	 */
	int (*read_failed)(struct target *t, struct engine *e, uint64_t off,
			   uint32_t len, void *buf, int err);

	/*
	 * The same for a remapped write of @buf that failed with @err,
	 * called outside the read section.
	 */
	int (*write_failed)(struct target *t, struct engine *e, uint64_t off,
			    uint32_t len, const void *buf, int err);

	/*
	 * The write that map() remapped has completed (or failed).  Lets a
	 * target count the fast-path writes in flight, to wait for them
	 * before it shares their blocks (thin snapshots).  Never blocks.
	 */
	void (*end_write)(struct target *t);

	/* Makes every completed write durable.  Blocks.  0 or -EIO. */
	int (*flush)(struct target *t, struct engine *e);

	/* Discards [off, off + len).  Blocks.  0 or -errno. */
	int (*discard)(struct target *t, struct engine *e, uint64_t off,
		       uint64_t len, enum discard_mode mode);

	/*
	 * The next offset >= @off that is data (SEEK_DATA) or a hole
	 * (SEEK_HOLE), given the volume's @size.  -ENXIO past the end.
	 */
	int (*seek)(struct target *t, uint64_t off, uint64_t size, int whence,
		    uint64_t *out);

	/* Bytes mapped (st_blocks) of a volume of @size bytes. */
	uint64_t (*mapped_bytes)(struct target *t, uint64_t size);

	void (*destroy)(struct target *t);
};

struct target {
	const struct target_ops *ops;
	/* Calls outside a read section in flight (volume.c: volume_reload). */
	_Atomic unsigned int users;
};

/* Defaults, for targets that map everything at once. */
int target_never_defers(struct target *t, struct engine *e, uint64_t off,
			uint32_t len, const void *buf);		/* -EIO */
int target_loads_nothing(struct target *t, uint64_t off, uint32_t len, bool hold);	/* 0 */
void target_holds_nothing(struct target *t);
int target_faults_inline(struct target *t, uint64_t off, uint32_t len,
			 struct target_wait *w);			/* -EAGAIN */
void target_no_end_write(struct target *t);
int target_no_read_retry(struct target *t, struct engine *e, uint64_t off,
			 uint32_t len, void *buf, int err);		/* @err */
int target_no_write_retry(struct target *t, struct engine *e, uint64_t off,
			  uint32_t len, const void *buf, int err);	/* @err */
int target_seek_all_data(struct target *t, uint64_t off, uint64_t size,
			 int whence, uint64_t *out);		/* all data */
uint64_t target_all_mapped(struct target *t, uint64_t size);	/* @size */

struct device;

/*
 * fdatasync of every device of @t's table, whose array and count
 * @devs_of reads inside a read section, FLUSH_BATCH (64) devices per
 * engine call, each batch copied out of the section (devices outlive
 * every table, and a table only gains devices).  A target's flush.
 * Blocks.  0 or the first -errno; the devices after a failed one are
 * synced all the same.
 */
int target_sync_devices(struct target *t, struct engine *e,
			struct device *const *(*devs_of)(struct target *t, unsigned int *nr));

/*
 * Discards [off, off + len) of @dev as @mode asks: device_zero (punching
 * or not) or device_discard.  What every target that lands on devices
 * calls.  Blocks.  0 or -errno (-EOPNOTSUPP: the device cannot unmap).
 */
int target_device_discard(struct device *dev, uint64_t off, uint64_t len,
			  enum discard_mode mode);

#endif
