/*
 * list: the volumes, one line each (or a JSON array of objects with their
 * name, kind, size, state and the kind's figures).  `status` has more.
 */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "json.h"
#include "size.h"

#define WHAT "list"

static void print_text(struct cmd_ctx *ctx, const struct pool_volume_info *v, size_t nr)
{
	char size[SIZE_STR_LEN];
	int wn = 4, wk = 4;

	if (!nr)
		return;
	for (size_t i = 0; i < nr; i++) {
		if ((int)strlen(v[i].rec.name) > wn)
			wn = (int)strlen(v[i].rec.name);
		if ((int)strlen(v[i].rec.kind) > wk)
			wk = (int)strlen(v[i].rec.kind);
	}
	fprintf(ctx->out, "%-*s  %-*s  %10s  %s\n", wn, "NAME", wk, "KIND", "SIZE", "STATE");
	for (size_t i = 0; i < nr; i++)
		fprintf(ctx->out, "%-*s  %-*s  %10s  %s%s\n", wn, v[i].rec.name, wk,
			v[i].rec.kind, format_size(v[i].rec.size, size),
			v[i].reason[0] ? "failed: " : "ok", v[i].reason);
}

static int list_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_volume_info *v;
	struct pool_error err;
	int as_json, r;
	struct json j;
	size_t nr;

	r = cmd_json_args(ctx, WHAT, argc, argv, &as_json, 0, 0, "");
	if (r)
		return r;
	if (as_json) {
		json_init(&j, ctx->out, JSON_PRETTY);
		return pool_list(ctx->pool, &j, &err) ? cmd_fail(ctx, WHAT, &err) : CMD_OK;
	}
	if (pool_volume_infos(ctx->pool, &v, &nr))
		return cmd_error(ctx, WHAT, "out of memory");
	print_text(ctx, v, nr);
	free(v);
	return CMD_OK;
}

const struct cmd cmd_list = {
	.name = "list",
	.usage =
		"list [--json]\n"
		"\n"
		"Lists the volumes: name, kind, size, and whether each is served (ok)\n"
		"or failed, with the reason.\n"
		"\n"
		"  --json  print a JSON array of {\"name\", \"kind\", \"size\", \"state\"},\n"
		"          size in bytes, \"reason\" when failed; linear volumes and thin\n"
		"          pools add \"segments\"; thin volumes \"pool\", \"mapped_bytes\",\n"
		"          \"exclusive_bytes\", \"shared_bytes\"; thin pools\n"
		"          \"data_used_bytes\", \"data_total_bytes\", \"metadata_bytes\",\n"
		"          \"block_size\", \"when_full\", \"low_water_crossed\"\n",
	.run = list_run,
	.needs_pool = 1,
};
