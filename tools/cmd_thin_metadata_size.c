/*
 * thin-metadata-size: what the maps of a thin pool need in the pool
 * database at most, as thin_metadata_size estimates dm-thin's metadata
 * device (pool_thin_metadata_size).  Needs no pool.
 */
#include <string.h>

#include "cmd.h"
#include "opts.h"
#include "size.h"

#define WHAT "thin-metadata-size"

static const struct option options[] = {
	{ "block-size", required_argument, NULL, 'b' },
	{ "pool-size", required_argument, NULL, 's' },
	{ "max-thins", required_argument, NULL, 'm' },
	{ "numeric-only", no_argument, NULL, 'n' },
	{ 0 }
};

static int metadata_size_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	const char *bs = NULL, *size = NULL, *thins = NULL;
	uint64_t block_size, pool_size, bytes;
	char human[SIZE_STR_LEN];
	struct pool_error err;
	uint32_t max_thins;
	int c, r, numeric = 0;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		switch (c) {
		case 'b': bs = optarg; break;
		case 's': size = optarg; break;
		case 'm': thins = optarg; break;
		case 'n': numeric = 1; break;
		default: return CMD_USAGE;
		}
	}
	r = cmd_args(ctx, WHAT, argc, argv, 0, 0, "");
	if (r)
		return r;
	if (!bs || !size || !thins)
		return cmd_usage_error(ctx, WHAT, "needs --block-size, --pool-size and --max-thins");
	r = opts_size(bs, &block_size, &err);
	if (!r)
		r = opts_size(size, &pool_size, &err);
	if (!r)
		r = opts_number(thins, "--max-thins", 1, POOL_MAX_THINS_MAX, &max_thins, &err);
	if (!r)
		r = pool_thin_metadata_size(block_size, pool_size, max_thins, &bytes, &err);
	if (r)
		return cmd_fail(ctx, WHAT, &err);
	if (numeric)
		fprintf(ctx->out, "%llu\n", (unsigned long long)bytes);
	else
		fprintf(ctx->out, "%s (%llu bytes) of pool database for the maps\n",
			format_size(bytes, human), (unsigned long long)bytes);
	return CMD_OK;
}

const struct cmd cmd_thin_metadata_size = {
	.name = "thin-metadata-size",
	.usage =
		"thin-metadata-size --block-size SIZE --pool-size SIZE --max-thins N\n"
		"                   [--numeric-only]\n"
		"\n"
		"Estimates what the maps of a thin pool take in the pool database at\n"
		"most (thin_metadata_size's job): every block mapped, leaves half full,\n"
		"a directory and a partial leaf per volume, a checkpoint of log.  A\n"
		"pool's default --metadata-limit is this estimate for 1000 volumes.\n"
		"\n"
		"  --numeric-only  print the number of bytes only\n",
	.run = metadata_size_run,
	.options = options,
	.needs_pool = 0,
};
