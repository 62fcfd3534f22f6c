/*
 * remove: deletes a volume and frees its extents.  With the daemon, the
 * volume first stops being served (refused while a file on it is open),
 * and volume_changed() runs whatever the outcome: after a commit it drops
 * the volume, after a rollback it serves it again.
 */
#include <errno.h>
#include <string.h>

#include "cmd.h"
#include "opts.h"
#include "store.h"

#define WHAT "remove"

static int delete_volume(struct cmd_ctx *ctx, const struct volume_rec *v)
{
	int r;

	r = store_begin(ctx->store);
	if (r)
		return opts_store_error(ctx, WHAT, "start a transaction", r);
	r = store_volume_delete(ctx->store, v->id);
	if (r) {
		r = opts_store_error(ctx, WHAT, "delete the volume", r);
	} else {
		r = store_commit(ctx->store);
		if (r)
			r = opts_store_error(ctx, WHAT, "commit", r);
	}
	if (r)
		store_rollback(ctx->store);
	return r;
}

static int remove_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = { { 0 } };
	struct volume_rec v;
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
	if (ctx->live) {
		r = ctx->live->volume_removing(ctx->live_arg, v.id);
		if (r == -EBUSY)
			return cmd_error(ctx, WHAT, "volume '%s' is busy (open)", v.name);
		if (r)
			return cmd_error(ctx, WHAT, "cannot stop serving volume '%s': %s",
					 v.name, strerror(-r));
	}
	r = delete_volume(ctx, &v);
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
