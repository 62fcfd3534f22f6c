/* rename: a volume's new name, online (pool_rename). */
#include "cmd.h"

#define WHAT "rename"

static int rename_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_error err;
	int r;

	if (cmd_next_option(ctx, WHAT, argc, argv, NULL, 1) != -1)
		return CMD_USAGE;
	r = cmd_args(ctx, WHAT, argc, argv, 2, 2, "the volume NAME and its NEW-NAME");
	if (r)
		return r;
	if (pool_rename(ctx->pool, argv[ctx->optind], argv[ctx->optind + 1], &err))
		return cmd_fail(ctx, WHAT, &err);
	fprintf(ctx->out, "renamed volume '%s' to '%s'\n", argv[ctx->optind], argv[ctx->optind + 1]);
	return CMD_OK;
}

const struct cmd cmd_rename = {
	.name = "rename",
	.usage =
		"rename NAME NEW-NAME\n"
		"\n"
		"Renames the volume (or thin pool) NAME, online: its file in the mount\n"
		"takes the new name at once, and files open on it keep working.\n",
	.run = rename_run,
	.needs_pool = 1,
};
