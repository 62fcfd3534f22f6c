/* set: a volume's access, online (pool_set_read_only). */
#include "cmd.h"

#define WHAT "set"

static const struct option options[] = {
	{ "read-only", no_argument, NULL, 'r' },
	{ "read-write", no_argument, NULL, 'w' },
	{ 0 }
};

static int set_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_error err;
	int c, r, ro = -1;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		if (c != 'r' && c != 'w')
			return CMD_USAGE;
		if (ro != -1 && ro != (c == 'r'))
			return cmd_usage_error(ctx, WHAT, "--read-only and --read-write exclude each other");
		ro = c == 'r';
	}
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the volume NAME");
	if (r)
		return r;
	if (ro == -1)
		return cmd_usage_error(ctx, WHAT, "nothing to set: --read-only or --read-write");
	if (pool_set_read_only(ctx->pool, argv[ctx->optind], ro, &err))
		return cmd_fail(ctx, WHAT, &err);
	fprintf(ctx->out, "volume '%s' is %s\n", argv[ctx->optind], ro ? "read-only" : "writable");
	return CMD_OK;
}

const struct cmd cmd_set = {
	.name = "set",
	.usage =
		"set NAME --read-only | --read-write\n"
		"\n"
		"Makes the volume NAME read-only or writable, online (lvchange -p).\n"
		"Writes in flight finish; later writes and discards fail with EROFS,\n"
		"and so does opening its file for writing.\n",
	.run = set_run,
	.options = options,
	.needs_pool = 1,
};
