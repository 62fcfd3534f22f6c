/*
 * create thin-pool: a data area carved from the raw devices, split into
 * blocks, with its policies (pool_create_thin_pool).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "opts.h"
#include "size.h"
#include "tag_opts.h"

#define WHAT "create thin-pool"
#define THIN_DEFAULT_BLOCK	(64u << 10)	/* bytes */
#define THIN_DEFAULT_LOW_WATER	10		/* percent free */
#define THIN_DEFAULT_AUTOEXTEND_THRESHOLD	100	/* percent used: LVM's, never */
#define THIN_DEFAULT_AUTOEXTEND_PERCENT		20	/* LVM's */

static const struct option options[] = {
	{ "size", required_argument, NULL, 's' },
	{ "block-size", required_argument, NULL, 'b' },
	{ "no-zero", no_argument, NULL, 'z' },
	{ "when-full", required_argument, NULL, 'w' },
	{ "low-water", required_argument, NULL, 'l' },
	{ "on", required_argument, NULL, 'o' },
	{ "no-discard-passdown", no_argument, NULL, 'D' },
	{ "autoextend-threshold", required_argument, NULL, 'T' },
	{ "autoextend-percent", required_argument, NULL, 'P' },
	{ "metadata-limit", required_argument, NULL, 'M' },
	{ "on-event", required_argument, NULL, 'E' },
	{ "mirrors", required_argument, NULL, 'm' },
	TAG_ADD_OPTION,
	{ 0 }
};

struct pool_args {
	const char *size, *block_size, *when_full, *low_water;
	const char *threshold, *percent, *metadata_limit, *on_event;
	const char *mirrors;		/* --mirrors, or NULL */
	char **on;
	size_t nr_on;
	int no_zero, no_passdown;
	struct tag_opts tags;		/* --addtag */
};

static int parse(struct cmd_ctx *ctx, int argc, char **argv, struct pool_args *a)
{
	int c;

	a->on = calloc((size_t)argc, sizeof(char *));
	if (!a->on)
		return cmd_error(ctx, WHAT, "out of memory");
	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		switch (c) {
		case 's': a->size = optarg; break;
		case 'b': a->block_size = optarg; break;
		case 'z': a->no_zero = 1; break;
		case 'w': a->when_full = optarg; break;
		case 'l': a->low_water = optarg; break;
		case 'o': a->on[a->nr_on++] = optarg; break;
		case 'D': a->no_passdown = 1; break;
		case 'T': a->threshold = optarg; break;
		case 'P': a->percent = optarg; break;
		case 'M': a->metadata_limit = optarg; break;
		case 'E': a->on_event = optarg; break;
		case 'm': a->mirrors = optarg; break;
		default:
			c = tag_opts_parse(ctx, WHAT, &a->tags, c, optarg);
			if (c)
				return c;
		}
	}
	c = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the pool NAME");
	if (c)
		return c;
	if (!a->size)
		return cmd_usage_error(ctx, WHAT, "missing --size (see 'mapperctl %s --help')", WHAT);
	return 0;
}

/* The values of the options, into @s; 0 or -errno with @err set. */
static int parse_values(const struct pool_args *a, struct pool_thin_pool_spec *s,
			struct pool_error *err)
{
	uint64_t bs = THIN_DEFAULT_BLOCK;
	int r;

	r = opts_block_size(a->size, &s->size, err);
	if (!r && a->block_size)
		r = opts_size(a->block_size, &bs, err);
	if (r)
		return r;
	if (bs > UINT32_MAX)
		return pool_fail(err, -EINVAL, "block size '%s' must be a power of two from 64K to 1G",
				 a->block_size);
	s->policy.block_size = (uint32_t)bs;
	s->policy.zero = !a->no_zero;
	s->policy.low_water = THIN_DEFAULT_LOW_WATER;
	if (a->low_water)
		r = opts_percent(a->low_water, "low-water mark", 0, &s->policy.low_water, err);
	if (!r && a->when_full)
		r = opts_when_full(a->when_full, &s->policy, err);
	s->policy.discard_passdown = !a->no_passdown;
	s->policy.autoextend_threshold = THIN_DEFAULT_AUTOEXTEND_THRESHOLD;
	s->policy.autoextend_percent = THIN_DEFAULT_AUTOEXTEND_PERCENT;
	if (!r && a->threshold)
		r = opts_percent(a->threshold, "autoextend threshold",
				 POOL_AUTOEXTEND_THRESHOLD_MIN, &s->policy.autoextend_threshold, err);
	if (!r && a->percent)
		r = opts_number(a->percent, "autoextend percent", 0, POOL_AUTOEXTEND_PERCENT_MAX,
				&s->policy.autoextend_percent, err);
	if (!r && a->metadata_limit)
		r = opts_size(a->metadata_limit, &s->policy.metadata_limit, err);
	if (!r && a->mirrors)
		r = opts_number(a->mirrors, "--mirrors", 1, 3, &s->mirrors, err);
	if (!r && a->on_event) {
		if (!a->on_event[0] || strlen(a->on_event) >= sizeof(s->policy.on_event))
			return pool_fail(err, -EINVAL, "--on-event needs a command shorter than %zu bytes",
					 sizeof(s->policy.on_event));
		snprintf(s->policy.on_event, sizeof(s->policy.on_event), "%s", a->on_event);
	}
	return r;
}

static int create_thin_pool_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_thin_pool_spec s = { 0 };
	struct pool_args a = { 0 };
	char size[SIZE_STR_LEN], requested[SIZE_STR_LEN], block[SIZE_STR_LEN];
	struct pool_error err;
	struct volume_rec v;
	int r;

	r = parse(ctx, argc, argv, &a);
	if (r)
		goto out;
	s.name = argv[ctx->optind];
	s.on = a.on;
	s.nr_on = a.nr_on;
	r = parse_values(&a, &s, &err);
	if (!r)
		r = pool_create_thin_pool(ctx->pool, &s, &v, &err);
	if (r) {
		r = cmd_fail(ctx, WHAT, &err);
		goto out;
	}
	fprintf(ctx->out, "created thin pool '%s' of %s", v.name, format_size(v.size, size));
	if (v.size != s.size)
		fprintf(ctx->out, " (%s rounded down to whole %s blocks)",
			format_size(s.size, requested), format_size(s.policy.block_size, block));
	if (s.mirrors)
		fprintf(ctx->out, ", its data on %u legs (resyncing in the background)",
			s.mirrors + 1);
	fputc('\n', ctx->out);
	r = tag_opts_tag_new(&a.tags, ctx, WHAT, TAG_ON_VOLUME, v.name);
out:
	free(a.on);
	tag_opts_release(&a.tags);
	return r;
}

const struct cmd cmd_create_thin_pool = {
	.name = "create thin-pool",
	.usage =
		"create thin-pool NAME --size SIZE [--block-size SIZE] [--no-zero]\n"
		"                 [--when-full error|wait:SECONDS] [--low-water PERCENT]\n"
		"                 [--on DEVICE[,DEVICE...]]... [--no-discard-passdown]\n"
		"                 [--autoextend-threshold PCT] [--autoextend-percent PCT]\n"
		"                 [--metadata-limit SIZE] [--on-event CMD] [--mirrors N]\n"
		"                 [--addtag TAG]...\n"
		"\n"
		"Creates a thin pool: a data area of SIZE bytes (rounded down to whole\n"
		"blocks) from which thin volumes take blocks on first write.\n"
		"\n"
		"  --size SIZE        the data area (K, M, G, T)\n"
		"  --block-size SIZE  power of two from 64K to 1G (default 64K)\n"
		"  --no-zero          do not zero the unwritten part of new blocks: faster\n"
		"                     first writes, but a new block may show data that a\n"
		"                     removed volume left there\n"
		"  --when-full P      error: fail writes needing a block with ENOSPC at\n"
		"                     once (default); wait:N: wait up to N seconds for\n"
		"                     'extend' to grow the pool\n"
		"  --low-water PCT    log a warning when free blocks fall below PCT%\n"
		"                     (default 10)\n"
		"  --on DEVICES       take the space from these devices only, in order\n"
		"  --no-discard-passdown  keep blocks that become free allocated on the\n"
		"                     raw devices (default: punch a hole in a file,\n"
		"                     BLKDISCARD on a block device, after the commit)\n"
		"  --autoextend-threshold PCT  grow the pool when more than PCT% (50..100)\n"
		"                     of it is used; 100 (default) never\n"
		"  --autoextend-percent PCT  grow it by PCT% of its size (default 20)\n"
		"  --metadata-limit SIZE  the most its map pages may take in the pool\n"
		"                     database (default: thin-metadata-size's estimate\n"
		"                     for its size and 1000 volumes; at least 64K); past\n"
		"                     it, writes needing a new map page fail with ENOSPC\n"
		"  --on-event CMD     run CMD with /bin/sh on the pool's events: low-water,\n"
		"                     full, metadata-full, failed, extended (MAPPERFS_EVENT,\n"
		"                     MAPPERFS_THIN_POOL, MAPPERFS_DATA_PERCENT ... set),\n"
		"                     one at a time in order (see mapperfs -o event_timeout);\n"
		"                     an absolute path of a directory runs every hook in\n"
		"                     it (run-parts)\n"
		"  --mirrors N        N more copies of its data (1 to 3: lvconvert of the\n"
		"                     pool's data to raid1 -m N), each on devices no\n"
		"                     other copy uses; see 'create linear --mirrors'\n"
		"  --addtag TAG       tags it (see 'mapperctl set'); repeatable\n",
	.run = create_thin_pool_run,
	.options = options,
	.needs_pool = 1,
};
