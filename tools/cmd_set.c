/*
 * set: a volume's access (pool_set_read_only) and a volume's or thin
 * pool's tags (pool_tag), online: lvchange -p, --addtag, --deltag.
 */
#include "cmd.h"
#include "tag_opts.h"

#define WHAT "set"

static const struct option options[] = {
	{ "read-only", no_argument, NULL, 'r' },
	{ "read-write", no_argument, NULL, 'w' },
	TAG_OPTIONS,
	{ 0 }
};

/* Says what set did: "volume 'v' is read-only", "'v' tags: -old +new". */
static void say_done(struct cmd_ctx *ctx, const char *name, int ro, const struct tag_opts *t)
{
	if (ro != -1)
		fprintf(ctx->out, "volume '%s' is %s\n", name, ro ? "read-only" : "writable");
	if (!tag_opts_any(t))
		return;
	fprintf(ctx->out, "'%s' tags:", name);
	tag_opts_print(t, ctx->out);
	fprintf(ctx->out, "\n");
}

static int set_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct tag_opts tags = TAG_OPTS_INIT;
	struct pool_error err;
	const char *name;
	int c, r, ro = -1;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		if (c != 'r' && c != 'w') {
			r = tag_opts_parse(ctx, WHAT, &tags, c, optarg);
			if (r)
				goto out;
			continue;
		}
		if (ro != -1 && ro != (c == 'r')) {
			r = cmd_usage_error(ctx, WHAT, "--read-only and --read-write exclude each other");
			goto out;
		}
		ro = c == 'r';
	}
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the volume NAME");
	if (!r && ro == -1 && !tag_opts_any(&tags))
		r = cmd_usage_error(ctx, WHAT,
				    "nothing to set: --read-only, --read-write, --addtag or --deltag");
	if (r)
		goto out;
	name = argv[ctx->optind];
	if ((ro != -1 && pool_set_read_only(ctx->pool, name, ro, &err)) ||
	    tag_opts_apply(&tags, ctx->pool, TAG_ON_VOLUME, name, &err)) {
		r = cmd_fail(ctx, WHAT, &err);
		goto out;
	}
	say_done(ctx, name, ro, &tags);
	r = CMD_OK;
out:
	tag_opts_release(&tags);
	return r;
}

const struct cmd cmd_set = {
	.name = "set",
	.usage =
		"set NAME [--read-only | --read-write] [--addtag TAG]... [--deltag TAG]...\n"
		"\n"
		"Makes the volume NAME read-only or writable, online (lvchange -p).\n"
		"Writes in flight finish; later writes and discards fail with EROFS,\n"
		"and so does opening its file for writing.\n"
		"\n"
		"  --addtag TAG  tags the volume or thin pool NAME (lvchange --addtag):\n"
		"                letters, digits and _ + . -, at most 128; list -o tags\n"
		"                shows them, list --select @TAG picks them\n"
		"  --deltag TAG  takes tag TAG away; removals come first\n",
	.run = set_run,
	.options = options,
	.needs_pool = 1,
};
