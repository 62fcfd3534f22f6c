/*
 * remove: deletes a volume and frees what only it used; refused while it
 * is open, while it is a thin volume's origin, or for a thin pool that has
 * volumes (pool_remove).
 */
#include "cmd.h"

#define WHAT "remove"

static int remove_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_error err;
	int r;

	if (cmd_next_option(ctx, WHAT, argc, argv, NULL, 1) != -1)
		return CMD_USAGE;
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the volume NAME");
	if (r)
		return r;
	if (pool_remove(ctx->pool, argv[ctx->optind], &err))
		return cmd_fail(ctx, WHAT, &err);
	fprintf(ctx->out, "removed volume '%s'\n", argv[ctx->optind]);
	return CMD_OK;
}

const struct cmd cmd_remove = {
	.name = "remove",
	.usage =
		"remove NAME\n"
		"\n"
		"Deletes the volume NAME and frees its space.  Refused while the\n"
		"daemon has it open.\n",
	.run = remove_run,
	.needs_pool = 1,
};
