/*
 * activate, deactivate: whether a volume is a file in the mount, as LVM
 * activates logical volumes (pool_activate).
 */
#include "cmd.h"

static int run(struct cmd_ctx *ctx, const char *what, bool active, int argc, char **argv)
{
	struct pool_error err;
	int r;

	if (cmd_next_option(ctx, what, argc, argv, NULL, 1) != -1)
		return CMD_USAGE;
	r = cmd_args(ctx, what, argc, argv, 1, 1, "the volume NAME");
	if (r)
		return r;
	if (pool_activate(ctx->pool, argv[ctx->optind], active, &err))
		return cmd_fail(ctx, what, &err);
	fprintf(ctx->out, "volume '%s' is %s\n", argv[ctx->optind], active ? "active" : "inactive");
	return CMD_OK;
}

static int activate_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	return run(ctx, "activate", true, argc, argv);
}

static int deactivate_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	return run(ctx, "deactivate", false, argc, argv);
}

const struct cmd cmd_activate = {
	.name = "activate",
	.usage =
		"activate NAME\n"
		"\n"
		"Puts the volume NAME in the mount (lvchange -ay).  Snapshots start\n"
		"inactive.\n",
	.run = activate_run,
	.needs_pool = 1,
};

const struct cmd cmd_deactivate = {
	.name = "deactivate",
	.usage =
		"deactivate NAME\n"
		"\n"
		"Takes the volume NAME out of the mount (lvchange -an): it cannot be\n"
		"opened until activated again.  Refused while it is open.  Its data,\n"
		"and a thin volume's snapshots and blocks, stay.\n",
	.run = deactivate_run,
	.needs_pool = 1,
};
