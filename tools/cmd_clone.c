/*
 * clone: a server-side copy of one volume into another (pool_clone):
 * inside a thin pool the blocks are shared, not copied.
 */
#include "cmd.h"
#include "size.h"

#define WHAT "clone"

static int clone_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	char shared_s[SIZE_STR_LEN];
	struct pool_error err;
	uint64_t shared;
	int r;

	if (cmd_next_option(ctx, WHAT, argc, argv, NULL, 1) != -1)
		return CMD_USAGE;
	r = cmd_args(ctx, WHAT, argc, argv, 2, 2, "the SOURCE and DESTINATION volumes");
	if (r)
		return r;
	if (pool_clone(ctx->pool, argv[ctx->optind], argv[ctx->optind + 1], &shared, &err))
		return cmd_fail(ctx, WHAT, &err);
	fprintf(ctx->out, "cloned '%s' into '%s' (%s shared, not copied)\n", argv[ctx->optind],
		argv[ctx->optind + 1], format_size(shared, shared_s));
	return CMD_OK;
}

const struct cmd cmd_clone = {
	.name = "clone",
	.usage =
		"clone SOURCE DESTINATION\n"
		"\n"
		"Copies volume SOURCE into the first bytes of volume DESTINATION (at\n"
		"least as large; the rest of it stays), online, as copy_file_range\n"
		"between their files does ('cp --reflink=auto' calls it only for a\n"
		"source without holes).  Between thin volumes of one thin pool\n"
		"the blocks are shared, not copied: it takes no space and no time per\n"
		"byte, and the first write to either copies the block then.  Other\n"
		"volumes are copied byte by byte.\n",
	.run = clone_run,
	.needs_pool = 1,
};
