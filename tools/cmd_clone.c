/*
 * clone: a server-side copy of one volume into another (pool_clone):
 * inside a thin pool the blocks are shared, not copied.  It says how much
 * was shared, copied and left a hole (holes, and zeros into a thin
 * volume): they add up to SOURCE's size.
 */
#include "cmd.h"
#include "size.h"

#define WHAT "clone"

static int clone_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	char shared_s[SIZE_STR_LEN], copied_s[SIZE_STR_LEN], holes_s[SIZE_STR_LEN];
	char zeros_s[SIZE_STR_LEN];
	struct pool_copied how;
	struct pool_error err;
	int r;

	if (cmd_next_option(ctx, WHAT, argc, argv, NULL, 1) != -1)
		return CMD_USAGE;
	r = cmd_args(ctx, WHAT, argc, argv, 2, 2, "the SOURCE and DESTINATION volumes");
	if (r)
		return r;
	if (pool_clone(ctx->pool, argv[ctx->optind], argv[ctx->optind + 1], &how, &err))
		return cmd_fail(ctx, WHAT, &err);
	fprintf(ctx->out, "cloned '%s' into '%s': %s shared (mapped blocks, not copied), "
		"%s copied, %s of holes and %s of zeros left holes\n", argv[ctx->optind],
		argv[ctx->optind + 1], format_size(how.shared, shared_s),
		format_size(how.copied, copied_s), format_size(how.holes, holes_s),
		format_size(how.zeros, zeros_s));
	return CMD_OK;
}

const struct cmd cmd_clone = {
	.name = "clone",
	.usage =
		"clone SOURCE DESTINATION\n"
		"\n"
		"Copies volume SOURCE into the first bytes of volume DESTINATION (an\n"
		"existing volume at least as large; the rest of it stays), online,\n"
		"as copy_file_range between their files does ('cp --reflink=auto'\n"
		"calls it only for a source without holes).  Between thin volumes of\n"
		"one thin pool the blocks are shared, not copied: it takes no space\n"
		"and no time per byte, and the first write to either copies the block\n"
		"then.  Other volumes are copied byte by byte, except SOURCE's holes,\n"
		"which stay holes, and, into a thin volume, the whole blocks that read\n"
		"zeros, which are left holes too.  It prints the bytes shared, copied,\n"
		"and left holes (the source's holes, its zeros): they add up to\n"
		"SOURCE's size.\n"
		"DESTINATION must not be open (it is refused as busy), and cannot be\n"
		"opened until the copy is done.\n",
	.run = clone_run,
	.needs_pool = 1,
};
