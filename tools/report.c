#include "report.h"

#include <stdlib.h>

#include "label.h"
#include "opts.h"

void report_device(struct json *j, const struct device_rec *d,
		   uint64_t free_bytes)
{
	char uuid[UUID_STR_LEN];

	uuid_format(&d->uuid, uuid);
	json_string(j, "name", d->name);
	json_string(j, "path", d->path);
	json_string(j, "uuid", uuid);
	json_size(j, "size", d->size);
	json_size(j, "used", d->size - DEVICE_DATA_OFFSET - free_bytes);
	json_size(j, "free", free_bytes);
}

static int report_segments(struct cmd_ctx *ctx, const char *what,
			   struct json *j, const struct volume_rec *v)
{
	struct extent_rec *e = NULL;
	struct device_rec d;
	size_t nr = 0;
	int r;

	r = store_extents_of_volume(ctx->store, v->id, &e, &nr);
	if (r)
		return opts_store_error(ctx, what, "read the volume's extents", r);
	json_array_begin(j, "segments");
	for (size_t i = 0; !r && i < nr; i++) {
		r = store_device_get_by_id(ctx->store, e[i].device, &d);
		if (r) {
			r = opts_store_error(ctx, what, "look up a device", r);
			break;
		}
		json_object_begin(j, NULL);
		json_string(j, "device", d.name);
		json_u64(j, "offset", e[i].dev_offset - DEVICE_DATA_OFFSET);
		json_size(j, "length", e[i].length);
		json_object_end(j);
	}
	json_array_end(j);
	free(e);
	return r;
}

int report_volume(struct cmd_ctx *ctx, const char *what, struct json *j,
		  const struct volume_rec *v)
{
	int r;

	json_string(j, "name", v->name);
	json_string(j, "kind", v->kind);
	json_size(j, "size", v->size);
	r = report_segments(ctx, what, j, v);
	if (r)
		return r;
	json_bool(j, "daemon", ctx->live != NULL);
	if (ctx->live)
		ctx->live->volume_status(ctx->live_arg, v->id, j);
	return 0;
}
