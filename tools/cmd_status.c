/*
 * status: one volume in detail, or the whole pool.  The text form is the
 * JSON one rendered as indented "key: value" lines (json.h JSON_TEXT), so
 * both show the same fields, the live counters included.
 */
#include <stdlib.h>

#include "cmd.h"
#include "json.h"

#define WHAT "status"

static int status_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_error err;
	FILE *buf;
	char *text = NULL;
	size_t len = 0;
	int as_json, r;
	struct json j;

	r = cmd_json_args(ctx, WHAT, argc, argv, &as_json, 0, 1, "");
	if (r)
		return r;
	/* buffered, so that a failure midway prints no half document */
	buf = open_memstream(&text, &len);
	if (!buf)
		return cmd_error(ctx, WHAT, "out of memory");
	json_init(&j, buf, as_json ? JSON_PRETTY : JSON_TEXT);
	r = pool_status(ctx->pool, ctx->optind < argc ? argv[ctx->optind] : NULL, ctx->host, &j,
			&err);
	fclose(buf);
	if (!r)
		fwrite(text, 1, len, ctx->out);
	free(text);
	return r ? cmd_fail(ctx, WHAT, &err) : CMD_OK;
}

const struct cmd cmd_status = {
	.name = "status",
	.usage =
		"status [NAME] [--json]\n"
		"\n"
		"Shows the volume NAME (kind, size, state, segments or paths, thin\n"
		"figures and, while it is served, its open count and I/O counters),\n"
		"or without NAME the whole pool: its devices and every volume.\n"
		"A served thin pool shows its memory budget: cache_bytes (the\n"
		"map's leaves loaded), cache_budget_bytes (-o cache_size; 0: no\n"
		"budget, every leaf stays), cache_reserved_bytes (what a running\n"
		"check or dump holds of the budget for its walk) and\n"
		"cache_evictions (leaves unloaded since the daemon started).\n"
		"'mapperctl list --help' names every field.\n"
		"\n"
		"  --json  print it as JSON, sizes and offsets in bytes\n",
	.run = status_run,
	.needs_pool = 1,
	.reads_only = 1,
};
