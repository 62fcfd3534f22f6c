/* device set: a raw device's tags, online (pvchange --addtag, --deltag). */
#include "cmd.h"
#include "tag_opts.h"

#define WHAT "device set"

static const struct option options[] = {
	TAG_OPTIONS,
	{ 0 }
};

static int device_set_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct tag_opts tags = TAG_OPTS_INIT;
	struct pool_error err;
	const char *name;
	int c, r;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		r = tag_opts_parse(ctx, WHAT, &tags, c, optarg);
		if (r)
			goto out;
	}
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the device NAME");
	if (!r && !tag_opts_any(&tags))
		r = cmd_usage_error(ctx, WHAT, "nothing to set: --addtag or --deltag");
	if (r)
		goto out;
	name = argv[ctx->optind];
	r = tag_opts_apply(&tags, ctx->pool, TAG_ON_DEVICE, name, &err);
	if (r) {
		r = cmd_fail(ctx, WHAT, &err);
		goto out;
	}
	fprintf(ctx->out, "device '%s' tags:", name);
	tag_opts_print(&tags, ctx->out);
	fprintf(ctx->out, "\n");
out:
	tag_opts_release(&tags);
	return r;
}

const struct cmd cmd_device_set = {
	.name = "device set",
	.usage =
		"device set NAME [--addtag TAG]... [--deltag TAG]...\n"
		"\n"
		"Tags the raw device NAME, online (pvchange --addtag, --deltag).\n"
		"\n"
		"  --addtag TAG  adds tag TAG: letters, digits and _ + . -, at most\n"
		"                128; device list -o tags shows them, --select @TAG\n"
		"                picks them\n"
		"  --deltag TAG  takes tag TAG away; removals come first\n",
	.run = device_set_run,
	.options = options,
	.needs_pool = 1,
};
