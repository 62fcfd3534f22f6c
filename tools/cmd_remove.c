/*
 * remove: deletes a volume and frees its extents.  With the daemon, the
 * volume first stops being served (refused while a file on it is open),
 * and volume_changed() runs whatever the outcome: after a commit it drops
 * the volume, after a rollback it serves it again.
 *
 * A thin pool that still has volumes is refused.  A thin volume's map is
 * dropped first (by the daemon's pool commit, or offline by deleting the
 * pages nobody reaches any more after the row went), so only blocks that
 * no other volume maps go back to the pool.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "opts.h"
#include "store.h"
#include "thin_util.h"

#define WHAT "remove"

static int delete_volume(struct cmd_ctx *ctx, const struct volume_rec *v)
{
	int r;

	r = store_begin(ctx->store);
	if (r)
		return opts_store_error(ctx, WHAT, "start a transaction", r);
	r = store_volume_delete(ctx->store, v->id);
	if (r)
		r = opts_store_error(ctx, WHAT, "delete the volume", r);
	return opts_end_transaction(ctx, WHAT, r);
}

static int remove_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = { { 0 } };
	struct volume_rec v, thin_user;
	struct thin_rec thin;
	int64_t thin_pool = 0, user;
	int r;

	if (opts_next(ctx, WHAT, argc, argv, longopts, 1) != -1)
		return CMD_USAGE;
	r = opts_args(ctx, WHAT, argc, argv, 1, 1, "the volume NAME");
	if (r)
		return r;
	r = store_volume_get(ctx->store, argv[optind], &v);
	if (r == -ENOENT)
		return cmd_error(ctx, WHAT, "no volume '%s'", argv[optind]);
	if (r)
		return opts_store_error(ctx, WHAT, "look up the volume", r);
	r = store_thin_origin_user(ctx->store, v.id, &user);
	if (!r && !store_volume_get_by_id(ctx->store, user, &thin_user))
		return cmd_error(ctx, WHAT, "volume '%s' is the origin of thin volume '%s'",
				 v.name, thin_user.name);
	if (!r)
		return cmd_error(ctx, WHAT, "volume '%s' is the origin of a thin volume", v.name);
	if (r != -ENOENT)
		return opts_store_error(ctx, WHAT, "look up thin volumes on it", r);
	if (!strcmp(v.kind, "thin-pool")) {
		struct thin_rec *t = NULL;
		size_t nr = 0;

		r = store_thin_list(ctx->store, v.id, &t, &nr);
		free(t);
		if (r)
			return opts_store_error(ctx, WHAT, "list the pool's volumes", r);
		if (nr)
			return cmd_error(ctx, WHAT, "thin pool '%s' still has %zu volume%s",
					 v.name, nr, nr == 1 ? "" : "s");
	} else if (!strcmp(v.kind, "thin")) {
		r = store_thin_get(ctx->store, v.id, &thin);
		if (r && r != -ENOENT)
			return opts_store_error(ctx, WHAT, "read the thin volume", r);
		thin_pool = r ? 0 : thin.pool;
	}
	if (ctx->live) {
		r = ctx->live->volume_removing(ctx->live_arg, v.id);
		if (r == -EBUSY)
			return cmd_error(ctx, WHAT, "volume '%s' is busy (open)", v.name);
		if (r)
			return cmd_error(ctx, WHAT, "cannot stop serving volume '%s': %s",
					 v.name, strerror(-r));
	}
	r = delete_volume(ctx, &v);
	if (!r && thin_pool && !ctx->live)
		r = thin_util_gc(ctx, WHAT, thin_pool);
	if (ctx->live)
		opts_live_result(ctx, WHAT, ctx->live->volume_changed(ctx->live_arg, v.id));
	if (!r)
		fprintf(ctx->out, "removed volume '%s'\n", v.name);
	return r;
}

const struct cmd cmd_remove = {
	.name = "remove",
	.usage =
		"remove NAME\n"
		"\n"
		"Deletes the volume NAME and frees its space.  Refused while the\n"
		"daemon has it open.\n",
	.run = remove_run,
	.needs_store = 1,
};
