/*
 * status: one volume in detail, or the whole pool.  The text form is the
 * JSON one rendered as indented "key: value" lines (json.h JSON_TEXT), so
 * both show the same fields, the daemon's live counters included.
 */
#include <errno.h>
#include <stdlib.h>

#include "cmd.h"
#include "json.h"
#include "opts.h"
#include "report.h"
#include "space.h"
#include "store.h"

#define WHAT "status"

static int status_volume(struct cmd_ctx *ctx, struct json *j, const char *name)
{
	struct volume_rec v;
	int r;

	r = store_volume_get(ctx->store, name, &v);
	if (r == -ENOENT)
		return cmd_error(ctx, WHAT, "no volume '%s'", name);
	if (r)
		return opts_store_error(ctx, WHAT, "look up the volume", r);
	json_object_begin(j, NULL);
	r = report_volume(ctx, WHAT, j, &v);
	json_object_end(j);
	return r;
}

static int status_pool(struct cmd_ctx *ctx, struct json *j)
{
	char uuid_str[UUID_STR_LEN];
	struct device_rec *d = NULL;
	struct volume_rec *v = NULL;
	size_t nr_d = 0, nr_v = 0;
	struct uuid uuid;
	uint64_t free_bytes;
	int r;

	r = store_pool_uuid(ctx->store, &uuid);
	if (!r)
		r = store_device_list(ctx->store, &d, &nr_d);
	if (!r)
		r = store_volume_list(ctx->store, &v, &nr_v);
	if (r) {
		free(d);
		return opts_store_error(ctx, WHAT, "read the pool", r);
	}
	uuid_format(&uuid, uuid_str);
	json_object_begin(j, NULL);
	json_object_begin(j, "pool");
	json_string(j, "path", ctx->pool_dir);
	json_string(j, "uuid", uuid_str);
	json_bool(j, "daemon", ctx->live != NULL);
	json_object_end(j);
	json_array_begin(j, "devices");
	for (size_t i = 0; !r && i < nr_d; i++) {
		r = space_free_bytes(ctx->store, &d[i], &free_bytes);
		if (r) {
			r = opts_store_error(ctx, WHAT, "compute free space", r);
			break;
		}
		json_object_begin(j, NULL);
		report_device(j, &d[i], free_bytes);
		json_object_end(j);
	}
	json_array_end(j);
	json_array_begin(j, "volumes");
	for (size_t i = 0; !r && i < nr_v; i++) {
		json_object_begin(j, NULL);
		r = report_volume(ctx, WHAT, j, &v[i]);
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
	free(v);
	free(d);
	return r;
}

static int status_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	FILE *out = ctx->out, *buf;
	char *text = NULL;
	size_t len = 0;
	int as_json, r;
	struct json j;

	r = opts_json_args(ctx, WHAT, argc, argv, &as_json, 0, 1, "");
	if (r)
		return r;
	/* buffered, so that a failure midway prints no half document */
	buf = open_memstream(&text, &len);
	if (!buf)
		return cmd_error(ctx, WHAT, "out of memory");
	json_init(&j, buf, as_json ? JSON_PRETTY : JSON_TEXT);
	if (optind < argc)
		r = status_volume(ctx, &j, argv[optind]);
	else
		r = status_pool(ctx, &j);
	fclose(buf);
	if (!r)
		fwrite(text, 1, len, out);
	free(text);
	return r;
}

const struct cmd cmd_status = {
	.name = "status",
	.usage =
		"status [NAME] [--json]\n"
		"\n"
		"Shows the volume NAME (kind, size, segments and, while the daemon\n"
		"serves it, its open count and I/O counters), or without NAME the\n"
		"whole pool: its devices and every volume.\n"
		"\n"
		"  --json  print it as JSON, sizes and offsets in bytes\n",
	.run = status_run,
	.needs_store = 1,
};
