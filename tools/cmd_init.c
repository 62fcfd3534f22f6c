/*
 * init: a new pool is a directory (0700: it holds the control socket) with
 * an empty database in it.  Registering devices is a separate step.
 */
#include "cmd.h"

#define WHAT "init"

static int init_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	const char *dir = ctx->pool_dir;
	struct pool_error err;
	int r;

	if (cmd_next_option(ctx, WHAT, argc, argv, NULL, 1) != -1)
		return CMD_USAGE;
	r = cmd_args(ctx, WHAT, argc, argv, 0, 1, "");
	if (r)
		return r;
	if (ctx->optind < argc)
		dir = argv[ctx->optind];
	if (pool_create(dir, ctx->open_meta, &err))
		return cmd_fail(ctx, WHAT, &err);
	fprintf(ctx->out, "created pool '%s'\n", dir);
	return CMD_OK;
}

const struct cmd cmd_init = {
	.name = "init",
	.usage =
		"init [DIR]\n"
		"\n"
		"Creates a pool: the directory DIR (default: the --pool directory),\n"
		"mode 0700, and its database DIR/pool.db.  Add devices with\n"
		"'mapperctl device add'.\n",
	.run = init_run,
	.path_positional = 1,
};
