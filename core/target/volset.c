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

static int cmp_id(const void *a, const void *b)
{
	int64_t x = (*(struct volume *const *)a)->id, y = (*(struct volume *const *)b)->id;

	return (x > y) - (x < y);
}

/* A copy of @v sorted by id; NULL on ENOMEM. */
static struct volume **sorted_copy(struct volume *const *v, size_t n)
{
	struct volume **c = malloc((n + 1) * sizeof(*c));

	if (!c)
		return NULL;
	memcpy(c, v, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_id);
	return c;
}

int volset_add_many(struct volset *s, struct volume *const *v, size_t n)
{
	struct volset_array *a = atomic_load(&s->cur), *next;
	struct volume **add;
	size_t i = 0, j = 0, k = 0;

	if (!n)
		return 0;
	add = sorted_copy(v, n);
	next = add ? array_alloc(a->nr + n) : NULL;
	if (!next) {
		free(add);
		return -ENOMEM;
	}
	while (i < a->nr || j < n)	/* merge: both by id */
		next->v[k++] = j == n || (i < a->nr && a->v[i]->id < add[j]->id) ? a->v[i++] : add[j++];
	free(add);
	publish(s, next);
	return 0;
}

int volset_remove_many(struct volset *s, struct volume *const *v, size_t n)
{
	struct volset_array *a = atomic_load(&s->cur), *next;
	struct volume **gone;
	size_t j = 0, k = 0;

	if (!n)
		return 0;
	gone = sorted_copy(v, n);
	next = gone ? array_alloc(a->nr) : NULL;
	if (!next) {
		free(gone);
		return -ENOMEM;
	}
	for (size_t i = 0; i < a->nr; i++) {	/* both by id: skip what is gone */
		while (j < n && gone[j]->id < a->v[i]->id)
			j++;
		if (j < n && gone[j] == a->v[i])
			continue;
		next->v[k++] = a->v[i];
	}
	next->nr = k;
	free(gone);
	publish(s, next);
	return 0;
}
