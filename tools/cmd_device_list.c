/*
 * device list: the registered devices with their space.  "used" counts the
 * data area only: size - DEVICE_DATA_OFFSET = used + free.
 */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "device.h"
#include "opts.h"
#include "report.h"
#include "size.h"
#include "space.h"

#define WHAT "device list"

struct device_row {
	char size[SIZE_STR_LEN], used[SIZE_STR_LEN], free[SIZE_STR_LEN];
};

static int width(int w, const char *s)
{
	int n = (int)strlen(s);

	return n > w ? n : w;
}

/* A table with a header, columns as wide as their widest cell. */
static int print_text(struct cmd_ctx *ctx, const struct device_rec *d,
		      const uint64_t *free_bytes, size_t nr)
{
	int wn = 4, wp = 4, ws = 4, wu = 4, wf = 4;
	struct device_row *rows;

	if (!nr)
		return CMD_OK;
	rows = calloc(nr, sizeof(*rows));
	if (!rows)
		return cmd_error(ctx, WHAT, "out of memory");
	for (size_t i = 0; i < nr; i++) {
		format_size(d[i].size, rows[i].size);
		format_size(d[i].size - DEVICE_DATA_OFFSET - free_bytes[i], rows[i].used);
		format_size(free_bytes[i], rows[i].free);
		wn = width(wn, d[i].name);
		wp = width(wp, d[i].path);
		ws = width(ws, rows[i].size);
		wu = width(wu, rows[i].used);
		wf = width(wf, rows[i].free);
	}
	fprintf(ctx->out, "%-*s  %-*s  %*s  %*s  %*s\n", wn, "NAME", wp, "PATH",
		ws, "SIZE", wu, "USED", wf, "FREE");
	for (size_t i = 0; i < nr; i++)
		fprintf(ctx->out, "%-*s  %-*s  %*s  %*s  %*s\n", wn, d[i].name,
			wp, d[i].path, ws, rows[i].size, wu, rows[i].used,
			wf, rows[i].free);
	free(rows);
	return CMD_OK;
}

static int device_list_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct device_rec *d = NULL;
	uint64_t *free_bytes = NULL;
	int as_json, r;
	size_t nr = 0;
	struct json j;

	r = opts_json_args(ctx, WHAT, argc, argv, &as_json, 0, 0, "");
	if (r)
		return r;
	r = store_device_list(ctx->store, &d, &nr);
	if (r)
		return opts_store_error(ctx, WHAT, "list devices", r);
	free_bytes = calloc(nr ? nr : 1, sizeof(*free_bytes));
	if (!free_bytes) {
		free(d);
		return cmd_error(ctx, WHAT, "out of memory");
	}
	for (size_t i = 0; !r && i < nr; i++) {
		r = space_free_bytes(ctx->store, &d[i], &free_bytes[i]);
		if (r)
			r = opts_store_error(ctx, WHAT, "compute free space", r);
	}
	if (!r && !as_json)
		r = print_text(ctx, d, free_bytes, nr);
	if (!r && as_json) {
		json_init(&j, ctx->out, JSON_PRETTY);
		json_array_begin(&j, NULL);
		for (size_t i = 0; i < nr; i++) {
			json_object_begin(&j, NULL);
			report_device(&j, &d[i], free_bytes[i]);
			json_object_end(&j);
		}
		json_array_end(&j);
	}
	free(free_bytes);
	free(d);
	return r;
}

const struct cmd cmd_device_list = {
	.name = "device list",
	.usage =
		"device list [--json]\n"
		"\n"
		"Lists the pool's devices: name, path, size, and the space of their data\n"
		"area that volumes use and that is free.\n"
		"\n"
		"  --json  print a JSON array of {\"name\", \"path\", \"uuid\", \"size\",\n"
		"          \"used\", \"free\"}, sizes in bytes\n",
	.run = device_list_run,
	.needs_store = 1,
};
