/*
 * core/pool/pool_reload.c: building a pool's volumes, and building again
 * what failed once its cause is gone: `mapperctl reload`, and the
 * monitor's retry of raw devices that were absent.
 *
 * A raw device that cannot be opened when the pool opens (a disk not yet
 * plugged in, an NBD server that starts after the daemon) leaves what is
 * built on it failed.  LVM activates such a volume group when udev sees
 * the device arrive; here the monitor looks every few seconds whether an
 * absent device answers (device_answers: an open, or an NBD handshake,
 * outside every lock and briefly), and when one does, reloads the pool
 * as `mapperctl reload` would.  A device that answers but is refused
 * (another disk behind the address, held by another process) would be
 * tried in vain, so each try that brings nothing back doubles the wait
 * before the next, up to a few minutes; one that brings something back
 * starts again from the shortest.
 */
#include "pool_int.h"

#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "log.h"

/*
 * One at a time would cost a copy of the served set and a grace period
 * each: minutes for 100,000 volumes.
 */
size_t pool_build_volumes(struct pool *p, bool retry)
{
	struct pool_volume **built = malloc((p->nr_vols + 1) * sizeof(*built));
	unsigned int order, next = 0;
	size_t nr = 0;

	for (order = 0; next != ~0u; order = next) {
		next = ~0u;
		for (size_t i = 0; i < p->nr_vols; i++) {
			struct pool_volume *v = p->vols[i];
			struct pool_error e;

			if (v->type->build_order > order && v->type->build_order < next)
				next = v->type->build_order;
			if (v->type->build_order != order || v->broken ||
			    !v->failure != !retry)
				continue;
			free(v->failure);
			v->failure = NULL;
			if (v->type->build(p, v, &e))
				pool_volume_failed(v, e.msg);
			else if (!built)
				pool_volume_failed(v, "out of memory");
			else
				built[nr++] = v;
		}
	}
	if (nr && pool_volumes_show(p, built, nr)) {
		for (size_t i = 0; i < nr; i++)
			pool_volume_failed(built[i], "out of memory");
		nr = 0;
	}
	free(built);
	return nr;
}

/*
 * Tries again each volume that is built but fails all the same (an
 * origin image a writer reached: its type's recover hook).  Returns how
 * many it serves again.
 */
static size_t recover_failing(struct pool *p)
{
	char why[POOL_ERROR_LEN];
	size_t nr = 0;

	for (size_t i = 0; i < p->nr_vols; i++) {
		struct pool_volume *v = p->vols[i];

		if (!v->failure && v->type->failing(v, why, sizeof(why)) &&
		    !v->type->recover(p, v))
			nr++;
	}
	return nr;
}

/*
 * Counts what is still failed, and names the first in @still: what could
 * not be opened or built, and what is built but fails (its type's
 * failing hook), as status and list show them.
 */
static size_t count_failed(struct pool *p, struct pool_error *still)
{
	char why[POOL_ERROR_LEN];
	size_t failed = 0;

	still->msg[0] = '\0';
	for (size_t i = 0; i < p->nr_devs; i++) {
		struct pool_device *d = p->devs[i];

		if (d->dev)
			continue;
		if (!failed++)
			snprintf(still->msg, sizeof(still->msg), "raw device '%s' %s",
				 d->rec.name, d->failure ? d->failure : "is not open");
	}
	for (size_t i = 0; i < p->nr_vols; i++) {
		struct pool_volume *v = p->vols[i];
		const char *failure = v->failure;

		if (!failure && v->type->failing(v, why, sizeof(why)))
			failure = why;
		if (!failure)
			continue;
		/* Cut to fit, as every reason is. */
		if (!failed++ && snprintf(still->msg, sizeof(still->msg), "volume '%s': %s",
					  v->rec.name, failure) < 0)
			still->msg[0] = '\0';
	}
	return failed;
}

int pool_reload(struct pool *p, size_t *recovered, size_t *failed,
		struct pool_error *still, struct pool_error *err)
{
	int r;

	pool_admin_lock(p);
	*recovered = 0;
	for (size_t i = 0; i < p->nr_devs; i++)
		if (!p->devs[i]->dev && !pool_device_attach(p, p->devs[i]))
			(*recovered)++;
	/* First, so that what is built on a volume served again is built now. */
	*recovered += recover_failing(p);
	*recovered += pool_build_volumes(p, true);
	*failed = count_failed(p, still);
	pool_space_update(p);
	r = pool_thins_update(p);
	if (r)
		pool_fail(err, r, "out of memory");
	pool_admin_unlock(p);
	return r;
}

/*
 * The paths of the raw devices that are not open, malloc'ed (with the
 * array), under the admin lock: the monitor probes them outside it.
 */
static char **absent_paths(struct pool *p, size_t *nr)
{
	char **paths;

	pool_admin_lock(p);
	*nr = 0;
	paths = calloc(p->nr_devs + 1, sizeof(*paths));
	for (size_t i = 0; paths && i < p->nr_devs; i++) {
		if (p->devs[i]->dev)
			continue;
		paths[*nr] = strdup(p->devs[i]->rec.path);
		if (paths[*nr])
			(*nr)++;
	}
	pool_admin_unlock(p);
	return paths;
}

size_t pool_reload_absent(struct pool *p, unsigned int probe_ms, size_t *answered_out)
{
	struct pool_error still, err;
	size_t nr, answered = 0, recovered = 0, failed = 0;
	char **paths = absent_paths(p, &nr);

	for (size_t i = 0; i < nr; i++) {
		answered += device_answers(paths[i], probe_ms);
		free(paths[i]);
	}
	free(paths);
	*answered_out = answered;
	if (!answered)
		return 0;
	if (pool_reload(p, &recovered, &failed, &still, &err))
		log_error("pool '%s': reload after a raw device answered: %s", p->dir, err.msg);
	else if (recovered)
		log_info("pool '%s': %zu raw device%s answer%s again: %zu raw devices and volumes "
			 "recovered, %zu still failed%s%s", p->dir, answered, answered == 1 ? "" : "s",
			 answered == 1 ? "s" : "", recovered, failed, failed ? ": " : "",
			 failed ? still.msg : "");
	return recovered;
}
