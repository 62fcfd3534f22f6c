/*
 * extend: grows a volume to a new size.  A linear volume, or a thin
 * pool's data area, gets the difference from the allocator as extents
 * after its last one; the new size and the extents are one transaction,
 * and the daemon reloads the volume's table (grows the pool, waking writers
 * that wait for space) only after the commit.  A thin volume only changes
 * its size: its map grows with it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "linear_alloc.h"
#include "opts.h"
#include "size.h"
#include "store.h"
#include "thin_util.h"

#define WHAT "extend"

/* SIZE, or +SIZE for "this much more"; positive, 4 KiB multiple. */
static int parse_new_size(struct cmd_ctx *ctx, const char *arg,
			  const struct volume_rec *v, uint64_t *size)
{
	char cur[SIZE_STR_LEN];
	int r;

	r = opts_block_size(ctx, WHAT, arg + (arg[0] == '+'), size);
	if (r)
		return r;
	if (arg[0] == '+') {
		if (*size > SIZE_MAX_BYTES - v->size)
			return cmd_error(ctx, WHAT, "size '%s' is too large", arg);
		*size += v->size;
	}
	if (*size <= v->size)
		return cmd_error(ctx, WHAT, "new size must be larger than %s",
				 format_size(v->size, cur));
	return 0;
}

static int extend_linear(struct cmd_ctx *ctx, const struct volume_rec *v,
			 uint64_t size, const int64_t *devs, size_t nr_devs)
{
	struct extent_rec *e = NULL;
	size_t nr = 0;
	uint32_t seq;
	int r;

	r = store_begin(ctx->store);
	if (r)
		return opts_store_error(ctx, WHAT, "start a transaction", r);
	r = store_extents_of_volume(ctx->store, v->id, &e, &nr);
	if (r) {
		r = opts_store_error(ctx, WHAT, "read the volume's extents", r);
		goto err_rollback;
	}
	seq = nr ? e[nr - 1].seq + 1 : 0;
	free(e);
	r = linear_alloc_append(ctx, WHAT, v->id, seq, size - v->size, devs, nr_devs);
	if (r)
		goto err_rollback;
	r = store_volume_set_size(ctx->store, v->id, size);
	if (r) {
		r = opts_store_error(ctx, WHAT, "record the new size", r);
		goto err_rollback;
	}
	r = store_commit(ctx->store);
	if (r) {
		r = opts_store_error(ctx, WHAT, "commit", r);
		goto err_rollback;
	}
	return 0;

err_rollback:
	store_rollback(ctx->store);
	return r;
}

/* A pool grows by whole blocks. */
static int round_to_blocks(struct cmd_ctx *ctx, const struct volume_rec *v,
			   uint64_t *size)
{
	struct thin_pool_rec p;
	int r;

	r = store_thin_pool_get(ctx->store, v->id, &p);
	if (r)
		return opts_store_error(ctx, WHAT, "read the pool", r);
	*size -= *size % p.block_size;
	if (*size <= v->size)
		return cmd_error(ctx, WHAT, "thin pool '%s' grows by whole blocks of %u bytes",
				 v->name, p.block_size);
	return 0;
}

static int resize_thin(struct cmd_ctx *ctx, const struct volume_rec *v, uint64_t size)
{
	int r = store_volume_set_size(ctx->store, v->id, size);

	if (r)
		return opts_store_error(ctx, WHAT, "record the new size", r);
	return 0;
}

static int extend_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "on", required_argument, NULL, 'o' },
		{ 0 }
	};
	const char *size_arg = NULL;
	char **on, buf[SIZE_STR_LEN];
	int64_t *devs = NULL;
	size_t nr_on = 0, nr_devs = 0;
	struct volume_rec v;
	uint64_t size;
	int c, r;

	on = calloc((size_t)argc, sizeof(*on));
	if (!on)
		return cmd_error(ctx, WHAT, "out of memory");
	for (int first = 1; (c = opts_next(ctx, WHAT, argc, argv, longopts, first)) != -1;
	     first = 0) {
		if (c == 's')
			size_arg = optarg;
		else if (c == 'o')
			on[nr_on++] = optarg;
		else
			break;
	}
	if (c != -1)
		r = CMD_USAGE;
	else
		r = opts_args(ctx, WHAT, argc, argv, 1, 1, "the volume NAME");
	if (!r && !size_arg)
		r = cmd_usage_error(ctx, WHAT, "missing --size (see 'mapperctl %s --help')", WHAT);
	if (!r) {
		r = store_volume_get(ctx->store, argv[optind], &v);
		if (r == -ENOENT)
			r = cmd_error(ctx, WHAT, "no volume '%s'", argv[optind]);
		else if (r)
			r = opts_store_error(ctx, WHAT, "look up the volume", r);
	}
	if (!r && strcmp(v.kind, "linear") && strcmp(v.kind, "thin") &&
	    strcmp(v.kind, "thin-pool"))
		r = cmd_error(ctx, WHAT, "cannot extend a %s volume yet", v.kind);
	if (!r)
		r = parse_new_size(ctx, size_arg, &v, &size);
	if (!r && !strcmp(v.kind, "thin-pool"))
		r = round_to_blocks(ctx, &v, &size);
	if (!r)
		r = opts_devices(ctx, WHAT, on, nr_on, &devs, &nr_devs);
	if (!r && !strcmp(v.kind, "thin"))
		r = resize_thin(ctx, &v, size);
	else if (!r)
		r = extend_linear(ctx, &v, size, devs, nr_devs);
	if (!r) {
		if (ctx->live)
			opts_live_result(ctx, WHAT,
					 ctx->live->volume_changed(ctx->live_arg, v.id));
		fprintf(ctx->out, "extended volume '%s' to %s\n", v.name,
			format_size(size, buf));
	}
	free(devs);
	free(on);
	return r;
}

const struct cmd cmd_extend = {
	.name = "extend",
	.usage =
		"extend NAME --size [+]SIZE [--on DEVICE[,DEVICE...]]...\n"
		"\n"
		"Grows the volume NAME to SIZE bytes, or by SIZE bytes with '+'.  A thin\n"
		"pool grows its data area (by whole blocks); a thin volume its virtual\n"
		"size.\n"
		"\n"
		"  --size SIZE   the new size, larger than the current one; a multiple\n"
		"                of 4 KiB (K, M, G, T)\n"
		"  --on DEVICES  take the new space from these devices only, in order\n",
	.run = extend_run,
	.needs_store = 1,
};
