/*
 * core/pool/pool_report.c: what status, list and device list show, as JSON
 * objects (json.h renders them as JSON or as "key: value" text), so each
 * object has one shape everywhere.  Everything comes from the pool in
 * memory and the live objects: no store read, whatever process asks.
 */
#include "pool_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "device.h"
#include "label.h"
#include "nbd_link.h"
#include "space.h"
#include "volume.h"

/* What allocation can take from @d (space.h), given all that is in use. */
static uint64_t device_free(struct pool *p, const struct pool_device *d)
{
	struct extent_rec *used;
	uint64_t free_bytes;
	size_t nr;

	if (pool_used(p, NULL, 0, &used, &nr))
		return 0;
	free_bytes = space_free_bytes(used, nr, &d->rec, UINT64_MAX);
	free(used);
	return free_bytes;
}

/* "tags": [...], for an object that carries any. */
static void report_tags(struct json *j, const struct tags *t)
{
	if (!t->nr)
		return;
	json_array_begin(j, "tags");
	for (size_t i = 0; i < t->nr; i++)
		json_string(j, NULL, t->v[i]);
	json_array_end(j);
}

/* An NBD device's link (nbd_link.h): its connections and what they met. */
static void report_nbd(struct json *j, struct nbd_link *l)
{
	struct nbd_link_stats st;

	nbd_link_stats(l, &st);
	json_object_begin(j, "nbd");
	json_u64(j, "connections", st.conns);
	json_bool(j, "multi_conn", st.multi_conn);
	json_u64(j, "timeout_ms", nbd_link_timeout_ms(l));
	json_u64(j, "reconnects", st.reconnects);
	json_u64(j, "retried", st.retried);
	json_u64(j, "failed", st.failed);
	json_object_end(j);
}

static const char *device_state(const struct pool_device *d)
{
	return !d->dev ? "failed" : pool_device_reconnecting(d, NULL, 0) ? "reconnecting" : "ok";
}

/*
 * Whether a device under @v (its thin pool's, for a thin volume) waits
 * for its NBD server to come back.  O(extents of the volume).
 */
static bool volume_reconnecting(struct pool *p, const struct pool_volume *v)
{
	const struct extent_rec *e;
	size_t nr;

	if (!strcmp(v->rec.kind, "thin"))
		v = pool_volume_by_id(p, v->thin.rec.pool);
	if (!v)
		return false;
	e = pool_extents_of(p, v->rec.id, &nr);
	for (size_t i = 0; i < nr; i++) {
		struct pool_device *d = pool_device_by_id(p, e[i].device);

		if (d && pool_device_reconnecting(d, NULL, 0))
			return true;
	}
	return false;
}

static void report_device(struct pool *p, struct json *j, const struct pool_device *d)
{
	uint64_t free_bytes = device_free(p, d);
	uint64_t area = d->rec.size > DEVICE_DATA_OFFSET ? d->rec.size - DEVICE_DATA_OFFSET : 0;
	char uuid[UUID_STR_LEN], why[POOL_ERROR_LEN];

	uuid_format(&d->rec.uuid, uuid);
	json_string(j, "name", d->rec.name);
	json_string(j, "path", d->rec.path);
	json_string(j, "uuid", uuid);
	json_size(j, "size", d->rec.size);
	json_size(j, "used", area > free_bytes ? area - free_bytes : 0);
	json_size(j, "free", free_bytes);
	json_string(j, "state", device_state(d));
	if (d->failure)
		json_string(j, "reason", d->failure);
	else if (pool_device_reconnecting(d, why, sizeof(why)))
		json_string(j, "reason", why);
	if (d->dev && d->dev->nbd)
		report_nbd(j, d->dev->nbd);
	report_tags(j, &d->tags);
}

static void report_live(struct json *j, struct volume *v)
{
	json_u64(j, "open", (uint64_t)atomic_load(&v->holders));
	json_u64(j, "reads", atomic_load(&v->stats.reads));
	json_u64(j, "writes", atomic_load(&v->stats.writes));
	json_size(j, "read_bytes", atomic_load(&v->stats.read_bytes));
	json_size(j, "write_bytes", atomic_load(&v->stats.write_bytes));
	json_u64(j, "io_errors", atomic_load(&v->stats.errors));
	json_u64(j, "no_space", atomic_load(&v->stats.no_space));
}

/*
 * The identity send streams carry for @v (pool_thin_identity), and, if
 * @v was received, the sender's name of it: what tells why a receive
 * took or refused a base.
 */
static void report_identity(struct pool *p, struct pool_volume *v, struct json *j)
{
	struct thin_received_rec rec;
	char id[UUID_STR_LEN];
	struct uuid u;
	int r = p->meta->ops->received_get(p->meta, v->rec.id, &rec);

	if (r && r != -ENOENT)
		return;
	pool_thin_identity_of(p, v, r ? NULL : &rec, &u);
	uuid_format(&u, id);
	json_string(j, "identity", id);
	if (!r && !rec.staged)
		json_string(j, "received_from", rec.source_name);
}

/*
 * Why @v is failed, or NULL: it could not be built, or, built, it fails
 * now (its type says).  One answer for status, list --json and list.
 */
static const char *volume_failure(struct pool_volume *v, char *buf, size_t len)
{
	if (v->failure)
		return v->failure;
	return v->type->failing(v, buf, len) ? buf : NULL;
}

static void report_volume(struct pool *p, struct json *j, struct pool_volume *v,
			  bool live)
{
	char buf[POOL_ERROR_LEN];
	const char *failure = volume_failure(v, buf, sizeof(buf));

	json_string(j, "name", v->rec.name);
	json_string(j, "kind", v->rec.kind);
	json_size(j, "size", v->rec.size);
	json_string(j, "state", failure ? "failed" : volume_reconnecting(p, v) ? "reconnecting" :
			  pool_volume_degraded(p, v) ? "degraded" : "ok");
	if (failure)
		json_string(j, "reason", failure);
	if (v->type->served) {
		json_bool(j, "active", !v->rec.inactive);
		json_bool(j, "read_only", v->rec.read_only);
		json_bool(j, "allow_shrink", v->rec.allow_shrink);
	}
	if (v->rec.created)
		json_time(j, "created", v->rec.created);
	if (v->served && v->type->served)
		json_time(j, "modified", atomic_load(&v->served->modified));
	report_tags(j, &v->tags);
	pool_report_export(p, j, v);
	v->type->status(p, v, j);
	if (v->type == &thin_type)
		report_identity(p, v, j);
	if (live && v->published)
		report_live(j, v->served);
}

/*
 * The layout's copies on the devices: "current", or "stale" when the
 * layout outgrew their metadata area even deflated (recover would bring
 * back the last that fitted); the layout's size as text, and as the last
 * copy that fitted.
 */
static void report_layout(struct pool *p, struct json *j)
{
	json_string(j, "layout_copies", atomic_load(&p->layout_stale) ? "stale" : "current");
	json_size(j, "layout_bytes", atomic_load(&p->layout_text_bytes));
	json_size(j, "layout_copy_bytes", atomic_load(&p->layout_copy_bytes));
}

int pool_status(struct pool *p, const char *name, const struct pool_host *host,
		struct json *j, struct pool_error *err)
{
	char uuid[UUID_STR_LEN];
	struct pool_volume *v;
	int r = 0;

	pool_admin_lock(p);
	if (name) {
		r = pool_volume_get_staged(p, name, NULL, true, &v, err);
		if (!r) {
			json_object_begin(j, NULL);
			report_volume(p, j, v, true);
			json_object_end(j);
		}
		goto out;
	}
	uuid_format(&p->uuid, uuid);
	json_object_begin(j, NULL);
	json_object_begin(j, "pool");
	json_string(j, "path", p->dir);
	json_string(j, "uuid", uuid);
	json_bool(j, "daemon", host != NULL);
	if (host) {
		json_u64(j, "daemon_pid", (uint64_t)host->pid);
		json_string(j, "transport", host->transport);
	}
	if (host && host->stopping)
		json_string(j, "stopping", host->stopping);
	report_layout(p, j);
	json_object_end(j);
	json_array_begin(j, "devices");
	for (size_t i = 0; i < p->nr_devs; i++) {
		json_object_begin(j, NULL);
		report_device(p, j, p->devs[i]);
		json_object_end(j);
	}
	json_array_end(j);
	json_array_begin(j, "volumes");
	for (size_t i = 0; i < p->nr_vols; i++) {
		json_object_begin(j, NULL);
		report_volume(p, j, p->vols[i], true);
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
out:
	pool_admin_unlock(p);
	return r;
}

int pool_list(struct pool *p, struct json *j, struct pool_error *err)
{
	(void)err;
	pool_admin_lock(p);
	pool_thin_usage_gather(p);
	json_array_begin(j, NULL);
	for (size_t i = 0; i < p->nr_vols; i++) {
		json_object_begin(j, NULL);
		report_volume(p, j, p->vols[i], false);
		json_object_end(j);
	}
	json_array_end(j);
	pool_thin_usage_forget(p);
	pool_admin_unlock(p);
	return 0;
}

int pool_devices(struct pool *p, struct json *j, struct pool_error *err)
{
	(void)err;
	pool_admin_lock(p);
	json_array_begin(j, NULL);
	for (size_t i = 0; i < p->nr_devs; i++) {
		json_object_begin(j, NULL);
		report_device(p, j, p->devs[i]);
		json_object_end(j);
	}
	json_array_end(j);
	pool_admin_unlock(p);
	return 0;
}

int pool_volume_infos(struct pool *p, struct pool_volume_info **out, size_t *nr)
{
	struct pool_volume_info *v;
	size_t n;
	int r = 0;

	pool_admin_lock(p);
	pool_thin_usage_gather(p);
	n = p->nr_vols;
	v = calloc(n + 1, sizeof(*v));
	for (size_t i = 0; v && !r && i < n; i++) {
		const char *failure = volume_failure(p->vols[i], v[i].reason, sizeof(v[i].reason));

		v[i].rec = p->vols[i]->rec;
		v[i].file = p->vols[i]->type->served;
		v[i].rec.modified = p->vols[i]->served && p->vols[i]->type->served ?
				    atomic_load(&p->vols[i]->served->modified) : 0;
		if (failure != v[i].reason)
			snprintf(v[i].reason, sizeof(v[i].reason), "%s", failure ? failure : "");
		v[i].data_pct = v[i].meta_pct = v[i].sync_pct = -1;
		p->vols[i]->type->info(p, p->vols[i], &v[i]);
		if (!v[i].condition && volume_reconnecting(p, p->vols[i]))
			v[i].condition = "reconnecting";
		r = tags_copy(&v[i].tags, &p->vols[i]->tags);
		v[i].export = pool_export_info_of(p, p->vols[i]);
	}
	pool_thin_usage_forget(p);
	pool_admin_unlock(p);
	if (v && r) {
		pool_volume_infos_release(v, n);
		v = NULL;
	}
	*nr = v ? n : 0;
	*out = v;
	return v ? 0 : -ENOMEM;
}

int pool_device_infos(struct pool *p, struct pool_device_info **out, size_t *nr)
{
	struct pool_device_info *v;
	size_t n;
	int r = 0;

	pool_admin_lock(p);
	n = p->nr_devs;
	v = calloc(n + 1, sizeof(*v));
	for (size_t i = 0; v && !r && i < n; i++) {
		v[i].rec = p->devs[i]->rec;
		v[i].free = device_free(p, p->devs[i]);
		v[i].reconnecting = pool_device_reconnecting(p->devs[i], v[i].reason,
							     sizeof(v[i].reason));
		if (p->devs[i]->failure)
			snprintf(v[i].reason, sizeof(v[i].reason), "%s", p->devs[i]->failure);
		r = tags_copy(&v[i].tags, &p->devs[i]->tags);
	}
	pool_admin_unlock(p);
	if (v && r) {
		pool_device_infos_release(v, n);
		v = NULL;
	}
	*nr = v ? n : 0;
	*out = v;
	return v ? 0 : -ENOMEM;
}

void pool_volume_infos_release(struct pool_volume_info *v, size_t nr)
{
	for (size_t i = 0; v && i < nr; i++) {
		tags_release(&v[i].tags);
		free(v[i].export);
	}
	free(v);
}

void pool_device_infos_release(struct pool_device_info *d, size_t nr)
{
	for (size_t i = 0; d && i < nr; i++)
		tags_release(&d[i].tags);
	free(d);
}
