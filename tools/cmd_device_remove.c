/*
 * device remove: unregisters a device no volume uses and wipes the pool's
 * label from it (pool_device_remove).
 */
#include "cmd.h"

#define WHAT "device remove"

static int device_remove_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_error err;
	int r;

	if (cmd_next_option(ctx, WHAT, argc, argv, NULL, 1) != -1)
		return CMD_USAGE;
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the device NAME");
	if (r)
		return r;
	if (pool_device_remove(ctx->pool, argv[ctx->optind], &err))
		return cmd_fail(ctx, WHAT, &err);
	fprintf(ctx->out, "removed device '%s'\n", argv[ctx->optind]);
	return CMD_OK;
}

const struct cmd cmd_device_remove = {
	.name = "device remove",
	.usage =
		"device remove NAME\n"
		"\n"
		"Unregisters the device NAME, which no volume may use, and wipes the\n"
		"pool's label from it.\n",
	.run = device_remove_run,
	.needs_pool = 1,
};
