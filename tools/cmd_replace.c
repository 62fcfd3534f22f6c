/*
 * replace: rebuilds a mirror's leg on another device, online (lvconvert
 * --replace, --repair): pool_replace_leg.
 */
#include "cmd.h"

#define WHAT "replace"

static const struct option options[] = {
	{ "leg", required_argument, NULL, 'l' },
	{ "to", required_argument, NULL, 't' },
	{ 0 }
};

static int replace_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	const char *leg = NULL, *to = NULL;
	struct pool_error err;
	int c, r;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		if (c == 'l')
			leg = optarg;
		else if (c == 't')
			to = optarg;
		else
			return CMD_USAGE;
	}
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the mirrored volume NAME");
	if (r)
		return r;
	if (!leg || !to)
		return cmd_usage_error(ctx, WHAT, "need --leg DEVICE and --to DEVICE");
	if (pool_replace_leg(ctx->pool, argv[ctx->optind], leg, to, &err))
		return cmd_fail(ctx, WHAT, &err);
	if (pool_watched(ctx->pool))
		fprintf(ctx->out, "volume '%s': its leg on '%s' is rebuilt on '%s' in the background "
			"(progress: mapperctl status %s)\n", argv[ctx->optind], leg, to,
			argv[ctx->optind]);
	else
		fprintf(ctx->out, "volume '%s': its leg on '%s' is recorded on '%s': no daemon serves "
			"the pool, the rebuild starts when one does\n", argv[ctx->optind], leg, to);
	return CMD_OK;
}

const struct cmd cmd_replace = {
	.name = "replace",
	.usage =
		"replace NAME --leg DEVICE --to DEVICE\n"
		"\n"
		"Replaces the leg of mirrored volume NAME that lies on --leg (failed or\n"
		"not) with a new one carved on --to, online: the new leg is rebuilt from\n"
		"the legs in sync, in the background, and serves reads once it is whole.\n"
		"The leg on the last device in sync cannot be replaced.\n",
	.run = replace_run,
	.options = options,
	.needs_pool = 1,
};
