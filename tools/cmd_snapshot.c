/*
 * snapshot: a writable thin volume sharing every block of a thin volume,
 * in O(1), while the origin is in use (pool_snapshot).
 */
#include "cmd.h"

#define WHAT "snapshot"

static int snapshot_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_error err;
	struct volume_rec v;
	int r;

	if (cmd_next_option(ctx, WHAT, argc, argv, NULL, 1) != -1)
		return CMD_USAGE;
	r = cmd_args(ctx, WHAT, argc, argv, 2, 2, "the ORIGIN and the snapshot NAME");
	if (r)
		return r;
	if (pool_snapshot(ctx->pool, argv[optind], argv[optind + 1], &v, &err))
		return cmd_fail(ctx, WHAT, &err);
	fprintf(ctx->out, "created snapshot '%s' of '%s'\n", v.name, argv[optind]);
	return CMD_OK;
}

const struct cmd cmd_snapshot = {
	.name = "snapshot",
	.usage =
		"snapshot ORIGIN NAME\n"
		"\n"
		"Creates thin volume NAME with the content of thin volume ORIGIN, sharing\n"
		"its blocks until either is written.  Works while ORIGIN is in use.\n",
	.run = snapshot_run,
	.needs_pool = 1,
};
