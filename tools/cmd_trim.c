/*
 * trim: discards every free block of a thin pool on its raw devices, as
 * thin_trim does (pool_thin_trim).
 */
#include "cmd.h"
#include "json.h"
#include "size.h"

#define WHAT "trim"

static int trim_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	char size[SIZE_STR_LEN];
	struct pool_error err;
	uint64_t bytes = 0;
	int as_json, r;
	struct json j;

	r = cmd_json_args(ctx, WHAT, argc, argv, &as_json, 1, 1, "the thin POOL");
	if (r)
		return r;
	if (pool_thin_trim(ctx->pool, argv[ctx->optind], &bytes, &err))
		return cmd_fail(ctx, WHAT, &err);
	if (as_json) {
		json_init(&j, ctx->out, JSON_PRETTY);
		json_object_begin(&j, NULL);
		json_string(&j, "pool", argv[ctx->optind]);
		json_u64(&j, "discarded_bytes", bytes);
		json_object_end(&j);
		return CMD_OK;
	}
	fprintf(ctx->out, "discarded %s (%llu bytes) of free blocks\n", format_size(bytes, size),
		(unsigned long long)bytes);
	return CMD_OK;
}

const struct cmd cmd_trim = {
	.name = "trim",
	.usage =
		"trim POOL [--json]\n"
		"\n"
		"Discards every free block of thin pool POOL on its raw devices (a hole\n"
		"punched in a file, BLKDISCARD on a block device), as thin_trim does,\n"
		"online.  Each chunk of blocks is kept from allocation while it is\n"
		"discarded.  Blocks discarded since they were last used (by a trim, or\n"
		"by discard passdown) are left out, and what this run discarded is\n"
		"printed: a second trim discards 0 B.  The daemon remembers this while\n"
		"it runs: the first trim after a start discards every free block.\n"
		"\n"
		"  --json  print {\"pool\", \"discarded_bytes\"}: this run's\n",
	.run = trim_run,
	.needs_pool = 1,
};
