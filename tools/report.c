#include "report.h"

#include <stdlib.h>
#include <string.h>

#include "label.h"
#include "opts.h"
#include "store_switch.h"
#include "switch_table.h"
#include "thin_util.h"

void report_device(struct json *j, const struct device_rec *d,
		   uint64_t free_bytes)
{
	char uuid[UUID_STR_LEN];

	uuid_format(&d->uuid, uuid);
	json_string(j, "name", d->name);
	json_string(j, "path", d->path);
	json_string(j, "uuid", uuid);
	json_size(j, "size", d->size);
	json_size(j, "used", d->size - DEVICE_DATA_OFFSET - free_bytes);
	json_size(j, "free", free_bytes);
}

static int report_segments(struct cmd_ctx *ctx, const char *what,
			   struct json *j, const struct volume_rec *v)
{
	struct extent_rec *e = NULL;
	struct device_rec d;
	size_t nr = 0;
	int r;

	r = store_extents_of_volume(ctx->store, v->id, &e, &nr);
	if (r)
		return opts_store_error(ctx, what, "read the volume's extents", r);
	json_array_begin(j, "segments");
	for (size_t i = 0; !r && i < nr; i++) {
		r = store_device_get_by_id(ctx->store, e[i].device, &d);
		if (r) {
			r = opts_store_error(ctx, what, "look up a device", r);
			break;
		}
		json_object_begin(j, NULL);
		json_string(j, "device", d.name);
		json_u64(j, "offset", e[i].dev_offset - DEVICE_DATA_OFFSET);
		json_size(j, "length", e[i].length);
		json_object_end(j);
	}
	json_array_end(j);
	free(e);
	return r;
}

static int report_paths(struct cmd_ctx *ctx, const char *what, struct json *j,
			const struct volume_rec *v, const struct switch_rec *sw,
			const uint64_t *regions)
{
	struct switch_path_rec *p = NULL;
	struct device_rec d;
	size_t nr = 0;
	int r;

	r = store_switch_paths(ctx->store, v->id, &p, &nr);
	if (r)
		return opts_store_error(ctx, what, "read the volume's paths", r);
	json_array_begin(j, "paths");
	for (size_t i = 0; !r && i < nr && i < sw->nr_paths; i++) {
		r = store_device_get_by_id(ctx->store, p[i].device, &d);
		if (r) {
			r = opts_store_error(ctx, what, "look up a device", r);
			break;
		}
		json_object_begin(j, NULL);
		json_u64(j, "index", p[i].idx);
		json_string(j, "device", d.name);
		json_u64(j, "offset", p[i].dev_offset - DEVICE_DATA_OFFSET);
		json_u64(j, "regions", regions[i]);
		if (ctx->live)
			ctx->live->switch_path_status(ctx->live_arg, v->id, p[i].idx, j);
		json_object_end(j);
	}
	json_array_end(j);
	free(p);
	return r;
}

/*
 * A switch volume: region size and count, and per path its place, how
 * many regions the table gives it, and the daemon's counters.
 */
static int report_switch(struct cmd_ctx *ctx, const char *what, struct json *j,
			 const struct volume_rec *v)
{
	uint64_t regions[SWITCH_PATHS_MAX];
	struct switch_table *t = NULL;
	struct switch_rec sw;
	void *blob = NULL;
	size_t len;
	int r;

	r = store_switch_get(ctx->store, v->id, &sw);
	if (!r)
		r = store_switch_table_get(ctx->store, v->id, &blob, &len);
	if (!r)
		r = switch_table_create(sw.nr_regions, sw.nr_paths, &t);
	if (!r)
		r = switch_table_import(t, blob, len);
	free(blob);
	if (r) {
		switch_table_destroy(t);
		return opts_store_error(ctx, what, "read the region table", r);
	}
	switch_table_count(t, regions);
	switch_table_destroy(t);
	json_size(j, "region_size", sw.region_size);
	json_u64(j, "region_count", sw.nr_regions);
	return report_paths(ctx, what, j, v, &sw, regions);
}

static void report_pool(struct json *j, const struct thin_walk *w)
{
	uint64_t bs = w->params.block_size;
	uint64_t meta = w->nr_leaves * (THIN_LEAF_ENTRIES * 4);
	uint64_t free_blocks = w->nr_blocks - w->used;

	for (size_t i = 0; i < w->nr_dirs; i++)
		meta += (uint64_t)w->dirs[i].nr * 8;
	json_u64(j, "block_size", bs);
	json_u64(j, "data_used_bytes", w->used * bs);
	json_u64(j, "data_total_bytes", w->nr_blocks * bs);
	json_u64(j, "metadata_bytes", meta);
	json_u64(j, "metadata_pages", w->nr_dirs + w->nr_leaves);
	json_u64(j, "thin_volumes", w->nr_vols);
	json_string(j, "when_full", w->params.wait ? "wait" : "error");
	if (w->params.wait)
		json_u64(j, "wait_seconds", w->params.wait_seconds);
	json_bool(j, "zero", w->params.zero);
	json_u64(j, "low_water_percent", w->params.low_water);
	json_bool(j, "low_water_crossed", w->nr_blocks &&
		  free_blocks * 100 / w->nr_blocks < w->params.low_water);
}

int report_thin(struct cmd_ctx *ctx, const char *what, struct json *j,
		const struct volume_rec *v)
{
	struct thin_walk_usage u;
	struct thin_walk w;
	struct thin_rec t;
	int64_t pool = v->id;
	int r;

	if (!strcmp(v->kind, "thin")) {
		r = store_thin_get(ctx->store, v->id, &t);
		if (r)
			return opts_store_error(ctx, what, "read the thin volume", r);
		pool = t.pool;
	}
	r = thin_util_walk(ctx, what, pool, &w);
	if (r)
		return r;
	if (pool == v->id) {
		report_pool(j, &w);
	} else if (!thin_walk_usage(&w, v->id, &u)) {
		struct volume_rec p;

		if (!store_volume_get_by_id(ctx->store, pool, &p))
			json_string(j, "pool", p.name);
		json_u64(j, "mapped_bytes", u.mapped * w.params.block_size);
		json_u64(j, "exclusive_bytes", u.exclusive * w.params.block_size);
		json_u64(j, "shared_bytes", u.shared * w.params.block_size);
	}
	thin_walk_release(&w);
	return 0;
}

int report_volume(struct cmd_ctx *ctx, const char *what, struct json *j,
		  const struct volume_rec *v)
{
	int r;

	json_string(j, "name", v->name);
	json_string(j, "kind", v->kind);
	json_size(j, "size", v->size);
	if (!strcmp(v->kind, "switch"))
		r = report_switch(ctx, what, j, v);
	else
		r = report_segments(ctx, what, j, v);
	if (!r && (!strcmp(v->kind, "thin") || !strcmp(v->kind, "thin-pool")))
		r = report_thin(ctx, what, j, v);
	if (r)
		return r;
	json_bool(j, "daemon", ctx->live != NULL);
	if (ctx->live)
		ctx->live->volume_status(ctx->live_arg, v->id, j);
	return 0;
}
