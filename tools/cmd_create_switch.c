/*
 * create switch: a volume whose fixed-size regions are spread over 2 to
 * 256 paths by a region table, as dm-switch does (pool_create_switch).
 */
#include <stdlib.h>

#include "cmd.h"
#include "opts.h"
#include "tag_opts.h"
#include "size.h"
#include "switch_table.h"

#define WHAT "create switch"

static const struct option options[] = {
	{ "size", required_argument, NULL, 's' },
	{ "region-size", required_argument, NULL, 'r' },
	{ "path", required_argument, NULL, 'p' },
	{ "read-only", no_argument, NULL, 'R' },
	TAG_ADD_OPTION,
	{ 0 }
};

struct create_args {
	bool read_only;			/* --read-only */
	const char *size;
	const char *region_size;
	char **paths;			/* --path arguments */
	size_t nr_paths;
	struct tag_opts tags;		/* --addtag */
};

static int parse(struct cmd_ctx *ctx, int argc, char **argv, struct create_args *a)
{
	int c, r;

	a->paths = calloc((size_t)argc, sizeof(char *));
	if (!a->paths)
		return cmd_error(ctx, WHAT, "out of memory");
	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		switch (c) {
		case 'R': a->read_only = true; break;
		case 's': a->size = optarg; break;
		case 'r': a->region_size = optarg; break;
		case 'p': a->paths[a->nr_paths++] = optarg; break;
		default:
			r = tag_opts_parse(ctx, WHAT, &a->tags, c, optarg);
			if (r)
				return r;
		}
	}
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the volume NAME");
	if (r)
		return r;
	if (!a->size || !a->region_size)
		return cmd_usage_error(ctx, WHAT, "need --size and --region-size (see 'mapperctl %s --help')",
				       WHAT);
	if (a->nr_paths < 2 || a->nr_paths > SWITCH_PATHS_MAX)
		return cmd_usage_error(ctx, WHAT, "need 2 to %d --path options, not %zu",
				       SWITCH_PATHS_MAX, a->nr_paths);
	return 0;
}

static int create_switch_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_switch_spec s = { 0 };
	struct create_args a = { 0 };
	struct pool_switch_path *paths = NULL;
	char **copies = NULL, size[SIZE_STR_LEN], region[SIZE_STR_LEN];
	struct pool_error err;
	struct volume_rec v;
	int r;

	r = parse(ctx, argc, argv, &a);
	if (r)
		goto out;
	paths = calloc(a.nr_paths, sizeof(*paths));
	copies = calloc(a.nr_paths, sizeof(*copies));
	if (!paths || !copies) {
		r = cmd_error(ctx, WHAT, "out of memory");
		goto out;
	}
	s.name = argv[ctx->optind];
	s.read_only = a.read_only;
	r = opts_block_size(a.size, &s.size, &err);
	if (!r)
		r = opts_block_size(a.region_size, &s.region_size, &err);
	for (size_t i = 0; !r && i < a.nr_paths; i++)
		r = opts_switch_path(a.paths[i], &copies[i], &paths[i], &err);
	s.paths = paths;
	s.nr_paths = a.nr_paths;
	if (!r)
		r = pool_create_switch(ctx->pool, &s, &v, &err);
	if (r) {
		r = cmd_fail(ctx, WHAT, &err);
		goto out;
	}
	fprintf(ctx->out, "created switch volume '%s' (%s, %zu paths, %llu regions of %s)\n",
		v.name, format_size(v.size, size), a.nr_paths,
		(unsigned long long)((s.size + s.region_size - 1) / s.region_size),
		format_size(s.region_size, region));
	r = tag_opts_tag_new(&a.tags, ctx, WHAT, TAG_ON_VOLUME, v.name);
out:
	for (size_t i = 0; copies && i < a.nr_paths; i++)
		free(copies[i]);
	free(copies);
	free(paths);
	free(a.paths);
	tag_opts_release(&a.tags);
	return r;
}

const struct cmd cmd_create_switch = {
	.name = "create switch",
	.usage =
		"create switch NAME --size SIZE --region-size SIZE --path DEVICE[:OFFSET]...\n"
		"              [--read-only] [--addtag TAG]...\n"
		"\n"
		"Creates the switch volume NAME: SIZE bytes cut into regions of\n"
		"--region-size, each served by one of 2 to 256 paths as its region\n"
		"table says (see 'mapperctl switch-map').  A new table sends region r\n"
		"to path r mod N.  Every path reaches the whole volume: byte x of the\n"
		"volume is byte OFFSET + x of the path.\n"
		"\n"
		"  --size SIZE         the volume's size: a multiple of 4 KiB (K, M, G, T)\n"
		"  --region-size SIZE  a multiple of 4 KiB (a power of two is fastest)\n"
		"  --path DEVICE       SIZE bytes from DEVICE's free space, owned by\n"
		"                      the volume\n"
		"  --path DEVICE:OFFSET\n"
		"                      OFFSET bytes into DEVICE's data area (after its\n"
		"                      1 MiB label); owns nothing, may be shared with\n"
		"                      other paths and volumes (multipath)\n"
		"  --read-only     writes fail with EROFS (see 'mapperctl set')\n"
		"  --addtag TAG    tags it (see 'mapperctl set'); repeatable\n",
	.run = create_switch_run,
	.options = options,
	.needs_pool = 1,
};
