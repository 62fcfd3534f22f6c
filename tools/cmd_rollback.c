/*
 * rollback: gives a thin volume the content of one of its snapshots (or
 * any thin volume of the same pool and size).  The volume then shares the
 * snapshot's map, as a new snapshot would; the blocks only it held go
 * back to the pool.  Refused while the volume is open.
 */
#include <errno.h>
#include <string.h>

#include "cmd.h"
#include "opts.h"
#include "thin_util.h"

#define WHAT "rollback"

static int rollback_offline(struct cmd_ctx *ctx, struct thin_rec *t,
			    const struct thin_rec *snap)
{
	int r;

	t->dir = snap->dir;
	r = store_thin_put(ctx->store, t);
	if (r)
		return opts_store_error(ctx, WHAT, "record the volume's map", r);
	return thin_util_gc(ctx, WHAT, t->pool);
}

static int rollback_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = { { 0 } };
	struct volume_rec v, s;
	struct thin_rec tv, ts;
	int r;

	if (opts_next(ctx, WHAT, argc, argv, longopts, 1) != -1)
		return CMD_USAGE;
	r = opts_args(ctx, WHAT, argc, argv, 2, 2, "the volume NAME and the SNAPSHOT");
	if (!r)
		r = thin_util_get(ctx, WHAT, argv[optind], "thin", &v, &tv);
	if (!r)
		r = thin_util_get(ctx, WHAT, argv[optind + 1], "thin", &s, &ts);
	if (r)
		return r;
	if (tv.pool != ts.pool)
		return cmd_error(ctx, WHAT, "'%s' and '%s' are in different thin pools",
				 v.name, s.name);
	if (v.size != s.size)
		return cmd_error(ctx, WHAT, "'%s' and '%s' differ in size", v.name, s.name);
	if (ctx->live) {
		r = ctx->live->thin_rollback(ctx->live_arg, v.id, s.id);
		if (r == -EBUSY)
			return cmd_error(ctx, WHAT, "volume '%s' is busy (open)", v.name);
		if (r)
			return cmd_error(ctx, WHAT, "cannot roll back '%s': %s", v.name,
					 strerror(-r));
	} else {
		r = rollback_offline(ctx, &tv, &ts);
		if (r)
			return r;
	}
	fprintf(ctx->out, "rolled back '%s' to '%s'\n", v.name, s.name);
	return 0;
}

const struct cmd cmd_rollback = {
	.name = "rollback",
	.usage =
		"rollback NAME SNAPSHOT\n"
		"\n"
		"Returns thin volume NAME to the content of thin volume SNAPSHOT (same\n"
		"pool and size).  NAME must not be open.\n",
	.run = rollback_run,
	.needs_store = 1,
};
