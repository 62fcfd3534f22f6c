/*
 * repair: rebuilds a thin pool's maps from the pages that can be read,
 * drops what cannot, and says per volume which byte ranges were lost
 * (pool_thin_repair).  A failed pool is served again after.
 */
#include "cmd.h"

#define WHAT "repair"

static void print_line(void *arg, const char *line)
{
	fprintf(((struct cmd_ctx *)arg)->out, "%s\n", line);
}

static int repair_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_error err;
	int r;

	if (cmd_next_option(ctx, WHAT, argc, argv, NULL, 1) != -1)
		return CMD_USAGE;
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the thin POOL");
	if (r)
		return r;
	if (pool_thin_repair(ctx->pool, argv[ctx->optind], print_line, ctx, &err))
		return cmd_fail(ctx, WHAT, &err);
	return CMD_OK;
}

const struct cmd cmd_repair = {
	.name = "repair",
	.usage =
		"repair POOL\n"
		"\n"
		"Rebuilds the maps of thin pool POOL from every page that can be read\n"
		"and drops the rest: a damaged leaf loses the blocks it mapped, a damaged\n"
		"directory its volume's whole map, a mapping past the pool's end or a\n"
		"second one of a data block that mapping.  Prints each lost range as\n"
		"\"volume 'NAME': lost bytes START..END (...)\", then a summary.  The\n"
		"pool's volumes must be closed; a failed pool is served again after, and\n"
		"'mapperctl check' passes.\n",
	.run = repair_run,
	.needs_pool = 1,
};
