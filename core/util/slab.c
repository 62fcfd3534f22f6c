#include "slab.h"

#include <sys/mman.h>
#include <sanitizer/asan_interface.h>

static int add_chunk(struct slab *s)
{
	char *c = mmap(NULL, SLAB_CHUNK_BYTES, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (c == MAP_FAILED)
		return -1;
	ASAN_POISON_MEMORY_REGION(c, SLAB_CHUNK_BYTES);
	s->carve = c;
	s->carve_end = c + SLAB_CHUNK_BYTES / s->size * s->size;
	return 0;
}

void *slab_alloc(struct slab *s)
{
	void *obj = NULL;

	pthread_mutex_lock(&s->lock);
	if (s->free) {
		obj = s->free;
		ASAN_UNPOISON_MEMORY_REGION(obj, s->size);
		s->free = *(void **)obj;
	} else if (s->carve != s->carve_end || !add_chunk(s)) {
		obj = s->carve;
		s->carve += s->size;
		ASAN_UNPOISON_MEMORY_REGION(obj, s->size);
	}
	pthread_mutex_unlock(&s->lock);
	return obj;
}

void slab_free(struct slab *s, void *obj)
{
	if (!obj)
		return;
	pthread_mutex_lock(&s->lock);
	*(void **)obj = s->free;
	s->free = obj;
	ASAN_POISON_MEMORY_REGION(obj, s->size);
	pthread_mutex_unlock(&s->lock);
}
