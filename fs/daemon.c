/*
 * fs/daemon.c: the daemon's shared state.  The pool service (core/pool/pool.h)
 * owns the volumes, the store and every admin change; this is only what
 * the FUSE side adds to it.
 */
#include "daemon.h"

#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "pool.h"
#include "rcu.h"
#include "volset.h"
#include "volume.h"

struct daemon {
	struct pool *pool;
	struct fuse_session *_Atomic se;
	uid_t uid;
	gid_t gid;
};

struct daemon *daemon_new(struct pool *p)
{
	struct daemon *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->pool = p;
	d->uid = geteuid();
	d->gid = getegid();
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

void daemon_set_session(struct daemon *d, struct fuse_session *se)
{
	atomic_store(&d->se, se);
}

struct fuse_session *daemon_session(struct daemon *d)
{
	return atomic_load(&d->se);
}

void daemon_forget_attrs(struct daemon *d)
{
	struct fuse_session *se = daemon_session(d);
	struct volset_array *a;
	size_t nr, i;
	int64_t *ids;

	if (!se)
		return;
	rcu_read_begin();
	a = pool_served(d->pool);
	nr = a->nr;
	ids = malloc((nr + 1) * sizeof(*ids));
	for (i = 0; ids && i < nr; i++)
		ids[i] = a->v[i]->id;
	rcu_read_end();
	/* Outside the section: the kernel may answer with a request of ours. */
	for (i = 0; ids && i < nr; i++)
		fuse_lowlevel_notify_inval_inode(se, (fuse_ino_t)ids[i] + 1, 0, 0);
	free(ids);
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
