/*
 * core/thin/thin_loader.h: a thin pool's loader, the thread that loads
 * leaves for reads that missed them (thin_loader.c says why).
 *
 * Lifecycle, with the pool's: thin_loader_new at open (nothing runs,
 * nothing is queued), thin_loader_start with the worker, thin_loader_stop
 * before the last commit (every wait still queued is failed), and
 * thin_loader_free at close.  Private to core/thin.
 */
#ifndef MAPPERFS_THIN_LOADER_H
#define MAPPERFS_THIN_LOADER_H

#include <stdint.h>

struct target_wait;
struct thin;
struct thin_leaf;
struct thin_loader;

/*
 * A loader, not running, whose thread loads leaf @slot of @th's map with
 * @load (0 or -errno; the pool's, passed down so that the loader calls
 * nothing above it).  NULL on ENOMEM.
 */
struct thin_loader *thin_loader_new(int (*load)(struct thin *th, uint32_t slot));
/* Starts its thread.  0 or -errno. */
int thin_loader_start(struct thin_loader *ld);
/*
 * Fails every wait queued and not being loaded with -EIO, at once, lets
 * the load in flight finish (its waits learn its outcome), and stops the
 * thread; queues are refused from then on.  Blocks for that one load.
 */
void thin_loader_stop(struct thin_loader *ld);
/* Frees a stopped (or never started) loader. */
void thin_loader_free(struct thin_loader *ld);

/* A leaf of a volume's map that a read found not loaded. */
struct thin_load_slot {
	uint32_t slot;			/* in the volume's directory */
	const struct thin_leaf *leaf;	/* what was there: a key, never read */
};

#define THIN_LOADER_SLOTS	4	/* slots one wait may need, at most */

/*
 * Queues the loads of @nr (1..THIN_LOADER_SLOTS) leaves of @th's map for
 * @w, whose done() is called once all of them were loaded or failed,
 * from the loader's thread.  A leaf already queued, or being loaded, is
 * not queued again: @w waits for that load.  Holds @th (its users) while
 * a load of it is queued.  Never blocks but on the queue's lock, which
 * no holder keeps across a load; may be called inside a read section.
 * O(leaves queued).  0, or -EAGAIN (not running, or out of memory):
 * nothing queued.
 */
int thin_loader_queue(struct thin_loader *ld, struct thin *th,
		      const struct thin_load_slot *slots, unsigned int nr,
		      struct target_wait *w);

/* Reads that waited for a load (thin_loader_queue succeeded), since it was made. */
uint64_t thin_loader_waits(struct thin_loader *ld);

#endif
