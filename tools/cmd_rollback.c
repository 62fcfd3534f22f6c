/*
 * rollback: gives a thin volume the content of one of its snapshots (or
 * any thin volume of the same pool and size); refused while the volume is
 * open (pool_rollback).
 */
#include "cmd.h"

#define WHAT "rollback"

static int rollback_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_error err;
	int r;

	if (cmd_next_option(ctx, WHAT, argc, argv, NULL, 1) != -1)
		return CMD_USAGE;
	r = cmd_args(ctx, WHAT, argc, argv, 2, 2, "the volume NAME and the SNAPSHOT");
	if (r)
		return r;
	if (pool_rollback(ctx->pool, argv[ctx->optind], argv[ctx->optind + 1], &err))
		return cmd_fail(ctx, WHAT, &err);
	fprintf(ctx->out, "rolled back '%s' to '%s'\n", argv[ctx->optind], argv[ctx->optind + 1]);
	return CMD_OK;
}

const struct cmd cmd_rollback = {
	.name = "rollback",
	.usage =
		"rollback NAME SNAPSHOT\n"
		"\n"
		"Returns thin volume NAME to the content of thin volume SNAPSHOT (same\n"
		"pool and size).  NAME must not be open.\n",
	.run = rollback_run,
	.needs_pool = 1,
};
