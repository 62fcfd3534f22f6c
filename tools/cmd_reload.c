/*
 * reload: tries again what failed to load, once the cause is gone (a raw
 * device back in place, an origin restored), without a restart
 * (pool_reload).
 */
#include "cmd.h"

#define WHAT "reload"

static int reload_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	size_t recovered, failed;
	struct pool_error err;
	int r;

	if (cmd_next_option(ctx, WHAT, argc, argv, NULL, 1) != -1)
		return CMD_USAGE;
	r = cmd_args(ctx, WHAT, argc, argv, 0, 0, "");
	if (r)
		return r;
	if (pool_reload(ctx->pool, &recovered, &failed, &err))
		return cmd_fail(ctx, WHAT, &err);
	fprintf(ctx->out, "%zu recovered, %zu still failed\n", recovered, failed);
	return failed ? cmd_error(ctx, WHAT, "%zu device%s or volume%s still failed (see 'mapperctl status')",
				  failed, failed == 1 ? "" : "s", failed == 1 ? "" : "s") : CMD_OK;
}

const struct cmd cmd_reload = {
	.name = "reload",
	.usage =
		"reload\n"
		"\n"
		"Tries again to open the raw devices and build the thin pools and\n"
		"volumes that failed (see 'mapperctl status'), as the daemon does when\n"
		"it starts, once the cause is gone.  What is served is not touched.\n"
		"Exits 1 if anything is still failed.\n",
	.run = reload_run,
	.needs_pool = 1,
};
