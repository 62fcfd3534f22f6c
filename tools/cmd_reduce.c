/*
 * reduce: shrinks a volume to a smaller size (pool_reduce), as lvreduce
 * does: the data past the new size is lost, so it runs only with --yes,
 * and never while the volume is open.
 */
#include "cmd.h"
#include "opts.h"
#include "size.h"

#define WHAT "reduce"

static const struct option options[] = {
	{ "size", required_argument, NULL, 's' },
	{ "yes", no_argument, NULL, 'y' },
	{ 0 }
};

static int reduce_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	char buf[SIZE_STR_LEN], asked[SIZE_STR_LEN];
	const char *size_arg = NULL;
	struct pool_error err;
	struct volume_rec v;
	bool yes = false;
	uint64_t size;
	int c, r;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		if (c == 's')
			size_arg = optarg;
		else if (c == 'y')
			yes = true;
		else
			return CMD_USAGE;
	}
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the volume NAME");
	if (!r && !size_arg)
		r = cmd_usage_error(ctx, WHAT, "missing --size (see 'mapperctl %s --help')", WHAT);
	if (r)
		return r;
	if (opts_block_size(size_arg, &size, &err))
		return cmd_fail(ctx, WHAT, &err);
	if (!yes)
		return cmd_error(ctx, WHAT, "shrinking '%s' to %s loses all its data past %s: add --yes to confirm",
				 argv[ctx->optind], format_size(size, buf), buf);
	if (pool_reduce(ctx->pool, argv[ctx->optind], size, &v, &err))
		return cmd_fail(ctx, WHAT, &err);
	if (v.size != size)
		fprintf(ctx->out, "reduced volume '%s' to %s (%s rounded up to whole stripe rows)\n",
			v.name, format_size(v.size, buf), format_size(size, asked));
	else
		fprintf(ctx->out, "reduced volume '%s' to %s\n", v.name, format_size(v.size, buf));
	return 0;
}

const struct cmd cmd_reduce = {
	.name = "reduce",
	.usage =
		"reduce NAME --size SIZE --yes\n"
		"\n"
		"Shrinks the volume NAME to SIZE bytes, as lvreduce does: everything\n"
		"past SIZE is lost.  Refused while a file on it is open.  A linear or\n"
		"striped volume frees its extents past SIZE (a striped one rounds SIZE\n"
		"up to whole stripe rows); a thin volume gives its blocks past SIZE back\n"
		"to its pool.  Switch volumes and thin pools cannot shrink.\n"
		"\n"
		"  --size SIZE   the new size, smaller than the current one and larger\n"
		"                than 0; a multiple of 4 KiB (K, M, G, T)\n"
		"  --yes         confirms that the data past SIZE may be lost\n",
	.run = reduce_run,
	.options = options,
	.needs_pool = 1,
};
