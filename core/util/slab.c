#include "slab.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <sanitizer/asan_interface.h>

#include "bigmem.h"

static int add_chunk(struct slab *s)
{
	size_t bytes = s->huge ? BIGMEM_ALIGN : SLAB_CHUNK_BYTES;
	char *c = s->huge ? bigmem_map(bytes) :
		  mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (!c || c == MAP_FAILED)
		return -1;
	ASAN_POISON_MEMORY_REGION(c, bytes);
	s->carve = c;
	s->carve_end = c + bytes / s->size * s->size;
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
	} else if (s->nr_trimmed) {
		obj = s->trimmed[--s->nr_trimmed];
		ASAN_UNPOISON_MEMORY_REGION(obj, s->size);
	} else if (s->carve != s->carve_end || !add_chunk(s)) {
		obj = s->carve;
		s->carve += s->size;
		ASAN_UNPOISON_MEMORY_REGION(obj, s->size);
	}
	pthread_mutex_unlock(&s->lock);
	return obj;
}

/* Puts free @obj on the list (lock held); its link is the one word written. */
static void push_free(struct slab *s, void *obj)
{
	ASAN_UNPOISON_MEMORY_REGION(obj, sizeof(void *));
	*(void **)obj = s->free;
	s->free = obj;
	ASAN_POISON_MEMORY_REGION(obj, s->size);
}

void slab_free(struct slab *s, void *obj)
{
	if (!obj)
		return;
	pthread_mutex_lock(&s->lock);
	push_free(s, obj);
	pthread_mutex_unlock(&s->lock);
}

/* The object after free @obj on the list. */
static void *next_free(void *obj)
{
	void *next;

	ASAN_UNPOISON_MEMORY_REGION(obj, sizeof(void *));
	next = *(void **)obj;
	ASAN_POISON_MEMORY_REGION(obj, sizeof(void *));
	return next;
}

static int by_address(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;

	return (x > y) - (x < y);
}

/*
 * Takes the free list apart (lock held): objects whose pages free objects
 * alone cover go to the start of @v, in address order (their count is
 * returned), the others back on the list.  @v holds every free object.
 */
static size_t pick_whole_pages(struct slab *s, void **v, size_t n, size_t page)
{
	size_t per_page = s->size < page ? page / s->size : 1, picked = 0, i = 0, j;

	qsort(v, n, sizeof(*v), by_address);
	s->free = NULL;
	for (; i < n; i = j) {
		uintptr_t pg = (uintptr_t)v[i] & ~(uintptr_t)(page - 1);

		for (j = i + 1; j < n && ((uintptr_t)v[j] & ~(uintptr_t)(page - 1)) == pg; j++)
			;
		for (size_t k = i; k < j; k++) {
			if (j - i == per_page)
				v[picked++] = v[k];
			else
				push_free(s, v[k]);
		}
	}
	return picked;
}

/* Gives back the pages of @v's @n objects (address order), a madvise per run. */
static void give_back(void **v, size_t n, size_t size, size_t page)
{
	size_t span = size < page ? page : size;
	uintptr_t start = 0, end = 0;

	for (size_t i = 0; i <= n; i++) {
		uintptr_t pg = i < n ? (uintptr_t)v[i] & ~(uintptr_t)(page - 1) : 0;

		if (i < n && pg <= end && end)
			end = pg + span > end ? pg + span : end;
		else {
			if (end)
				madvise((void *)start, end - start, MADV_DONTNEED);
			start = pg;
			end = i < n ? pg + span : 0;
		}
	}
}

/* Adds @n trimmed objects of @v (lock held); those the array cannot take go back on the list. */
static void add_trimmed(struct slab *s, void **v, size_t n)
{
	if (s->nr_trimmed + n > s->cap_trimmed) {
		size_t cap = 2 * (s->nr_trimmed + n);
		void **t = realloc(s->trimmed, cap * sizeof(*t));

		if (t) {
			s->trimmed = t;
			s->cap_trimmed = cap;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (s->nr_trimmed < s->cap_trimmed)
			s->trimmed[s->nr_trimmed++] = v[i];
		else
			push_free(s, v[i]);
	}
}

size_t slab_trim(struct slab *s)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = 0, picked;
	void **v;

	if ((s->size % page && page % s->size) || s->huge)
		return 0;
	pthread_mutex_lock(&s->lock);
	for (void *o = s->free; o; o = next_free(o))
		n++;
	v = malloc((n ? n : 1) * sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	n = 0;
	for (void *o = s->free; o; o = next_free(o))
		v[n++] = o;
	picked = pick_whole_pages(s, v, n, page);
	pthread_mutex_unlock(&s->lock);
	/* Off every list meanwhile: no one writes them while their pages go. */
	give_back(v, picked, s->size, page);
	pthread_mutex_lock(&s->lock);
	add_trimmed(s, v, picked);
	pthread_mutex_unlock(&s->lock);
	free(v);
	return picked * s->size;
}
