/*
 * diff: the byte ranges, in whole blocks, where two thin volumes of one
 * pool map differently, as thin_delta reports them: what an incremental
 * backup from snapshot A to B must copy (pool_diff).
 */
#include <stdlib.h>

#include "cmd.h"
#include "json.h"
#include "size.h"

#define WHAT "diff"

struct diff_out {
	FILE *f;
	struct json *j;			/* NULL: text */
	uint32_t block_size;		/* bytes */
	uint64_t runs, bytes;		/* text: for the header and the total */
};

static int print_run(void *arg, uint64_t first, uint64_t count)
{
	struct diff_out *o = arg;

	if (!o->j) {
		char off[SIZE_STR_LEN], len[SIZE_STR_LEN];

		if (!o->runs++)
			fprintf(o->f, "%12s  %12s  %12s  %10s\n", "OFFSET", "LENGTH", "FIRST_BLOCK",
				"BLOCKS");
		o->bytes += count * o->block_size;
		fprintf(o->f, "%12s  %12s  %12llu  %10llu\n",
			format_size(first * o->block_size, off),
			format_size(count * o->block_size, len), (unsigned long long)first,
			(unsigned long long)count);
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

/* The block size comes with the first run: runs print after it is known. */
static int diff_runs(struct cmd_ctx *ctx, struct diff_out *o, char **argv,
		     struct pool_error *err)
{
	return pool_diff(ctx->pool, argv[ctx->optind], argv[ctx->optind + 1], print_run, o,
			 &o->block_size, err);
}

static int diff_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct diff_out o = { 0 };
	struct pool_error err;
	char *text = NULL;
	size_t len = 0;
	int as_json, r;
	struct json j;

	r = cmd_json_args(ctx, WHAT, argc, argv, &as_json, 2, 2, "the volumes A and B");
	if (r)
		return r;
	o.f = open_memstream(&text, &len);
	if (!o.f)
		return cmd_error(ctx, WHAT, "out of memory");
	if (as_json) {
		json_init(&j, o.f, JSON_PRETTY);
		json_array_begin(&j, NULL);
		o.j = &j;
	}
	r = diff_runs(ctx, &o, argv, &err);
	if (as_json) {
		json_array_end(&j);
	} else if (!o.runs) {
		fprintf(o.f, "'%s' and '%s' do not differ\n", argv[ctx->optind], argv[ctx->optind + 1]);
	} else {
		char total[SIZE_STR_LEN];

		fprintf(o.f, "%llu range%s, %s in blocks of %u bytes\n",
			(unsigned long long)o.runs, o.runs == 1 ? "" : "s",
			format_size(o.bytes, total), o.block_size);
	}
	fclose(o.f);
	if (!r)
		fwrite(text, 1, len, ctx->out);
	free(text);
	return r ? cmd_fail(ctx, WHAT, &err) : CMD_OK;
}

const struct cmd cmd_diff = {
	.name = "diff",
	.usage =
		"diff A B [--json]\n"
		"\n"
		"Prints the ranges where thin volumes A and B (of one pool) differ, in\n"
		"whole blocks: a table of OFFSET, LENGTH (in human units), FIRST_BLOCK\n"
		"and BLOCKS, and the total; --json for exact bytes.\n"
		"\n"
		"  --json  a JSON array of {\"offset\", \"length\", \"first_block\", \"blocks\"}\n",
	.run = diff_run,
	.needs_pool = 1,
	.reads_only = 1,
};
