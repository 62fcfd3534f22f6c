/*
 * trim: discards every free block of a thin pool on its raw devices, as
 * thin_trim does (pool_thin_trim).
 */
#include "cmd.h"
#include "size.h"

#define WHAT "trim"

static int trim_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	char size[SIZE_STR_LEN];
	struct pool_error err;
	uint64_t bytes = 0;
	int r;

	if (cmd_next_option(ctx, WHAT, argc, argv, NULL, 1) != -1)
		return CMD_USAGE;
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the thin POOL");
	if (r)
		return r;
	if (pool_thin_trim(ctx->pool, argv[ctx->optind], &bytes, &err))
		return cmd_fail(ctx, WHAT, &err);
	fprintf(ctx->out, "discarded %s (%llu bytes) of free blocks\n", format_size(bytes, size),
		(unsigned long long)bytes);
	return CMD_OK;
}

const struct cmd cmd_trim = {
	.name = "trim",
	.usage =
		"trim POOL\n"
		"\n"
		"Discards every free block of thin pool POOL on its raw devices (a hole\n"
		"punched in a file, BLKDISCARD on a block device), as thin_trim does,\n"
		"online.  Each chunk of blocks is kept from allocation while it is\n"
		"discarded.\n",
	.run = trim_run,
	.needs_pool = 1,
};
