/*
 * create thin: a thin volume in a thin pool.  Its virtual size may exceed
 * the pool; nothing is allocated until it is written.
 */
#include <errno.h>
#include <string.h>

#include "cmd.h"
#include "opts.h"
#include "size.h"
#include "thin_util.h"

#define WHAT "create thin"

static int create_thin_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pool", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 's' },
		{ 0 }
	};
	const char *pool_name = NULL, *size_arg = NULL;
	struct volume_rec pool, v;
	char size[SIZE_STR_LEN];
	uint64_t bytes;
	int c, r;

	for (int first = 1; (c = opts_next(ctx, WHAT, argc, argv, longopts, first)) != -1;
	     first = 0) {
		if (c == 'p')
			pool_name = optarg;
		else if (c == 's')
			size_arg = optarg;
		else
			return CMD_USAGE;
	}
	r = opts_args(ctx, WHAT, argc, argv, 1, 1, "the volume NAME");
	if (r)
		return r;
	if (!pool_name || !size_arg)
		return cmd_usage_error(ctx, WHAT, "need --pool and --size (see 'mapperctl %s --help')",
				       WHAT);
	r = opts_name(ctx, WHAT, argv[optind]);
	if (!r)
		r = opts_block_size(ctx, WHAT, size_arg, &bytes);
	if (!r)
		r = thin_util_get(ctx, WHAT, pool_name, "thin-pool", &pool, NULL);
	if (!r)
		r = thin_util_create(ctx, WHAT, argv[optind], bytes, pool.id, NULL, &v);
	if (!r)
		fprintf(ctx->out, "created thin volume '%s' of %s in pool '%s'\n", v.name,
			format_size(v.size, size), pool.name);
	return r;
}

const struct cmd cmd_create_thin = {
	.name = "create thin",
	.usage =
		"create thin NAME --pool POOL --size SIZE\n"
		"\n"
		"Creates a thin volume of SIZE bytes (may exceed the pool) in thin pool\n"
		"POOL.  Unwritten blocks read as zeros and take no space.\n",
	.run = create_thin_run,
	.needs_store = 1,
};
