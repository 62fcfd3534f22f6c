/*
 * check: verifies every invariant of the pool, or of one volume
 * (pool_check): the database's pages; extents on registered devices,
 * inside their data areas, overlapping nothing; each kind's records; and
 * each thin pool's committed map pages against themselves and against
 * the counts the pool keeps in memory.  Each breach is a line on stdout,
 * as fsck reports; the verdict is the exit status and, on failure, one
 * line on stderr.
 */
#include "cmd.h"

#define WHAT "check"

struct check_out {
	struct cmd_ctx *ctx;
};

static void print_breach(void *arg, const char *msg)
{
	struct check_out *o = arg;

	fprintf(o->ctx->out, "%s\n", msg);
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
	r = cmd_args(ctx, WHAT, argc, argv, 0, 1, "");
	if (r)
		return r;
	if (pool_check(ctx->pool, optind < argc ? argv[optind] : NULL, print_breach,
		       print_summary, &o, &breaches, &err))
		return cmd_fail(ctx, WHAT, &err);
	if (breaches)
		return cmd_error(ctx, WHAT, "%zu breach%s found", breaches,
				 breaches == 1 ? "" : "es");
	return CMD_OK;
}

const struct cmd cmd_check = {
	.name = "check",
	.usage =
		"check [NAME]\n"
		"\n"
		"Verifies every invariant of the pool, or of the volume or thin pool\n"
		"NAME: the database's pages; extents on registered devices, inside\n"
		"their data areas, overlapping no other; each volume's records; and\n"
		"each thin pool's committed maps against themselves and against its\n"
		"counts in memory.  Prints each breach, one line each, and exits 1 if\n"
		"there is any.\n",
	.run = check_run,
	.needs_pool = 1,
};
