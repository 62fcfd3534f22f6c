#include "rangelock.h"

#include <errno.h>

int rangelock_init(struct rangelock *l)
{
	int r;

	atomic_init(&l->shared, 0);
	atomic_init(&l->alone, 0);
	l->head = l->tail = NULL;
	r = pthread_mutex_init(&l->mutex, NULL);
	if (r)
		return -r;
	r = pthread_cond_init(&l->changed, NULL);
	if (r) {
		pthread_mutex_destroy(&l->mutex);
		return -r;
	}
	return 0;
}

void rangelock_destroy(struct rangelock *l)
{
	pthread_cond_destroy(&l->changed);
	pthread_mutex_destroy(&l->mutex);
}

bool rangelock_try_share(struct rangelock *l)
{
	atomic_fetch_add(&l->shared, 1);
	if (atomic_load(&l->alone) == 0)
		return true;
	rangelock_unshare(l);
	return false;
}

void rangelock_unshare(struct rangelock *l)
{
	/* The last one out wakes whoever waits to be alone. */
	if (atomic_fetch_sub(&l->shared, 1) == 1 && atomic_load(&l->alone)) {
		pthread_mutex_lock(&l->mutex);
		pthread_cond_broadcast(&l->changed);
		pthread_mutex_unlock(&l->mutex);
	}
}

static bool overlap(const struct rangelock_range *a, const struct rangelock_range *b)
{
	return (a->alone || b->alone) && a->off < b->end && b->off < a->end;
}

/* Under the mutex: @r, queued, must still wait. */
static bool must_wait(const struct rangelock *l, const struct rangelock_range *r)
{
	if (r->alone && atomic_load(&l->shared))
		return true;
	for (const struct rangelock_range *q = l->head; q != r; q = q->next)
		if (overlap(q, r))
			return true;
	return false;
}

/* Queues @r and waits its turn. */
static void take(struct rangelock *l, struct rangelock_range *r, uint64_t off,
		 uint64_t len, bool alone)
{
	*r = (struct rangelock_range){ .off = off, .end = off + len, .alone = alone };
	pthread_mutex_lock(&l->mutex);
	if (alone)
		atomic_fetch_add(&l->alone, 1);
	r->prev = l->tail;
	if (l->tail)
		l->tail->next = r;
	else
		l->head = r;
	l->tail = r;
	while (must_wait(l, r))
		pthread_cond_wait(&l->changed, &l->mutex);
	pthread_mutex_unlock(&l->mutex);
}

void rangelock_share(struct rangelock *l, struct rangelock_range *r,
		     uint64_t off, uint64_t len)
{
	if (rangelock_try_share(l)) {
		*r = (struct rangelock_range){ .nameless = true };
		return;
	}
	take(l, r, off, len, false);
}

void rangelock_lock(struct rangelock *l, struct rangelock_range *r,
		    uint64_t off, uint64_t len)
{
	take(l, r, off, len, true);
}

void rangelock_unlock(struct rangelock *l, struct rangelock_range *r)
{
	if (r->nameless) {
		rangelock_unshare(l);
		return;
	}
	pthread_mutex_lock(&l->mutex);
	if (r->prev)
		r->prev->next = r->next;
	else
		l->head = r->next;
	if (r->next)
		r->next->prev = r->prev;
	else
		l->tail = r->prev;
	if (r->alone)
		atomic_fetch_sub(&l->alone, 1);
	pthread_cond_broadcast(&l->changed);
	pthread_mutex_unlock(&l->mutex);
}
