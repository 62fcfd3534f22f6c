#include "volset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rcu.h"
#include "volume.h"

static struct volset_array *array_alloc(size_t nr)
{
	struct volset_array *a = malloc(sizeof(*a) + nr * sizeof(a->v[0]));

	if (a)
		a->nr = nr;
	return a;
}

int volset_init(struct volset *s)
{
	struct volset_array *a = array_alloc(0);

	if (!a)
		return -ENOMEM;
	atomic_init(&s->cur, a);
	return 0;
}

void volset_release(struct volset *s)
{
	struct volset_array *a = atomic_load(&s->cur);

	for (size_t i = 0; i < a->nr; i++)
		volume_destroy(a->v[i]);
	free(a);
}

struct volset_array *volset_read(struct volset *s)
{
	return rcu_load(s->cur);
}

struct volume *volset_find_id(struct volset_array *a, int64_t id)
{
	size_t lo = 0, hi = a->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a->v[mid]->id == id)
			return a->v[mid];
		if (a->v[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

struct volume *volset_find_name(struct volset_array *a, const char *name)
{
	for (size_t i = 0; i < a->nr; i++)
		if (!strcmp(a->v[i]->name, name))
			return a->v[i];
	return NULL;
}

static void publish(struct volset *s, struct volset_array *next)
{
	struct volset_array *old = rcu_publish(s->cur, next);

	rcu_wait_readers();
	free(old);
}

int volset_add(struct volset *s, struct volume *v)
{
	struct volset_array *a = atomic_load(&s->cur);
	struct volset_array *next = array_alloc(a->nr + 1);
	size_t i = 0;

	if (!next)
		return -ENOMEM;
	for (; i < a->nr && a->v[i]->id < v->id; i++)
		next->v[i] = a->v[i];
	next->v[i] = v;
	memcpy(&next->v[i + 1], &a->v[i], (a->nr - i) * sizeof(a->v[0]));
	publish(s, next);
	return 0;
}

int volset_remove(struct volset *s, struct volume *v)
{
	struct volset_array *a = atomic_load(&s->cur);
	struct volset_array *next = array_alloc(a->nr ? a->nr - 1 : 0);
	size_t j = 0;

	if (!next)
		return -ENOMEM;
	for (size_t i = 0; i < a->nr; i++)
		if (a->v[i] != v && j < next->nr)
			next->v[j++] = a->v[i];
	publish(s, next);
	return 0;
}
