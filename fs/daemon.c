/*
 * fs/daemon.c: the daemon's shared state.  The pool service (core/pool/pool.h)
 * owns the volumes, the store and every admin change; this is only what
 * the FUSE side adds to it.
 */
#include "daemon.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exporter.h"
#include "log.h"
#include "pool.h"
#include "rcu.h"
#include "volset.h"
#include "volume.h"

struct daemon {
	struct pool *pool;
	struct fuse_session *_Atomic se;
	struct exporter *_Atomic exporter;
	uid_t uid;
	gid_t gid;
	struct timespec started;	/* CLOCK_REALTIME */
};

struct daemon *daemon_new(struct pool *p)
{
	struct daemon *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->pool = p;
	d->uid = geteuid();
	d->gid = getegid();
	clock_gettime(CLOCK_REALTIME, &d->started);
	return d;
}

void daemon_free(struct daemon *d)
{
	if (!d)
		return;
	pool_close(d->pool);
	free(d);
}

struct pool *daemon_pool(struct daemon *d)
{
	return d->pool;
}

uid_t daemon_uid(const struct daemon *d)
{
	return d->uid;
}

gid_t daemon_gid(const struct daemon *d)
{
	return d->gid;
}

struct timespec daemon_started(const struct daemon *d)
{
	return d->started;
}

void daemon_set_session(struct daemon *d, struct fuse_session *se)
{
	atomic_store(&d->se, se);
}

struct fuse_session *daemon_session(struct daemon *d)
{
	return atomic_load(&d->se);
}

void daemon_set_exporter(struct daemon *d, struct exporter *ex)
{
	atomic_store(&d->exporter, ex);
}

void daemon_sync_exports(struct daemon *d)
{
	struct exporter *ex = atomic_load(&d->exporter);

	if (ex)
		exporter_sync(ex);
}

/*
 * The kernel answers ENOENT for what it does not hold (a file never looked
 * up, a name never resolved): nothing to forget, and nothing wrong.
 */
static void told(const char *what, const char *which, int r)
{
	if (r && r != -ENOENT)
		log_warn("cannot tell the kernel to forget %s %s: %s", what, which,
			 strerror(-r));
	else
		log_debug("told the kernel to forget %s %s%s", what, which,
			  r ? " (it held none)" : "");
}

static void forget_file(void *arg, int64_t id)
{
	char ino[32];

	snprintf(ino, sizeof(ino), "%lld", (long long)id + 1);
	/* Attributes, and every page of a shared mapping of it. */
	told("the file of inode", ino,
	     fuse_lowlevel_notify_inval_inode(arg, (fuse_ino_t)id + 1, 0, 0));
}

static void forget_name(void *arg, const char *name)
{
	char quoted[POOL_NAME_MAX + 3];

	snprintf(quoted, sizeof(quoted), "'%s'", name);
	told("the name", quoted,
	     fuse_lowlevel_notify_inval_entry(arg, FUSE_ROOT_ID, name, strlen(name)));
}

void daemon_forget_stale(struct daemon *d)
{
	struct fuse_session *se = daemon_session(d);

	if (se)
		pool_take_stale(d->pool, forget_file, forget_name, se);
}

size_t daemon_open_volumes(struct daemon *d, char *buf, size_t len)
{
	struct volset_array *a;
	size_t used = 0, nr = 0;

	buf[0] = '\0';
	rcu_read_begin();
	a = pool_served(d->pool);
	for (size_t i = 0; i < a->nr; i++) {
		int n = atomic_load(&a->v[i]->holders);

		if (n <= 0)
			continue;
		nr++;
		if (used < len)
			used += (size_t)snprintf(buf + used, len - used, "%s'%s' (%d)",
						 used ? ", " : "", a->v[i]->name, n);
	}
	rcu_read_end();
	return nr;
}
