/*
 * core/pool/pool_fault.c: what failed, and what failed only because of it.
 *
 * One missing raw device can keep a dozen volumes out of service: the
 * thin pool on it, the thin volumes of that pool, a thin volume whose
 * origin is one of them.  Each of those is failed, with a reason that
 * repeats the device's; told one by one, a single fault reads as a dozen,
 * at start-up and in check alike.  So a failure is traced back to its
 * fault, as a chain of what each volume needs: a failed device under its
 * extents or placed paths (pool_used()), else the volume its type says it
 * is built on (the needs hook: a thin volume's pool, its origin), if that
 * one is failed; a volume with neither failed of its own.  A fault is
 * then told once, naming every volume it keeps out of service.
 */
#include "pool_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAULT_CHAIN_MAX	64	/* damaged records may make a loop of needs */

/* A failed device under @v's extents or placed paths, or NULL. */
static struct pool_device *failed_device_of(struct pool *p, const struct pool_volume *v)
{
	struct pool_device *d = NULL;
	struct extent_rec *used;
	size_t nr;

	if (pool_used(p, NULL, 0, &used, &nr))
		return NULL;
	for (size_t i = 0; i < nr && !d; i++) {
		struct pool_device *u = used[i].volume == v->rec.id ?
					pool_device_by_id(p, used[i].device) : NULL;

		if (u && u->failure)
			d = u;
	}
	free(used);
	return d;
}

struct pool_fault pool_fault_of(struct pool *p, struct pool_volume *v)
{
	for (int depth = 0; depth < FAULT_CHAIN_MAX; depth++) {
		struct pool_device *d;
		struct pool_volume *w;

		if (v->broken)
			break;
		d = failed_device_of(p, v);
		if (d)
			return (struct pool_fault){ .dev = d };
		w = v->type->needs(p, v);
		if (!w || !w->failure)
			break;
		v = w;
	}
	return (struct pool_fault){ .vol = v };
}

static bool same_fault(struct pool_fault a, struct pool_fault b)
{
	return a.dev == b.dev && a.vol == b.vol;
}

/* "thin pool 'tp'" or "volume 'a'". */
static const char *kind_word(const struct pool_volume *v, bool plural)
{
	return plural ? v->type->nouns : v->type->noun;
}

/*
 * Room kept at the end of a list of names for " and N more", which says
 * how many did not fit: a name is listed whole or not at all.
 */
#define MORE_ROOM	32

/*
 * Writes "'a', 'b'" (or "'a', 'b' and 7 more") into @buf, @len bytes, for
 * the victims of @f that hold other volumes (@pools: thin pools, not
 * files in the mount), or for the others.  Returns how many there are.
 */
static size_t list_victims(struct pool *p, struct pool_fault f, bool pools, char *buf,
			   size_t len, const struct pool_volume **first)
{
	size_t n = 0, shown = 0, used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < p->nr_vols; i++) {
		struct pool_volume *v = p->vols[i];
		size_t w;

		if (!v->failure || !v->type->served != pools || v == f.vol ||
		    !same_fault(pool_fault_of(p, v), f))
			continue;
		if (!n)
			*first = v;
		w = strlen(v->rec.name) + (shown ? 4 : 2);
		if (shown == n && used + w + MORE_ROOM < len) {
			snprintf(buf + used, len - used, "%s'%s'", shown ? ", " : "", v->rec.name);
			used += w;
			shown++;
		}
		n++;
	}
	if (shown < n)
		snprintf(buf + used, len - used, " and %zu more", n - shown);
	return n;
}

/* The kind words ("thin pools", "volumes") and " and " around the lists. */
#define VICTIMS_WORDS	64

size_t pool_fault_victims(struct pool *p, struct pool_fault f, char *buf, size_t len)
{
	char pools[(POOL_ERROR_LEN - 2 * VICTIMS_WORDS) / 2], vols[POOL_ERROR_LEN];
	const struct pool_volume *first_pool = NULL, *first_vol = NULL;
	size_t nr_pools, nr_vols;

	/* the volumes have the room the pools left */
	nr_pools = list_victims(p, f, true, pools, sizeof(pools), &first_pool);
	nr_vols = list_victims(p, f, false, vols,
			       POOL_ERROR_LEN - 2 * VICTIMS_WORDS - strlen(pools), &first_vol);
	buf[0] = '\0';
	if (nr_pools)
		snprintf(buf, len, "%s %s", kind_word(first_pool, nr_pools > 1), pools);
	if (nr_vols)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s %s", nr_pools ? " and " : "",
			 kind_word(first_vol, nr_vols > 1), vols);
	return nr_pools + nr_vols;
}

void pool_faults(struct pool *p, void (*fn)(void *arg, struct pool_fault f), void *arg)
{
	for (size_t i = 0; i < p->nr_devs; i++)
		if (p->devs[i]->failure)
			fn(arg, (struct pool_fault){ .dev = p->devs[i] });
	for (size_t i = 0; i < p->nr_vols; i++) {
		struct pool_volume *v = p->vols[i];

		if (v->failure && same_fault(pool_fault_of(p, v), (struct pool_fault){ .vol = v }))
			fn(arg, (struct pool_fault){ .vol = v });
	}
}

struct failure_lines {
	struct pool *p;
	void (*fn)(void *arg, const char *line);
	void *arg;
};

static void failure_line(void *arg, struct pool_fault f)
{
	struct failure_lines *l = arg;
	char victims[POOL_ERROR_LEN], line[2 * POOL_ERROR_LEN];
	size_t n = pool_fault_victims(l->p, f, victims, sizeof(victims));
	const char *what = f.dev ? "device" : kind_word(f.vol, false);
	const char *name = f.dev ? f.dev->rec.name : f.vol->rec.name;
	const char *why = f.dev ? f.dev->failure : f.vol->failure;

	if (n)
		snprintf(line, sizeof(line), "%s '%s' is failed (%s): %s %s not served", what,
			 name, why, victims, n > 1 ? "are" : "is");
	else if (f.dev)
		snprintf(line, sizeof(line), "device '%s' is failed: %s", name, why);
	else
		snprintf(line, sizeof(line), "%s '%s' is not served: %s", what, name, why);
	l->fn(l->arg, line);
}

/* What PRAGMA quick_check found at open, in one line. */
static void damage_line(struct pool *p, void (*fn)(void *arg, const char *line), void *arg)
{
	char line[PATH_MAX + 2 * POOL_ERROR_LEN], more[64] = "";

	if (p->nr_damage > 1)
		snprintf(more, sizeof(more), " (and %zu more problems)", p->nr_damage - 1);
	snprintf(line, sizeof(line), "pool database '%s/pool.db' is damaged: %s%s; "
		 "'mapperctl check' lists it all", p->dir,
		 p->damage ? p->damage : "PRAGMA quick_check found problems", more);
	fn(arg, line);
}

void pool_failures(struct pool *p, void (*fn)(void *arg, const char *line), void *arg)
{
	struct failure_lines l = { p, fn, arg };

	pthread_mutex_lock(&p->admin);
	if (p->nr_damage)
		damage_line(p, fn, arg);
	pool_faults(p, failure_line, &l);
	pthread_mutex_unlock(&p->admin);
}
