/*
 * create thin: a thin volume in a thin pool (pool_create_thin).  Its
 * virtual size may exceed the pool; nothing is allocated until it is
 * written.  With --origin, its unwritten blocks read from a read-only
 * base image: another volume (by name) or an image file (by path; a file
 * of that name in the working directory wins over a volume).
 */
#include "cmd.h"
#include "opts.h"
#include "tag_opts.h"
#include "size.h"

#define WHAT "create thin"

static const struct option options[] = {
	{ "pool", required_argument, NULL, 'p' },
	{ "size", required_argument, NULL, 's' },
	{ "origin", required_argument, NULL, 'o' },
	{ "read-only", no_argument, NULL, 'R' },
	TAG_ADD_OPTION,
	{ 0 }
};

static const char *const path_options[] = { "--origin", NULL };

static int create_thin_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct tag_opts tags = TAG_OPTS_INIT;
	struct pool_thin_spec s = { 0 };
	const char *size_arg = NULL;
	char size[SIZE_STR_LEN];
	struct pool_error err;
	struct volume_rec v;
	int c, r;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		if (c == 'p' && (r = cmd_thin_pool_option(ctx, WHAT, optarg)))
			goto out;
		else if (c == 'p')
			s.pool = optarg;
		else if (c == 's')
			size_arg = optarg;
		else if (c == 'o')
			s.origin = optarg;
		else if (c == 'R')
			s.read_only = true;
		else if ((r = tag_opts_parse(ctx, WHAT, &tags, c, optarg)))
			goto out;
	}
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the volume NAME");
	if (!r && (!s.pool || !size_arg))
		r = cmd_usage_error(ctx, WHAT, "need --pool and --size (see 'mapperctl %s --help')",
				    WHAT);
	if (r)
		goto out;
	s.name = argv[ctx->optind];
	if (opts_block_size(size_arg, &s.size, &err) ||
	    pool_create_thin(ctx->pool, &s, &v, &err)) {
		r = cmd_fail(ctx, WHAT, &err);
		goto out;
	}
	fprintf(ctx->out, "created thin volume '%s' of %s in pool '%s'\n", v.name,
		format_size(v.size, size), s.pool);
	r = tag_opts_tag_new(&tags, ctx, WHAT, TAG_ON_VOLUME, v.name);
out:
	tag_opts_release(&tags);
	return r;
}

const struct cmd cmd_create_thin = {
	.name = "create thin",
	.usage =
		"create thin NAME --pool POOL --size SIZE [--origin VOLUME-OR-PATH] [--read-only]\n"
		"            [--addtag TAG]...\n"
		"\n"
		"Creates a thin volume of SIZE bytes (may exceed the pool) in thin pool\n"
		"POOL.  Unwritten blocks read as zeros and take no space.\n"
		"\n"
		"  --origin X  unwritten blocks read from X instead (read-only): an image\n"
		"              file or block device by path, else a volume by name; past\n"
		"              its end they read as zeros.  An image must not be open\n"
		"              for writing, a block device must be read-only (blockdev\n"
		"              --setro); a program that writes it later fails the volume\n"
		"              rather than show through\n"
		"  --read-only writes fail with EROFS (see 'mapperctl set')\n"
		"  --addtag TAG  tags it (see 'mapperctl set'); repeatable\n",
	.run = create_thin_run,
	.options = options,
	.needs_pool = 1,
	.path_or_name_options = path_options,
};
