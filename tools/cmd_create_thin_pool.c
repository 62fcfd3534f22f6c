/*
 * create thin-pool: a data area carved from the raw devices (extents of a
 * volume of kind "thin-pool", which is not a file in the mount), split
 * into blocks, with its policies.  One transaction; the daemon then opens
 * the pool and starts its worker.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "linear_alloc.h"
#include "opts.h"
#include "size.h"
#include "store.h"
#include "thin_pool.h"
#include "thin_util.h"

#define WHAT "create thin-pool"

struct pool_args {
	const char *name, *size, *block_size, *when_full, *low_water;
	char **on;
	size_t nr_on;
	int no_zero;
};

static int parse(struct cmd_ctx *ctx, int argc, char **argv, struct pool_args *a)
{
	static const struct option longopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "block-size", required_argument, NULL, 'b' },
		{ "no-zero", no_argument, NULL, 'z' },
		{ "when-full", required_argument, NULL, 'w' },
		{ "low-water", required_argument, NULL, 'l' },
		{ "on", required_argument, NULL, 'o' },
		{ 0 }
	};
	int c;

	a->on = calloc((size_t)argc, sizeof(char *));
	if (!a->on)
		return cmd_error(ctx, WHAT, "out of memory");
	for (int first = 1; (c = opts_next(ctx, WHAT, argc, argv, longopts, first)) != -1;
	     first = 0) {
		switch (c) {
		case 's': a->size = optarg; break;
		case 'b': a->block_size = optarg; break;
		case 'z': a->no_zero = 1; break;
		case 'w': a->when_full = optarg; break;
		case 'l': a->low_water = optarg; break;
		case 'o': a->on[a->nr_on++] = optarg; break;
		default: return CMD_USAGE;
		}
	}
	c = opts_args(ctx, WHAT, argc, argv, 1, 1, "the pool NAME");
	if (c)
		return c;
	a->name = argv[optind];
	if (!a->size)
		return cmd_usage_error(ctx, WHAT, "missing --size (see 'mapperctl %s --help')", WHAT);
	return opts_name(ctx, WHAT, a->name);
}

static int parse_policy(struct cmd_ctx *ctx, const struct pool_args *a,
			struct thin_pool_rec *p)
{
	uint64_t bs = THIN_DEFAULT_BLOCK;
	char *end;
	int r;

	if (a->block_size) {
		r = opts_size(ctx, WHAT, a->block_size, &bs);
		if (r)
			return r;
		if (bs < THIN_BLOCK_MIN || bs > THIN_BLOCK_MAX || (bs & (bs - 1)))
			return cmd_error(ctx, WHAT, "block size '%s' must be a power of two from 64K to 1G",
					 a->block_size);
	}
	p->block_size = (uint32_t)bs;
	p->zero = !a->no_zero;
	p->low_water = THIN_DEFAULT_LOW_WATER;
	if (a->low_water) {
		unsigned long v = strtoul(a->low_water, &end, 10);

		if (!*a->low_water || *end || v > 100)
			return cmd_error(ctx, WHAT, "low-water mark '%s' must be a percentage 0..100",
					 a->low_water);
		p->low_water = (uint32_t)v;
	}
	if (!a->when_full || !strcmp(a->when_full, "error"))
		return 0;
	if (!strncmp(a->when_full, "wait:", 5)) {
		unsigned long v = strtoul(a->when_full + 5, &end, 10);

		if (a->when_full[5] && !*end && v > 0 && v <= 86400) {
			p->wait = true;
			p->wait_seconds = (uint32_t)v;
			return 0;
		}
	}
	return cmd_error(ctx, WHAT, "invalid --when-full '%s': use error or wait:SECONDS (1..86400)",
			 a->when_full);
}

static int create(struct cmd_ctx *ctx, struct volume_rec *v, struct thin_pool_rec *p,
		  const int64_t *devs, size_t nr_devs)
{
	int r;

	r = opts_begin_volume(ctx, WHAT, v);
	if (!r)
		r = linear_alloc_append(ctx, WHAT, v->id, 0, v->size, devs, nr_devs);
	if (!r) {
		p->volume = v->id;
		r = store_thin_pool_insert(ctx->store, p);
		if (r)
			r = opts_store_error(ctx, WHAT, "record the pool's policies", r);
	}
	return opts_end_transaction(ctx, WHAT, r);
}

static int create_thin_pool_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_args a = { 0 };
	struct thin_pool_rec p = { 0 };
	struct volume_rec v = { 0 };
	char size[SIZE_STR_LEN];
	int64_t *devs = NULL;
	size_t nr_devs = 0;
	int r;

	r = parse(ctx, argc, argv, &a);
	if (!r)
		r = opts_block_size(ctx, WHAT, a.size, &v.size);
	if (!r)
		r = parse_policy(ctx, &a, &p);
	if (!r && v.size < p.block_size)
		r = cmd_error(ctx, WHAT, "size '%s' is smaller than one block", a.size);
	if (!r)
		r = opts_devices(ctx, WHAT, a.on, a.nr_on, &devs, &nr_devs);
	if (!r) {
		v.size -= v.size % p.block_size;
		snprintf(v.name, sizeof(v.name), "%s", a.name);
		strcpy(v.kind, "thin-pool");
		r = create(ctx, &v, &p, devs, nr_devs);
	}
	if (!r) {
		if (ctx->live)
			opts_live_result(ctx, WHAT, ctx->live->volume_changed(ctx->live_arg, v.id));
		fprintf(ctx->out, "created thin pool '%s' of %s\n", v.name,
			format_size(v.size, size));
	}
	free(devs);
	free(a.on);
	return r;
}

const struct cmd cmd_create_thin_pool = {
	.name = "create thin-pool",
	.usage =
		"create thin-pool NAME --size SIZE [--block-size SIZE] [--no-zero]\n"
		"                 [--when-full error|wait:SECONDS] [--low-water PERCENT]\n"
		"                 [--on DEVICE[,DEVICE...]]...\n"
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
		"  --on DEVICES       take the space from these devices only, in order\n",
	.run = create_thin_pool_run,
	.needs_store = 1,
};
