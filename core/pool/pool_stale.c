/*
 * core/pool/pool_stale.c: what a host's caches of the served volumes may hold
 * that an operation made untrue.
 *
 * The daemon's kernel caches a volume file's attributes, the pages of a
 * shared mapping of it, and the names it looked up.  What changes them
 * through the mount the kernel sees for itself; what an admin operation
 * changes (extend, set --read-only, switch map, clone into it, rollback,
 * restore, repair; a name renamed, removed or taken out of the mount) it
 * cannot.  The operations note it here as they publish, and the host asks
 * after each command (pool_take_stale) and tells its kernel about those,
 * and only those: a report changes nothing, so it costs nothing, and a
 * change to one volume costs one notification, not one per served volume.
 * (A truncate through the mount grows a volume as extend does and is
 * noted too, though the kernel saw it: the next command tells it once.)
 *
 * The notes are a small array in the pool, so that noting cannot fail:
 * past POOL_STALE_MAX of them the host is told every served volume, the
 * way the daemon always did.  One mutex guards the notes of every pool of
 * the process: noting and taking are rare and short, and neither waits
 * for the admin lock, so a host that asks while a long operation runs is
 * not held up.  A second one keeps takers in turn until their callbacks
 * return, so that a command whose notes another command's host thread
 * took answers only once they were told; noting never waits for it (a
 * callback may wait for the kernel, and the kernel for an operation that
 * notes: a truncate through the mount).
 */
#include "pool_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcu.h"
#include "volume.h"

static pthread_mutex_t stale_lock = PTHREAD_MUTEX_INITIALIZER;	/* the notes */
static pthread_mutex_t take_lock = PTHREAD_MUTEX_INITIALIZER;	/* takers, in turn */

/* Adds a note unless it is there already.  stale_lock held. */
static void note(struct pool_stale *s, int64_t id, const char *name)
{
	if (s->overflow)
		return;		/* full: what comes next would be dropped anyway */
	for (unsigned int i = 0; i < s->nr; i++)
		if (s->v[i].id == id && !strcmp(s->v[i].name, name))
			return;
	if (s->nr == POOL_STALE_MAX) {
		s->overflow = true;
		return;
	}
	s->v[s->nr].id = id;
	snprintf(s->v[s->nr].name, sizeof(s->v[s->nr].name), "%s", name);
	s->nr++;
}

void pool_stale_file(struct pool *p, int64_t id)
{
	pthread_mutex_lock(&stale_lock);
	note(&p->stale, id, "");
	pthread_mutex_unlock(&stale_lock);
}

void pool_stale_name(struct pool *p, const char *name)
{
	pthread_mutex_lock(&stale_lock);
	note(&p->stale, -1, name);
	pthread_mutex_unlock(&stale_lock);
}

/*
 * The ids of the served volumes, of those noted (all of them on
 * overflow); *nr of them, malloc'ed, NULL if out of memory.
 */
static int64_t *served_ids(struct pool *p, const struct pool_stale *s, size_t *nr)
{
	struct volset_array *a;
	int64_t *ids;

	*nr = 0;
	rcu_read_begin();
	a = volset_read(&p->served);
	ids = malloc((s->overflow ? a->nr : s->nr) * sizeof(*ids) + 1);
	if (ids && s->overflow) {
		for (size_t i = 0; i < a->nr; i++)
			ids[(*nr)++] = a->v[i]->id;
	} else if (ids) {
		for (unsigned int i = 0; i < s->nr; i++)
			if (s->v[i].id >= 0 && volset_find_id(a, s->v[i].id))
				ids[(*nr)++] = s->v[i].id;
	}
	rcu_read_end();
	return ids;
}

void pool_take_stale(struct pool *p, void (*file)(void *arg, int64_t id),
		     void (*name)(void *arg, const char *name), void *arg)
{
	struct pool_stale s;
	int64_t *ids;
	size_t nr;

	pthread_mutex_lock(&take_lock);
	pthread_mutex_lock(&stale_lock);
	s = p->stale;
	p->stale.nr = 0;
	p->stale.overflow = false;
	pthread_mutex_unlock(&stale_lock);
	ids = s.nr || s.overflow ? served_ids(p, &s, &nr) : NULL;
	/* Out of a read section, stale_lock free: the callbacks may wait for the kernel. */
	for (size_t i = 0; ids && i < nr; i++)
		file(arg, ids[i]);
	free(ids);		/* NULL out of memory: the kernel's caches expire soon anyway */
	for (unsigned int i = 0; i < s.nr; i++)
		if (s.v[i].id < 0)
			name(arg, s.v[i].name);
	pthread_mutex_unlock(&take_lock);
}
