/*
 * device list: the registered devices with their space.  "used" counts the
 * data area only: size - DEVICE_DATA_OFFSET = used + free.
 */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "json.h"
#include "label.h"
#include "size.h"

#define WHAT "device list"

struct device_row {
	char size[SIZE_STR_LEN], used[SIZE_STR_LEN], free[SIZE_STR_LEN];
	const char *state;
};

static int width(int w, const char *s)
{
	int n = (int)strlen(s);

	return n > w ? n : w;
}

/* A table with a header, columns as wide as their widest cell. */
static int print_text(struct cmd_ctx *ctx, const struct pool_device_info *d, size_t nr)
{
	int wn = 4, wp = 4, ws = 4, wu = 4, wf = 4;
	struct device_row *rows;

	if (!nr)
		return CMD_OK;
	rows = calloc(nr, sizeof(*rows));
	if (!rows)
		return cmd_error(ctx, WHAT, "out of memory");
	for (size_t i = 0; i < nr; i++) {
		uint64_t area = d[i].rec.size > DEVICE_DATA_OFFSET ?
				d[i].rec.size - DEVICE_DATA_OFFSET : 0;

		format_size(d[i].rec.size, rows[i].size);
		format_size(area > d[i].free ? area - d[i].free : 0, rows[i].used);
		format_size(d[i].free, rows[i].free);
		rows[i].state = d[i].reason[0] ? "failed" : "ok";
		wn = width(wn, d[i].rec.name);
		wp = width(wp, d[i].rec.path);
		ws = width(ws, rows[i].size);
		wu = width(wu, rows[i].used);
		wf = width(wf, rows[i].free);
	}
	fprintf(ctx->out, "%-*s  %-*s  %*s  %*s  %*s  %s\n", wn, "NAME", wp, "PATH",
		ws, "SIZE", wu, "USED", wf, "FREE", "STATE");
	for (size_t i = 0; i < nr; i++)
		fprintf(ctx->out, "%-*s  %-*s  %*s  %*s  %*s  %s\n", wn, d[i].rec.name,
			wp, d[i].rec.path, ws, rows[i].size, wu, rows[i].used,
			wf, rows[i].free, rows[i].state);
	free(rows);
	return CMD_OK;
}

static int device_list_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_device_info *d;
	struct pool_error err;
	int as_json, r;
	struct json j;
	size_t nr;

	r = cmd_json_args(ctx, WHAT, argc, argv, &as_json, 0, 0, "");
	if (r)
		return r;
	if (as_json) {
		json_init(&j, ctx->out, JSON_PRETTY);
		return pool_devices(ctx->pool, &j, &err) ? cmd_fail(ctx, WHAT, &err) : CMD_OK;
	}
	if (pool_device_infos(ctx->pool, &d, &nr))
		return cmd_error(ctx, WHAT, "out of memory");
	r = print_text(ctx, d, nr);
	pool_device_infos_release(d, nr);
	return r;
}

const struct cmd cmd_device_list = {
	.name = "device list",
	.usage =
		"device list [--json]\n"
		"\n"
		"Lists the pool's devices: name, path, size, the space of their data\n"
		"area that volumes use and that is free, and whether they are open\n"
		"(ok) or failed.\n"
		"\n"
		"  --json  print a JSON array of {\"name\", \"path\", \"uuid\", \"size\",\n"
		"          \"used\", \"free\", \"state\", \"reason\"}, sizes in bytes\n",
	.run = device_list_run,
	.needs_pool = 1,
	.reads_only = 1,
};
