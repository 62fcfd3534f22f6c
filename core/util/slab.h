/*
 * core/util/slab.h: objects of one size carved from large chunks, with one
 * free list for every thread.
 *
 * The thin map loads and unloads its leaves' entries (2 KiB each) on the
 * threads that serve requests and frees them on another, the pool's worker,
 * after a grace period.  glibc's malloc gives threads arenas of their own
 * and a freed block goes back to the arena it came from, to be reused by
 * the threads of that arena only: a daemon whose map stayed within its
 * budget grew from 311 to 465 MiB over three passes of random reads at
 * 1e8 blocks (308 MiB with one arena).  Here every thread allocates from,
 * and frees to, one list: the memory held is the most objects ever live
 * at once, rounded up to a chunk, whatever thread freed them.
 *
 * Chunks are never unmapped, but their pages can go back: slab_trim gives
 * the OS (MADV_DONTNEED) every page that only free objects cover, when
 * the owner knows the objects will not be needed soon (a thin pool that
 * unloaded leaves for a removal or a walk, or whose removed volume's
 * leaves were freed).  The free list links objects through their first
 * word, which such a page no longer keeps, so a trimmed object leaves the
 * list for an array beside it (8 bytes an object, malloc'ed), and
 * slab_alloc hands it out (its page faulted in again, zeros) only when
 * the list is empty, before carving anew.
 *
 * A slab made with SLAB_INIT_HUGE carves 2 MiB chunks on huge pages
 * (bigmem.h), for objects made by the hundred thousand at once (a thin
 * pool's leaf headers at start), and is never trimmed.
 *
 * Under AddressSanitizer a free object is poisoned, trimmed or not, so a
 * read of an unloaded leaf's entries is still reported as a use after
 * free.
 */
#ifndef MAPPERFS_SLAB_H
#define MAPPERFS_SLAB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct slab {
	pthread_mutex_t lock;
	size_t size;			/* bytes an object; a multiple of 16 */
	void *free;			/* free objects, linked through their first word */
	void **trimmed;			/* free objects whose pages went back: slab_trim */
	size_t nr_trimmed, cap_trimmed;
	char *carve, *carve_end;	/* what is left of the newest chunk */
	bool huge;			/* chunks on huge pages, never trimmed */
};

#define SLAB_CHUNK_BYTES	(1u << 20)
/* A slab of objects of @bytes (16 to SLAB_CHUNK_BYTES, a multiple of 16). */
#define SLAB_INIT(bytes)	{ PTHREAD_MUTEX_INITIALIZER, (bytes), NULL, NULL, 0, 0, NULL, NULL, false }
/* The same, its chunks BIGMEM_ALIGN bytes on huge pages. */
#define SLAB_INIT_HUGE(bytes)	{ PTHREAD_MUTEX_INITIALIZER, (bytes), NULL, NULL, 0, 0, NULL, NULL, true }

/*
 * An object of s->size bytes, 16-byte aligned, contents undefined; NULL
 * when no memory is left.  O(1): a mutex, and an mmap of a chunk once per
 * SLAB_CHUNK_BYTES / size objects.  Any thread.
 */
void *slab_alloc(struct slab *s);

/* Gives back @obj (from slab_alloc of @s; NULL: nothing).  O(1), a mutex. */
void slab_free(struct slab *s, void *obj);

/*
 * Gives the OS back every page of @s that free objects alone cover (a
 * 2 KiB object's page when its neighbour is free too), and returns how
 * many bytes that was.  Objects trimmed earlier stay so.  Only for sizes
 * that divide the page or that the page divides (0 otherwise), not for a
 * huge slab (0), and 0 when the array of trimmed objects cannot grow.  O(f log f) for f free
 * objects, under the mutex (slab_alloc and slab_free wait meanwhile), then
 * one madvise per run of pages, outside it.  Any thread; not on a
 * request's path.
 */
size_t slab_trim(struct slab *s);

#endif
