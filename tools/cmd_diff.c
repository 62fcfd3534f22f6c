/*
 * diff: the byte ranges, in whole blocks, where two thin volumes of one
 * pool map differently, as thin_delta reports them: what an incremental
 * backup from snapshot A to B must copy.  Leaves the two share are
 * skipped whole, so the cost follows what changed.
 */
#include <errno.h>
#include <string.h>

#include "cmd.h"
#include "json.h"
#include "opts.h"
#include "thin_util.h"

#define WHAT "diff"

struct diff_out {
	struct cmd_ctx *ctx;
	struct json *j;			/* NULL: text */
	uint64_t block_size;		/* bytes */
};

static int print_run(void *arg, uint64_t first, uint64_t count)
{
	struct diff_out *o = arg;

	if (!o->j) {
		fprintf(o->ctx->out, "%llu %llu\n",
			(unsigned long long)(first * o->block_size),
			(unsigned long long)(count * o->block_size));
		return 0;
	}
	json_object_begin(o->j, NULL);
	json_u64(o->j, "offset", first * o->block_size);
	json_u64(o->j, "length", count * o->block_size);
	json_u64(o->j, "first_block", first);
	json_u64(o->j, "blocks", count);
	json_object_end(o->j);
	return 0;
}

static int diff_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct volume_rec a, b;
	struct thin_rec ta, tb;
	struct diff_out o = { ctx, NULL, 0 };
	struct thin_walk w;
	struct json j;
	int as_json, r;

	r = opts_json_args(ctx, WHAT, argc, argv, &as_json, 2, 2, "the volumes A and B");
	if (!r)
		r = thin_util_get(ctx, WHAT, argv[optind], "thin", &a, &ta);
	if (!r)
		r = thin_util_get(ctx, WHAT, argv[optind + 1], "thin", &b, &tb);
	if (r)
		return r;
	if (ta.pool != tb.pool)
		return cmd_error(ctx, WHAT, "'%s' and '%s' are in different thin pools",
				 a.name, b.name);
	r = thin_util_walk(ctx, WHAT, ta.pool, &w);
	if (r)
		return r;
	o.block_size = w.params.block_size;
	if (as_json) {
		json_init(&j, ctx->out, JSON_PRETTY);
		json_array_begin(&j, NULL);
		o.j = &j;
	}
	r = thin_walk_diff(&w, a.id, b.id, print_run, &o);
	if (as_json)
		json_array_end(&j);
	thin_walk_release(&w);
	if (r)
		return cmd_error(ctx, WHAT, "cannot compare '%s' and '%s': %s", a.name,
				 b.name, strerror(-r));
	return 0;
}

const struct cmd cmd_diff = {
	.name = "diff",
	.usage =
		"diff A B [--json]\n"
		"\n"
		"Prints the ranges where thin volumes A and B (of one pool) differ, one\n"
		"\"OFFSET LENGTH\" line each, in bytes, whole blocks.\n"
		"\n"
		"  --json  a JSON array of {\"offset\", \"length\", \"first_block\", \"blocks\"}\n",
	.run = diff_run,
	.needs_store = 1,
};
