/*
 * snapshot: a writable thin volume sharing every block of a thin volume,
 * in O(1): one more reference on the origin's map.  Online, the daemon
 * first waits for the origin's writes in flight, so none lands in a block
 * after it became shared.
 */
#include <errno.h>

#include "cmd.h"
#include "opts.h"
#include "thin_util.h"

#define WHAT "snapshot"

static int snapshot_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = { { 0 } };
	struct volume_rec origin, v;
	struct thin_origin_rec ext;
	struct thin_rec t;
	int r;

	if (opts_next(ctx, WHAT, argc, argv, longopts, 1) != -1)
		return CMD_USAGE;
	r = opts_args(ctx, WHAT, argc, argv, 2, 2, "the ORIGIN and the snapshot NAME");
	if (!r)
		r = opts_name(ctx, WHAT, argv[optind + 1]);
	if (!r)
		r = thin_util_get(ctx, WHAT, argv[optind], "thin", &origin, &t);
	if (!r) {
		/* A snapshot reads through the same external origin. */
		r = store_thin_origin_get(ctx->store, origin.id, &ext);
		if (r && r != -ENOENT)
			return opts_store_error(ctx, WHAT, "read the origin's base image", r);
		r = thin_util_create(ctx, WHAT, argv[optind + 1], origin.size, t.pool, &t,
				     r ? NULL : &ext, &v);
	}
	if (!r)
		fprintf(ctx->out, "created snapshot '%s' of '%s'\n", v.name, origin.name);
	return r;
}

const struct cmd cmd_snapshot = {
	.name = "snapshot",
	.usage =
		"snapshot ORIGIN NAME\n"
		"\n"
		"Creates thin volume NAME with the content of thin volume ORIGIN, sharing\n"
		"its blocks until either is written.  Works while ORIGIN is in use.\n",
	.run = snapshot_run,
	.needs_store = 1,
};
