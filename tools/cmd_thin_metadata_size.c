/*
 * thin-metadata-size: what the maps of a thin pool need in the pool
 * database at most, as thin_metadata_size estimates dm-thin's metadata
 * device (pool_thin_metadata_size).  Needs no pool.
 */
#include <string.h>

#include "cmd.h"
#include "json.h"
#include "opts.h"
#include "size.h"

#define WHAT "thin-metadata-size"

static const struct option options[] = {
	{ "block-size", required_argument, NULL, 'b' },
	{ "pool-size", required_argument, NULL, 's' },
	{ "max-thins", required_argument, NULL, 'm' },
	{ "numeric-only", no_argument, NULL, 'n' },
	{ "json", no_argument, NULL, 'j' },
	{ 0 }
};

static int metadata_size_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	const char *bs = NULL, *size = NULL, *thins = NULL;
	uint64_t block_size, pool_size, bytes;
	char human[SIZE_STR_LEN];
	struct pool_error err;
	uint32_t max_thins;
	int c, r, numeric = 0, as_json = 0;
	struct json j;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		switch (c) {
		case 'b': bs = optarg; break;
		case 's': size = optarg; break;
		case 'm': thins = optarg; break;
		case 'n': numeric = 1; break;
		case 'j': as_json = 1; break;
		default: return CMD_USAGE;
		}
	}
	r = cmd_args(ctx, WHAT, argc, argv, 0, 0, "");
	if (r)
		return r;
	if (!bs || !size || !thins)
		return cmd_usage_error(ctx, WHAT, "needs --block-size, --pool-size and --max-thins");
	if (numeric && as_json)
		return cmd_usage_error(ctx, WHAT, "--numeric-only and --json exclude each other");
	r = opts_size(bs, &block_size, &err);
	if (!r)
		r = opts_size(size, &pool_size, &err);
	if (!r)
		r = opts_number(thins, "--max-thins", 1, POOL_MAX_THINS_MAX, &max_thins, &err);
	if (!r)
		r = pool_thin_metadata_size(block_size, pool_size, max_thins, &bytes, &err);
	if (r)
		return cmd_fail(ctx, WHAT, &err);
	if (as_json) {
		json_init(&j, ctx->out, JSON_PRETTY);
		json_object_begin(&j, NULL);
		json_u64(&j, "block_size", block_size);
		json_u64(&j, "pool_size", pool_size);
		json_u64(&j, "max_thins", max_thins);
		json_u64(&j, "metadata_bytes", bytes);
		json_object_end(&j);
	} else if (numeric)
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
		"                   [--numeric-only | --json]\n"
		"\n"
		"Estimates what the maps of a thin pool take in the pool database at\n"
		"most (thin_metadata_size's job): every block mapped, leaves half full,\n"
		"a directory and a partial leaf per volume, a checkpoint of log.  A\n"
		"pool's default --metadata-limit is this estimate for 1000 volumes.\n"
		"\n"
		"  --numeric-only  print the number of bytes only\n"
		"  --json          print {\"block_size\", \"pool_size\", \"max_thins\",\n"
		"                  \"metadata_bytes\"}, sizes in bytes\n",
	.run = metadata_size_run,
	.options = options,
	.needs_pool = 0,
};
