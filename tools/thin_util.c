#include "thin_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"

int thin_util_get(struct cmd_ctx *ctx, const char *what, const char *name,
		  const char *kind, struct volume_rec *v, struct thin_rec *t)
{
	int r;

	r = store_volume_get(ctx->store, name, v);
	if (r == -ENOENT)
		return cmd_error(ctx, what, "no volume '%s'", name);
	if (r)
		return opts_store_error(ctx, what, "look up the volume", r);
	if (strcmp(v->kind, kind))
		return cmd_error(ctx, what, "volume '%s' is %s, not %s", name,
				 v->kind, kind);
	if (!t)
		return 0;
	r = store_thin_get(ctx->store, v->id, t);
	if (r)
		return opts_store_error(ctx, what, "read the thin volume", r);
	return 0;
}

int thin_util_walk(struct cmd_ctx *ctx, const char *what, int64_t pool,
		   struct thin_walk *w)
{
	int r;

	if (ctx->live) {
		r = ctx->live->pool_sync(ctx->live_arg, pool);
		if (r)
			return cmd_error(ctx, what, "the daemon cannot commit thin pool %lld: %s",
					 (long long)pool, strerror(-r));
	}
	r = thin_walk_load(ctx->store, pool, w);
	if (r)
		return opts_store_error(ctx, what, "read the thin pool's metadata", r);
	return 0;
}

int thin_util_gc(struct cmd_ctx *ctx, const char *what, int64_t pool)
{
	struct thin_walk w;
	int r;

	r = thin_walk_load(ctx->store, pool, &w);
	if (!r) {
		r = thin_walk_gc(ctx->store, &w);
		thin_walk_release(&w);
	}
	if (r)
		return opts_store_error(ctx, what, "free the unused map pages", r);
	return 0;
}

/* Offline: the thin row, and an empty map unless it shares @origin's. */
static int insert_map(struct cmd_ctx *ctx, const struct volume_rec *v, int64_t pool,
		      const struct thin_rec *origin)
{
	struct thin_rec t = { v->id, pool, origin ? origin->dir : 0 };
	struct thin_pool_rec p;
	struct thin_dir_rec d = { 0 };
	int r;

	if (!origin) {
		r = store_thin_pool_get(ctx->store, pool, &p);
		if (!r)
			r = store_thin_max_page(ctx->store, pool, &d.id);
		if (r)
			return r;
		d.id++;
		d.nr = (uint32_t)(((v->size + p.block_size - 1) / p.block_size +
				   THIN_LEAF_ENTRIES - 1) / THIN_LEAF_ENTRIES);
		d.leaves = calloc(d.nr, sizeof(*d.leaves));
		if (!d.leaves)
			return -ENOMEM;
		r = store_thin_dir_put(ctx->store, pool, &d);
		free(d.leaves);
		if (r)
			return r;
		t.dir = d.id;
	}
	return store_thin_put(ctx->store, &t);
}

static int insert_volume(struct cmd_ctx *ctx, const char *what, struct volume_rec *v,
			 int64_t pool, const struct thin_rec *origin,
			 const struct thin_origin_rec *ext)
{
	struct thin_origin_rec o;
	int r;

	r = opts_begin_volume(ctx, what, v);
	if (!r && ext) {
		o = *ext;
		o.volume = v->id;
		r = store_thin_origin_put(ctx->store, &o);
		if (r)
			r = opts_store_error(ctx, what, "record the volume's origin", r);
	}
	if (!r && !ctx->live) {
		r = insert_map(ctx, v, pool, origin);
		if (r)
			r = opts_store_error(ctx, what, "record the volume's map", r);
	}
	return opts_end_transaction(ctx, what, r);
}

int thin_util_create(struct cmd_ctx *ctx, const char *what, const char *name,
		     uint64_t size, int64_t pool, const struct thin_rec *origin,
		     const struct thin_origin_rec *ext, struct volume_rec *v)
{
	int r;

	memset(v, 0, sizeof(*v));
	snprintf(v->name, sizeof(v->name), "%s", name);
	strcpy(v->kind, "thin");
	v->size = size;
	r = insert_volume(ctx, what, v, pool, origin, ext);
	if (r || !ctx->live)
		return r;
	r = ctx->live->thin_created(ctx->live_arg, v->id, pool, origin ? origin->volume : 0);
	if (!r)
		return 0;
	store_volume_delete(ctx->store, v->id);
	return cmd_error(ctx, what, "the daemon cannot create thin volume '%s': %s",
			 name, strerror(-r));
}
