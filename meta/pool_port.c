/*
 * meta/pool_port.c: the pool service's store port (core/pool/pool_meta.h) on
 * SQLite.  One connection for the service's records; each thin pool's
 * pages get a connection of their own (thin_port.c).
 */
#include "pool_port.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_switch.h"
#include "thin_port.h"
#include "thin_store.h"

struct pool_port {
	struct pool_meta meta;		/* first: the service's handle */
	struct store *store;
	char *db_path;
};

static struct pool_port *port(struct pool_meta *m)
{
	return (struct pool_port *)m;
}

static struct store *st(struct pool_meta *m)
{
	return port(m)->store;
}

static int port_load(struct pool_meta *m, struct pool_meta_image *out)
{
	struct store *s = st(m);
	int r;

	memset(out, 0, sizeof(*out));
	r = store_pool_uuid(s, &out->uuid);
	if (!r)
		r = store_layout_seq(s, &out->layout_seq);
	if (!r)
		r = store_device_list(s, &out->devices, &out->nr_devices);
	if (!r)
		r = store_volume_list(s, &out->volumes, &out->nr_volumes);
	if (!r)
		r = store_extent_list(s, &out->extents, &out->nr_extents);
	if (!r)
		r = store_stripe_list(s, &out->stripes, &out->nr_stripes);
	if (!r)
		r = store_switch_list(s, &out->switches, &out->nr_switches);
	if (!r)
		r = store_switch_path_list(s, &out->switch_paths, &out->nr_switch_paths);
	if (!r)
		r = store_thin_pool_list(s, &out->thin_pools, &out->nr_thin_pools);
	if (!r)
		r = store_thin_list(s, &out->thins, &out->nr_thins);
	if (!r)
		r = store_thin_origin_list(s, &out->origins, &out->nr_origins);
	if (!r)
		r = store_tag_list(s, &out->tags, &out->nr_tags);
	if (!r)
		r = store_export_list(s, &out->exports, &out->nr_exports);
	if (r)
		pool_meta_image_release(out);
	return r;
}

static int port_integrity(struct pool_meta *m, bool whole,
			  void (*report)(void *arg, const char *msg), void *arg)
{
	return store_quick_check(st(m), whole, report, arg);
}

static int port_switch_table(struct pool_meta *m, int64_t volume, void **blob,
			     size_t *len)
{
	return store_switch_table_get(st(m), volume, blob, len);
}

static int port_begin(struct pool_meta *m)
{
	return store_begin(st(m));
}

static int port_commit(struct pool_meta *m)
{
	return store_commit(st(m));
}

static void port_rollback(struct pool_meta *m)
{
	store_rollback(st(m));
}

static int port_device_insert(struct pool_meta *m, struct device_rec *d)
{
	return store_device_insert(st(m), d);
}

static int port_device_restore(struct pool_meta *m, const struct device_rec *d)
{
	return store_device_restore(st(m), d);
}

static int port_volume_restore(struct pool_meta *m, const struct volume_rec *v)
{
	return store_volume_restore(st(m), v);
}

static int port_layout_seq_set(struct pool_meta *m, uint64_t seq)
{
	return store_layout_seq_set(st(m), seq);
}

static int port_uuid_set(struct pool_meta *m, const struct uuid *u)
{
	return store_pool_uuid_set(st(m), u);
}

static int port_device_delete(struct pool_meta *m, int64_t id)
{
	return store_device_delete(st(m), id);
}

static int port_volume_insert(struct pool_meta *m, struct volume_rec *v)
{
	return store_volume_insert(st(m), v);
}

static int port_volume_set_size(struct pool_meta *m, int64_t id, uint64_t size)
{
	return store_volume_set_size(st(m), id, size);
}

static int port_volume_update(struct pool_meta *m, const struct volume_rec *v)
{
	return store_volume_update(st(m), v);
}

static int port_volume_delete(struct pool_meta *m, int64_t id)
{
	return store_volume_delete(st(m), id);
}

static int port_extent_insert(struct pool_meta *m, const struct extent_rec *e)
{
	return store_extent_insert(st(m), e);
}

static int port_extent_delete(struct pool_meta *m, int64_t volume, uint32_t first,
			      uint32_t last)
{
	return store_extent_delete(st(m), volume, first, last);
}

static int port_extent_set_length(struct pool_meta *m, int64_t volume, uint32_t seq,
				  uint64_t length)
{
	return store_extent_set_length(st(m), volume, seq, length);
}

static int port_stripe_insert(struct pool_meta *m, const struct stripe_rec *s)
{
	return store_stripe_insert(st(m), s);
}

static int port_switch_insert(struct pool_meta *m, const struct switch_rec *sw,
			      const struct switch_path_rec *paths, const void *table,
			      size_t len)
{
	return store_switch_insert(st(m), sw, paths, table, len);
}

static int port_switch_table_set(struct pool_meta *m, int64_t volume,
				 const void *table, size_t len)
{
	return store_switch_table_set(st(m), volume, table, len);
}

static int port_switch_resize(struct pool_meta *m, int64_t volume, uint64_t nr_regions,
			      const void *table, size_t len)
{
	return store_switch_resize(st(m), volume, nr_regions, table, len);
}

static int port_switch_path_set(struct pool_meta *m, int64_t volume, uint32_t idx,
				int64_t device, uint64_t dev_offset)
{
	return store_switch_path_set(st(m), volume, idx, device, dev_offset);
}

static int port_thin_pool_insert(struct pool_meta *m, const struct thin_pool_rec *p)
{
	return store_thin_pool_insert(st(m), p);
}

static int port_thin_pool_update(struct pool_meta *m, const struct thin_pool_rec *p)
{
	return store_thin_pool_update(st(m), p);
}

static int port_thin_put(struct pool_meta *m, const struct thin_rec *t)
{
	return store_thin_put(st(m), t);
}

static int port_thin_origin_put(struct pool_meta *m, const struct thin_origin_rec *o)
{
	return store_thin_origin_put(st(m), o);
}

static int port_tag_add(struct pool_meta *m, const struct tag_rec *t)
{
	return store_tag_add(st(m), t);
}

static int port_tag_delete(struct pool_meta *m, const struct tag_rec *t)
{
	return store_tag_delete(st(m), t);
}

static int port_export_insert(struct pool_meta *m, const struct export_rec *e)
{
	return store_export_insert(st(m), e);
}

static int port_export_delete(struct pool_meta *m, int64_t volume)
{
	return store_export_delete(st(m), volume);
}

static int port_thin_dir_put(struct pool_meta *m, int64_t pool,
			     const struct thin_dir_rec *d)
{
	return store_thin_dir_put(st(m), pool, d);
}

static int port_thin_leaf_put(struct pool_meta *m, int64_t pool,
			      const struct thin_leaf_rec *l)
{
	return store_thin_leaf_put(st(m), pool, l);
}

static int port_thin_pages_delete(struct pool_meta *m, int64_t pool)
{
	return store_thin_pages_delete(st(m), pool);
}

static int port_thin_open(struct pool_meta *m, int64_t pool,
			  const struct thin_meta_ops **ops, void **arg)
{
	struct thin_port *tp;
	int r;

	r = thin_port_open(port(m)->db_path, pool, &tp);
	if (r)
		return r;
	*ops = &thin_port_ops;
	*arg = tp;
	return 0;
}

static void port_thin_close(struct pool_meta *m, void *arg)
{
	(void)m;
	thin_port_close(arg);
}

static void port_close(struct pool_meta *m)
{
	store_close(st(m));
	free(port(m)->db_path);
	free(port(m));
}

static int port_received_put(struct pool_meta *m, const struct thin_received_rec *r)
{
	return store_received_put(st(m), r);
}

static int port_received_get(struct pool_meta *m, int64_t volume, struct thin_received_rec *out)
{
	return store_received_get(st(m), volume, out);
}

static int port_received_drop(struct pool_meta *m, int64_t volume)
{
	return store_received_drop(st(m), volume);
}

static const struct pool_meta_ops pool_port_ops = {
	.load = port_load,
	.integrity = port_integrity,
	.switch_table = port_switch_table,
	.begin = port_begin,
	.commit = port_commit,
	.rollback = port_rollback,
	.device_insert = port_device_insert,
	.device_restore = port_device_restore,
	.volume_restore = port_volume_restore,
	.uuid_set = port_uuid_set,
	.layout_seq_set = port_layout_seq_set,
	.device_delete = port_device_delete,
	.volume_insert = port_volume_insert,
	.volume_set_size = port_volume_set_size,
	.volume_update = port_volume_update,
	.volume_delete = port_volume_delete,
	.extent_insert = port_extent_insert,
	.extent_set_length = port_extent_set_length,
	.extent_delete = port_extent_delete,
	.stripe_insert = port_stripe_insert,
	.switch_insert = port_switch_insert,
	.switch_table_set = port_switch_table_set,
	.switch_resize = port_switch_resize,
	.switch_path_set = port_switch_path_set,
	.thin_pool_insert = port_thin_pool_insert,
	.thin_pool_update = port_thin_pool_update,
	.thin_put = port_thin_put,
	.thin_origin_put = port_thin_origin_put,
	.tag_add = port_tag_add,
	.tag_delete = port_tag_delete,
	.export_insert = port_export_insert,
	.export_delete = port_export_delete,
	.received_put = port_received_put,
	.received_get = port_received_get,
	.received_drop = port_received_drop,
	.thin_dir_put = port_thin_dir_put,
	.thin_leaf_put = port_thin_leaf_put,
	.thin_pages_delete = port_thin_pages_delete,
	.thin_open = port_thin_open,
	.thin_close = port_thin_close,
	.close = port_close,
};

int pool_port_open(const char *db_path, bool create, struct pool_meta **out)
{
	struct pool_port *pp = calloc(1, sizeof(*pp));
	int r;

	if (!pp || !(pp->db_path = strdup(db_path))) {
		free(pp);
		return -ENOMEM;
	}
	r = store_open(db_path, create ? STORE_CREATE : 0, &pp->store);
	if (r) {
		free(pp->db_path);
		free(pp);
		return r;
	}
	pp->meta.ops = &pool_port_ops;
	*out = &pp->meta;
	return 0;
}
