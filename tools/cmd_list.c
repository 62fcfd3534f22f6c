/*
 * list: the volumes, one line each (or a JSON array of {"name", "kind",
 * "size"}, size in bytes).  `status` has the details.
 */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "json.h"
#include "opts.h"
#include "report.h"
#include "size.h"
#include "store.h"

#define WHAT "list"

static void print_text(struct cmd_ctx *ctx, const struct volume_rec *v,
		       size_t nr)
{
	char size[SIZE_STR_LEN];
	int wn = 4, wk = 4;

	if (!nr)
		return;
	for (size_t i = 0; i < nr; i++) {
		if ((int)strlen(v[i].name) > wn)
			wn = (int)strlen(v[i].name);
		if ((int)strlen(v[i].kind) > wk)
			wk = (int)strlen(v[i].kind);
	}
	fprintf(ctx->out, "%-*s  %-*s  %10s\n", wn, "NAME", wk, "KIND", "SIZE");
	for (size_t i = 0; i < nr; i++)
		fprintf(ctx->out, "%-*s  %-*s  %10s\n", wn, v[i].name, wk,
			v[i].kind, format_size(v[i].size, size));
}

static int print_json(struct cmd_ctx *ctx, const struct volume_rec *v,
		      size_t nr)
{
	struct json j;
	int r = 0;

	json_init(&j, ctx->out, JSON_PRETTY);
	json_array_begin(&j, NULL);
	for (size_t i = 0; i < nr && !r; i++) {
		json_object_begin(&j, NULL);
		json_string(&j, "name", v[i].name);
		json_string(&j, "kind", v[i].kind);
		json_u64(&j, "size", v[i].size);
		if (!strcmp(v[i].kind, "thin") || !strcmp(v[i].kind, "thin-pool"))
			r = report_thin(ctx, WHAT, &j, &v[i]);
		json_object_end(&j);
	}
	json_array_end(&j);
	return r;
}

static int list_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct volume_rec *v = NULL;
	int as_json, r;
	size_t nr = 0;

	r = opts_json_args(ctx, WHAT, argc, argv, &as_json, 0, 0, "");
	if (r)
		return r;
	r = store_volume_list(ctx->store, &v, &nr);
	if (r)
		return opts_store_error(ctx, WHAT, "list volumes", r);
	if (as_json)
		r = print_json(ctx, v, nr);
	else
		print_text(ctx, v, nr);
	free(v);
	return r;
}

const struct cmd cmd_list = {
	.name = "list",
	.usage =
		"list [--json]\n"
		"\n"
		"Lists the volumes: name, kind and size.\n"
		"\n"
		"  --json  print a JSON array of {\"name\", \"kind\", \"size\"}, size in bytes;\n"
		"          thin volumes add mapped_bytes, exclusive_bytes, shared_bytes,\n"
		"          thin pools data_used_bytes, data_total_bytes, metadata_bytes,\n"
		"          block_size, when_full, low_water_crossed\n",
	.run = list_run,
	.needs_store = 1,
};
