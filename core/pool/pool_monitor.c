/*
 * core/pool/pool_monitor.c: what dmeventd does for LVM's thin pools,
 * inside the pool service: grow a pool that fills past its autoextend
 * threshold, and tell someone about what happens to it.
 *
 * One thread per open pool.  It wakes when a thin pool kicks it (crossed
 * its low-water mark, found no free block, failed or works again: the
 * pool's notify, called under its lock, only signals) and about once a
 * second otherwise, since filling past the autoextend threshold is not
 * an edge the allocator reports.  Each pass takes the admin lock, as any
 * admin operation, and calls each volume's watch hook (target_type.h):
 * a thin pool's (pool_thin.c) raises the events that arose since the
 * last pass and autoextends it, on the same code path as `extend`
 * (validate, record, publish), so it never races another change.  The
 * monitor knows no kind; the kinds raise events through it.
 *
 * Each event is logged at the level its kind gives it (a thin pool:
 * full, metadata-full and low-water at warning, failed at error).
 * Events run the pool's command (--on-event CMD) with /bin/sh, its
 * environment telling which pool, which event (low-water, full,
 * metadata-full, failed, extended) and the figures as they were when it
 * happened; when CMD is the absolute path of a directory, run-parts runs
 * every hook in it instead.  low-water, full, metadata-full and failed
 * are raised once each time they arise (the pool counts them, so one
 * that cleared and came back between two passes is raised again);
 * extended after every growth, autoextend or `extend`.  The commands run
 * one at a time per thin pool, in order, on a runner of their own
 * (pool_hooks.h), so a slow or hung hook holds up nothing here.  The
 * command runs as the pool directory's owner, who alone can set it.
 *
 * After each pass it looks, every few seconds, whether a raw device that
 * could not be opened answers now, and reloads the pool when one does
 * (pool_reload.c, through the hook its starter gives): a volume on an
 * NBD server that started after the daemon comes into service by itself,
 * as LVM activates a volume group when its last disk appears.  Each pass
 * also does the NBD devices' idle work (nbd_link_tick): idle connections
 * closed, so a server told to stop can; a lost server looked for, so
 * status says when it is back.
 */
#include "pool_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "log.h"
#include "pool_hooks.h"
#include "rcu.h"
#include "thin_pool.h"

#define MONITOR_PERIOD_MS	1000
#define ABSENT_RETRY_MS		5000	/* a raw device not open: looked at again after */
#define ABSENT_RETRY_MAX_MS	(5 * 60 * 1000)	/* ... doubled up to, while in vain */
#define ABSENT_PROBE_MS		500	/* the look at one device, at most */

extern char **environ;

struct pool_monitor {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t kick;
	bool kicked, stopping;
	struct pool_hooks *hooks;	/* runs the event commands */
	uint64_t absent_at;		/* ms (monotonic): the next pool_reload_absent */
	uint32_t absent_gap;		/* ms: the wait before the one after */
	size_t (*retry_absent)(struct pool *p, unsigned int probe_ms, size_t *answered);
};

/* The figures an event carries, as "KEY=value" strings. */
struct event_env {
	char v[10][PATH_MAX + 64];
	char *envp[10 + 256];
};

static void event_env_build(struct event_env *e, struct pool *p, struct pool_volume *tp,
			    const char *event, const struct thin_pool_usage *u)
{
	uint64_t used = (u->nr_blocks - u->nr_free - u->nr_pending) * u->block_size;
	uint64_t total = u->nr_blocks * u->block_size;
	size_t n = 0, k = 0;

	snprintf(e->v[n++], sizeof(e->v[0]), "MAPPERFS_POOL_DIR=%s", p->dir);
	snprintf(e->v[n++], sizeof(e->v[0]), "MAPPERFS_THIN_POOL=%s", tp->rec.name);
	snprintf(e->v[n++], sizeof(e->v[0]), "MAPPERFS_EVENT=%s", event);
	snprintf(e->v[n++], sizeof(e->v[0]), "MAPPERFS_DATA_USED_BYTES=%llu",
		 (unsigned long long)used);
	snprintf(e->v[n++], sizeof(e->v[0]), "MAPPERFS_DATA_TOTAL_BYTES=%llu",
		 (unsigned long long)total);
	snprintf(e->v[n++], sizeof(e->v[0]), "MAPPERFS_DATA_PERCENT=%llu",
		 (unsigned long long)(total ? used * 100 / total : 0));
	snprintf(e->v[n++], sizeof(e->v[0]), "MAPPERFS_METADATA_USED_BYTES=%llu",
		 (unsigned long long)u->metadata_bytes);
	snprintf(e->v[n++], sizeof(e->v[0]), "MAPPERFS_METADATA_TOTAL_BYTES=%llu",
		 (unsigned long long)u->metadata_limit);
	snprintf(e->v[n++], sizeof(e->v[0]), "MAPPERFS_METADATA_PERCENT=%llu",
		 (unsigned long long)(u->metadata_limit ?
				      u->metadata_bytes * 100 / u->metadata_limit : 0));
	for (size_t i = 0; i < n; i++)
		e->envp[k++] = e->v[i];
	for (char **q = environ; q && *q && k < sizeof(e->envp) / sizeof(e->envp[0]) - 1; q++)
		if (strncmp(*q, "MAPPERFS_", 9))
			e->envp[k++] = *q;
	e->envp[k] = NULL;
}

/* Queues @tp's event command for @event, with the figures now.  Admin lock held. */
static void raise_event(struct pool *p, struct pool_volume *tp, const char *event,
			enum log_level level)
{
	struct thin_pool_usage u;
	struct event_env *e;

	log_at(level, "thin pool '%s': event %s", tp->rec.name, event);
	if (!tp->tp.rec->on_event[0] || !tp->tp.pool || !p->monitor->hooks)
		return;
	e = malloc(sizeof(*e));
	if (!e) {
		log_warn("thin pool '%s': out of memory: not running its event command for %s",
			 tp->rec.name, event);
		return;
	}
	thin_pool_usage(tp->tp.pool, &u);
	event_env_build(e, p, tp, event, &u);
	pool_hooks_queue(p->monitor->hooks, tp->rec.id, tp->rec.name, event,
			 tp->tp.rec->on_event, e->envp);
	free(e);
}

void pool_monitor_event(struct pool *p, struct pool_volume *tp, const char *event,
			enum log_level level)
{
	if (p->monitor)
		raise_event(p, tp, event, level);
}

static void pass(struct pool *p)
{
	pool_admin_lock(p);
	for (size_t i = 0; i < p->nr_vols; i++) {
		struct pool_volume *v = p->vols[i];

		v->type->watch(p, v);
	}
	pool_devices_tick(p);
	pool_admin_unlock(p);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Looks whether the raw devices that are not open answer now, when it is
 * time (pool_reload.c); a look that brings nothing back while a device
 * answers (refused: another disk, in use) doubles the wait.
 */
static void retry_absent(struct pool *p, struct pool_monitor *m)
{
	size_t back, answered = 0;

	if (now_ms() < m->absent_at)
		return;
	back = m->retry_absent(p, ABSENT_PROBE_MS, &answered);
	if (back || !answered)
		m->absent_gap = ABSENT_RETRY_MS;
	else if (m->absent_gap < ABSENT_RETRY_MAX_MS / 2)
		m->absent_gap *= 2;
	else
		m->absent_gap = ABSENT_RETRY_MAX_MS;
	m->absent_at = now_ms() + m->absent_gap;
}

static void *monitor_main(void *arg)
{
	struct pool *p = arg;
	struct pool_monitor *m = p->monitor;

	urcu_memb_register_thread();
	pool_set_command("mapperfs: the monitor (autoextend)");	/* its archive entries */
	pthread_mutex_lock(&m->lock);
	while (!m->stopping) {
		struct timespec ts;

		if (!m->kicked) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += MONITOR_PERIOD_MS / 1000;
			pthread_cond_timedwait(&m->kick, &m->lock, &ts);
		}
		m->kicked = false;
		if (m->stopping)
			break;
		pthread_mutex_unlock(&m->lock);
		pass(p);
		retry_absent(p, m);
		pthread_mutex_lock(&m->lock);
	}
	pthread_mutex_unlock(&m->lock);
	urcu_memb_unregister_thread();
	return NULL;
}

int pool_monitor_start(struct pool *p, uint32_t event_timeout_s,
		       size_t (*retry_absent)(struct pool *p, unsigned int probe_ms,
					      size_t *answered))
{
	struct pool_monitor *m = calloc(1, sizeof(*m));
	int r;

	if (!m)
		return -ENOMEM;
	r = pool_hooks_start(event_timeout_s, &p->owner, &m->hooks);
	if (r) {
		free(m);
		return r;
	}
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->kick, NULL);
	m->kicked = true;	/* the first pass at once: a mirror's resync starts with the daemon */
	m->retry_absent = retry_absent;
	m->absent_gap = ABSENT_RETRY_MS;
	m->absent_at = now_ms() + m->absent_gap;
	p->monitor = m;
	r = -pthread_create(&m->thread, NULL, monitor_main, p);
	if (r) {
		p->monitor = NULL;
		pool_hooks_stop(m->hooks);
		pthread_cond_destroy(&m->kick);
		pthread_mutex_destroy(&m->lock);
		free(m);
	}
	return r;
}

void pool_monitor_stop(struct pool *p)
{
	struct pool_monitor *m = p->monitor;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->stopping = true;
	pthread_cond_signal(&m->kick);
	pthread_mutex_unlock(&m->lock);
	pthread_join(m->thread, NULL);
	pool_hooks_stop(m->hooks);
	m->hooks = NULL;
}

void pool_monitor_free(struct pool *p)
{
	struct pool_monitor *m = p->monitor;

	if (!m)
		return;
	p->monitor = NULL;
	pthread_cond_destroy(&m->kick);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void pool_monitor_kick(void *pool)
{
	struct pool *p = pool;
	struct pool_monitor *m = p->monitor;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->kicked = true;
	pthread_cond_signal(&m->kick);
	pthread_mutex_unlock(&m->lock);
}
