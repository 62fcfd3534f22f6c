/*
 * refresh: takes back a mirror's failed legs whose devices answer again
 * (lvchange --refresh): pool_refresh.
 */
#include "cmd.h"

#define WHAT "refresh"

static int refresh_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_error err;
	unsigned int n;
	int r;

	if (cmd_next_option(ctx, WHAT, argc, argv, NULL, 1) != -1)
		return CMD_USAGE;
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the mirrored volume NAME");
	if (r)
		return r;
	if (pool_refresh(ctx->pool, argv[ctx->optind], &n, &err))
		return cmd_fail(ctx, WHAT, &err);
	if (n && pool_watched(ctx->pool))
		fprintf(ctx->out, "volume '%s': %u leg(s) taken back, catching up in the background "
			"(progress: mapperctl status %s)\n", argv[ctx->optind], n, argv[ctx->optind]);
	else if (n)
		fprintf(ctx->out, "volume '%s': %u leg(s) taken back: no daemon serves the pool, "
			"they catch up when one does\n", argv[ctx->optind], n);
	else
		fprintf(ctx->out, "volume '%s': no leg is failed\n", argv[ctx->optind]);
	return CMD_OK;
}

const struct cmd cmd_refresh = {
	.name = "refresh",
	.usage =
		"refresh NAME\n"
		"\n"
		"Takes back the failed legs of mirrored volume NAME whose devices answer\n"
		"again (lvchange --refresh): each catches up in the background, copying only\n"
		"the regions written while it was failed (the write-intent log kept them),\n"
		"and serves reads once it is in sync.  A leg whose device is gone needs\n"
		"'mapperctl replace'.\n",
	.run = refresh_run,
	.needs_pool = 1,
};
