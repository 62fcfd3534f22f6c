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
 * at once, rounded up to a chunk, whatever thread freed them.  Chunks are
 * never given back: the process's peak is what it needs again.
 *
 * Under AddressSanitizer a free object is poisoned, so a read of an
 * unloaded leaf's entries is still reported as a use after free.
 */
#ifndef MAPPERFS_SLAB_H
#define MAPPERFS_SLAB_H

#include <pthread.h>
#include <stddef.h>

struct slab {
	pthread_mutex_t lock;
	size_t size;			/* bytes an object; a multiple of 16 */
	void *free;			/* free objects, linked through their first word */
	char *carve, *carve_end;	/* what is left of the newest chunk */
};

#define SLAB_CHUNK_BYTES	(1u << 20)
/* A slab of objects of @bytes (16 to SLAB_CHUNK_BYTES, a multiple of 16). */
#define SLAB_INIT(bytes)	{ PTHREAD_MUTEX_INITIALIZER, (bytes), NULL, NULL, NULL }

/*
 * An object of s->size bytes, 16-byte aligned, contents undefined; NULL
 * when no memory is left.  O(1): a mutex, and an mmap of a chunk once per
 * SLAB_CHUNK_BYTES / size objects.  Any thread.
 */
void *slab_alloc(struct slab *s);

/* Gives back @obj (from slab_alloc of @s; NULL: nothing).  O(1), a mutex. */
void slab_free(struct slab *s, void *obj);

#endif
