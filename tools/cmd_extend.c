/*
 * extend: grows a volume to a new size (pool_extend): a linear volume or a
 * thin pool's data area by new extents after its last one, a thin volume
 * its virtual size.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "opts.h"
#include "size.h"

#define WHAT "extend"

static const struct option options[] = {
	{ "size", required_argument, NULL, 's' },
	{ "on", required_argument, NULL, 'o' },
	{ 0 }
};

/* The size of volume @name, from the pool, for "+SIZE". */
static int current_size(struct pool *p, const char *name, uint64_t *size,
			struct pool_error *err)
{
	struct pool_volume_info *v;
	size_t nr;
	int r = -ENOENT;

	if (pool_volume_infos(p, &v, &nr))
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < nr && r; i++) {
		if (!strcmp(v[i].rec.name, name)) {
			*size = v[i].rec.size;
			r = 0;
		}
	}
	pool_volume_infos_release(v, nr);
	return r ? pool_fail(err, r, "no volume '%s'", name) : 0;
}

/* SIZE, or +SIZE for "this much more". */
static int new_size(struct pool *p, const char *name, const char *arg, uint64_t *size,
		    struct pool_error *err)
{
	uint64_t cur = 0;
	int r;

	r = opts_block_size(arg + (arg[0] == '+'), size, err);
	if (r || arg[0] != '+')
		return r;
	r = current_size(p, name, &cur, err);
	if (r)
		return r;
	if (*size > SIZE_MAX_BYTES - cur)
		return pool_fail(err, -ERANGE, "size '%s' is too large", arg);
	*size += cur;
	return 0;
}

static int extend_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	const char *size_arg = NULL;
	char **on, buf[SIZE_STR_LEN], asked[SIZE_STR_LEN];
	struct pool_error err;
	struct volume_rec v;
	size_t nr_on = 0;
	uint64_t size;
	int c, r;

	on = calloc((size_t)argc, sizeof(*on));
	if (!on)
		return cmd_error(ctx, WHAT, "out of memory");
	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
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
		r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the volume NAME");
	if (!r && !size_arg)
		r = cmd_usage_error(ctx, WHAT, "missing --size (see 'mapperctl %s --help')", WHAT);
	if (!r && (new_size(ctx->pool, argv[ctx->optind], size_arg, &size, &err) ||
		   pool_extend(ctx->pool, argv[ctx->optind], size, on, nr_on, &v, &err)))
		r = cmd_fail(ctx, WHAT, &err);
	if (!r && v.size != size)
		fprintf(ctx->out, "extended volume '%s' to %s (%s rounded %s)\n", v.name,
			format_size(v.size, buf), format_size(size, asked),
			v.size < size ? "down to whole blocks" :
			!strcmp(v.kind, "switch") ? "up to whole regions" : "up to whole stripe rows");
	else if (!r)
		fprintf(ctx->out, "extended volume '%s' to %s\n", v.name, format_size(v.size, buf));
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
		"size; a striped volume each of its stripes, on its own device (by whole\n"
		"rows: a chunk of every stripe); a switch volume by whole regions, over\n"
		"its paths round-robin.\n"
		"\n"
		"  --size SIZE   the new size, larger than the current one; a multiple\n"
		"                of 4 KiB (K, M, G, T)\n"
		"  --on DEVICES  take the new space from these devices only, in order\n",
	.run = extend_run,
	.options = options,
	.needs_pool = 1,
};
