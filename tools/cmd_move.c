/*
 * move: empties a raw device while its volumes are used (pvmove):
 * pool_move.  The daemon copies in the background; status shows how far.
 */
#include "cmd.h"

#define WHAT "move"

static const struct option options[] = {
	{ "to", required_argument, NULL, 't' },
	{ "volume", required_argument, NULL, 'v' },
	{ "abort", no_argument, NULL, 'a' },
	{ 0 }
};

static int move_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_move_spec s = { 0 };
	struct pool_error err;
	unsigned int n;
	int c, r;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		if (c == 't')
			s.to = optarg;
		else if (c == 'v')
			s.volume = optarg;
		else if (c == 'a')
			s.abort = true;
		else
			return CMD_USAGE;
	}
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the DEVICE to move off");
	if (r)
		return r;
	if (s.abort && s.to)
		return cmd_usage_error(ctx, WHAT, "--abort and --to exclude each other");
	s.device = argv[ctx->optind];
	if (pool_move(ctx->pool, &s, &n, &err))
		return cmd_fail(ctx, WHAT, &err);
	if (s.abort)
		fprintf(ctx->out, "aborted the move of %u volume(s) off '%s': they stay there\n",
			n, s.device);
	else if (pool_watched(ctx->pool))
		fprintf(ctx->out, "moving %u volume(s) off '%s' in the background (progress: "
			"mapperctl status; the daemon finishes each move)\n", n, s.device);
	else
		fprintf(ctx->out, "recorded the move of %u volume(s) off '%s': no daemon serves the "
			"pool, the copy starts when one does\n", n, s.device);
	return CMD_OK;
}

const struct cmd cmd_move = {
	.name = "move",
	.usage =
		"move DEVICE [--to DEVICE] [--volume NAME] [--abort]\n"
		"\n"
		"Moves every volume off DEVICE (or only --volume NAME) while they are used,\n"
		"as pvmove does: a linear volume's extents there are copied to new ones\n"
		"(on --to, or on any other device) by the daemon, writes going to both\n"
		"until the copy is whole, then the volume uses the new ones alone; a\n"
		"striped volume's stripe there goes to one device (--to, or the first\n"
		"with room) that its other stripes do not use; a switch volume's path\n"
		"there goes whole to one free range (of --to, or of the first device with\n"
		"one), its region table fixed until the move is done; a thin pool's data\n"
		"goes as a linear volume's, in whole blocks; a mirror's leg there is\n"
		"rebuilt elsewhere.  A switch path placed by hand (DEVICE:OFFSET) does\n"
		"not move.\n"
		"A crash or restart resumes the copy.  Then 'mapperctl device remove\n"
		"DEVICE' can take the device out.\n"
		"Progress: 'mapperctl status NAME' (move.copy_percent), 'mapperctl list'\n"
		"(sync_percent).\n"
		"\n"
		"  --to DEVICE    put what moves on DEVICE only\n"
		"  --volume NAME  move only this volume\n"
		"  --abort        end the moves off DEVICE where they are: the volumes stay\n"
		"                 on DEVICE, what was copied is freed\n",
	.run = move_run,
	.options = options,
	.needs_pool = 1,
};
