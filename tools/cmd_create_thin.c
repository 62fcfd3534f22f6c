/*
 * create thin: a thin volume in a thin pool.  Its virtual size may exceed
 * the pool; nothing is allocated until it is written.  With --origin, its
 * unwritten blocks read from a read-only base image: another volume of the
 * pool (by name) or an image file (by path).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd.h"
#include "opts.h"
#include "size.h"
#include "thin_util.h"

#define WHAT "create thin"

/* A volume name first (volume names have no '/'), else a file path. */
static int parse_origin(struct cmd_ctx *ctx, const char *arg, struct thin_origin_rec *o)
{
	struct volume_rec v;
	struct stat st;
	int r;

	memset(o, 0, sizeof(*o));
	r = store_volume_get(ctx->store, arg, &v);
	if (!r) {
		if (!strcmp(v.kind, "thin-pool"))
			return cmd_error(ctx, WHAT, "origin '%s' is a thin pool, not a volume", arg);
		o->origin_volume = v.id;
		return 0;
	}
	if (r != -ENOENT)
		return opts_store_error(ctx, WHAT, "look up the origin", r);
	if (!realpath(arg, o->origin_path) || stat(o->origin_path, &st))
		return cmd_error(ctx, WHAT, "origin '%s' is neither a volume nor a file: %s",
				 arg, strerror(errno));
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return cmd_error(ctx, WHAT, "origin '%s' is neither a regular file nor a block device",
				 arg);
	return 0;
}

static int create_thin_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pool", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 's' },
		{ "origin", required_argument, NULL, 'o' },
		{ 0 }
	};
	const char *pool_name = NULL, *size_arg = NULL, *origin = NULL;
	struct thin_origin_rec ext;
	struct volume_rec pool, v;
	char size[SIZE_STR_LEN];
	uint64_t bytes;
	int c, r;

	for (int first = 1; (c = opts_next(ctx, WHAT, argc, argv, longopts, first)) != -1;
	     first = 0) {
		if (c == 'p')
			pool_name = optarg;
		else if (c == 's')
			size_arg = optarg;
		else if (c == 'o')
			origin = optarg;
		else
			return CMD_USAGE;
	}
	r = opts_args(ctx, WHAT, argc, argv, 1, 1, "the volume NAME");
	if (r)
		return r;
	if (!pool_name || !size_arg)
		return cmd_usage_error(ctx, WHAT, "need --pool and --size (see 'mapperctl %s --help')",
				       WHAT);
	r = opts_name(ctx, WHAT, argv[optind]);
	if (!r)
		r = opts_block_size(ctx, WHAT, size_arg, &bytes);
	if (!r)
		r = thin_util_get(ctx, WHAT, pool_name, "thin-pool", &pool, NULL);
	if (!r && origin)
		r = parse_origin(ctx, origin, &ext);
	if (!r)
		r = thin_util_create(ctx, WHAT, argv[optind], bytes, pool.id, NULL,
				     origin ? &ext : NULL, &v);
	if (!r)
		fprintf(ctx->out, "created thin volume '%s' of %s in pool '%s'\n", v.name,
			format_size(v.size, size), pool.name);
	return r;
}

const struct cmd cmd_create_thin = {
	.name = "create thin",
	.usage =
		"create thin NAME --pool POOL --size SIZE [--origin VOLUME-OR-PATH]\n"
		"\n"
		"Creates a thin volume of SIZE bytes (may exceed the pool) in thin pool\n"
		"POOL.  Unwritten blocks read as zeros and take no space.\n"
		"\n"
		"  --origin X  unwritten blocks read from X instead (read-only): a volume\n"
		"              of this pool by name, or an image file or block device;\n"
		"              past its end they read as zeros\n",
	.run = create_thin_run,
	.needs_store = 1,
};
