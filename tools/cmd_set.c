/*
 * set: a volume's access (pool_set_read_only), its consent to shrink by
 * a truncate of its file (pool_set_allow_shrink), and a volume's or thin
 * pool's tags (pool_tag), online: lvchange -p, --addtag, --deltag.
 */
#include <string.h>

#include "cmd.h"
#include "tag_opts.h"

#define WHAT "set"

static const struct option options[] = {
	{ "read-only", no_argument, NULL, 'r' },
	{ "read-write", no_argument, NULL, 'w' },
	{ "allow-shrink", required_argument, NULL, 'S' },
	TAG_OPTIONS,
	{ 0 }
};

/* What set was asked to change; -1: unchanged. */
struct set_args {
	int ro;				/* --read-only 1, --read-write 0 */
	int shrink;			/* --allow-shrink on 1, off 0 */
};

/* Says what set did: "volume 'v' is read-only", "'v' tags: -old +new". */
static void say_done(struct cmd_ctx *ctx, const char *name, const struct set_args *a,
		     const struct tag_opts *t)
{
	if (a->ro != -1)
		fprintf(ctx->out, "volume '%s' is %s\n", name, a->ro ? "read-only" : "writable");
	if (a->shrink != -1)
		fprintf(ctx->out, "a truncate of volume '%s' %s\n", name,
			a->shrink ? "may shrink it" : "only grows it");
	if (!tag_opts_any(t))
		return;
	fprintf(ctx->out, "'%s' tags:", name);
	tag_opts_print(t, ctx->out);
	fprintf(ctx->out, "\n");
}

/* One of set's own options into @a: 0 or a CMD_ code. */
static int parse_own(struct cmd_ctx *ctx, int c, const char *arg, struct set_args *a)
{
	if (c == 'S') {
		if (strcmp(arg, "on") && strcmp(arg, "off"))
			return cmd_error(ctx, WHAT, "--allow-shrink takes on or off, not '%s'", arg);
		a->shrink = !strcmp(arg, "on");
		return 0;
	}
	if (a->ro != -1 && a->ro != (c == 'r'))
		return cmd_usage_error(ctx, WHAT, "--read-only and --read-write exclude each other");
	a->ro = c == 'r';
	return 0;
}

/* Applies @a and @tags to volume @name: 0, or fills @err. */
static int apply(struct cmd_ctx *ctx, const char *name, const struct set_args *a,
		 const struct tag_opts *tags, struct pool_error *err)
{
	if (a->ro != -1 && pool_set_read_only(ctx->pool, name, a->ro, err))
		return -1;
	if (a->shrink != -1 && pool_set_allow_shrink(ctx->pool, name, a->shrink, err))
		return -1;
	return tag_opts_apply(tags, ctx->pool, TAG_ON_VOLUME, name, err);
}

static int set_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct set_args a = { .ro = -1, .shrink = -1 };
	struct tag_opts tags = TAG_OPTS_INIT;
	struct pool_error err;
	const char *name;
	int c, r = 0;

	for (int first = 1; !r && (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		if (c == 'r' || c == 'w' || c == 'S')
			r = parse_own(ctx, c, optarg, &a);
		else
			r = tag_opts_parse(ctx, WHAT, &tags, c, optarg);
	}
	if (!r)
		r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the volume NAME");
	if (!r && a.ro == -1 && a.shrink == -1 && !tag_opts_any(&tags))
		r = cmd_usage_error(ctx, WHAT,
				    "nothing to set: --read-only, --read-write, --allow-shrink, --addtag or --deltag");
	if (r)
		goto out;
	name = argv[ctx->optind];
	if (apply(ctx, name, &a, &tags, &err)) {
		r = cmd_fail(ctx, WHAT, &err);
		goto out;
	}
	say_done(ctx, name, &a, &tags);
	r = CMD_OK;
out:
	tag_opts_release(&tags);
	return r;
}

const struct cmd cmd_set = {
	.name = "set",
	.usage =
		"set NAME [--read-only | --read-write] [--allow-shrink on|off]\n"
		"         [--addtag TAG]... [--deltag TAG]...\n"
		"\n"
		"Makes the volume NAME read-only or writable, online (lvchange -p).\n"
		"Writes in flight finish; later writes and discards fail with EROFS,\n"
		"and so does opening its file for writing.\n"
		"\n"
		"  --allow-shrink on|off  on: a truncate of NAME's file to a smaller\n"
		"                size shrinks the volume, as 'reduce' does, though the\n"
		"                truncating program has it open (qemu-img resize\n"
		"                --shrink); the data past the new size is lost.  Off\n"
		"                (the default): the file only grows, a smaller size is\n"
		"                refused with EPERM.  Never while another file has it\n"
		"                open, nor for a mirror or a volume being moved\n"
		"  --addtag TAG  tags the volume or thin pool NAME (lvchange --addtag):\n"
		"                letters, digits and _ + . -, at most 128; list -o tags\n"
		"                shows them, list --select @TAG picks them\n"
		"  --deltag TAG  takes tag TAG away; removals come first\n",
	.run = set_run,
	.options = options,
	.needs_pool = 1,
};
