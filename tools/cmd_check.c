/*
 * check: verifies every thin pool's committed metadata against itself and
 * against the counts the pool keeps in memory (pool_check): each volume's
 * map exists, every page it reaches exists, nothing maps past the pool's
 * or the volume's end, every block is mapped at one virtual block only,
 * and free and used blocks add up.
 */
#include "cmd.h"

#define WHAT "check"

struct check_out {
	struct cmd_ctx *ctx;
};

static void print_breach(void *arg, const char *msg)
{
	struct check_out *o = arg;

	fprintf(o->ctx->err, "mapperctl: check: %s\n", msg);
}

static void print_summary(void *arg, const char *msg)
{
	struct check_out *o = arg;

	fprintf(o->ctx->out, "%s\n", msg);
}

static int check_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct check_out o = { ctx };
	struct pool_error err;
	size_t breaches;
	int r;

	if (cmd_next_option(ctx, WHAT, argc, argv, NULL, 1) != -1)
		return CMD_USAGE;
	r = cmd_args(ctx, WHAT, argc, argv, 0, 1, "the thin POOL");
	if (r)
		return r;
	if (pool_check(ctx->pool, optind < argc ? argv[optind] : NULL, print_breach,
		       print_summary, &o, &breaches, &err))
		return cmd_fail(ctx, WHAT, &err);
	if (breaches)
		return cmd_error(ctx, WHAT, "%zu breaches found", breaches);
	return CMD_OK;
}

const struct cmd cmd_check = {
	.name = "check",
	.usage =
		"check [POOL]\n"
		"\n"
		"Verifies the metadata of every thin pool (or of POOL); prints each\n"
		"broken invariant and exits 1 if there is any.\n",
	.run = check_run,
	.needs_pool = 1,
};
