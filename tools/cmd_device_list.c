/*
 * device list: the registered devices with their space, with lvs's (pvs's)
 * report options (report.h) over the fields below.  "used" counts the
 * data area only: size - DEVICE_DATA_OFFSET = used + free.
 */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "json.h"
#include "label.h"
#include "cmd_report.h"

#define WHAT "device list"

/* device list's columns with no -o, as they always were. */
#define DEFAULT_COLUMNS "name,path,size,used,free,state"

static const struct pool_device_info *row(const void *r)
{
	return r;
}

static void get_name(const void *r, struct field_value *out)
{
	out->s = row(r)->rec.name;
}

static void get_path(const void *r, struct field_value *out)
{
	out->s = row(r)->rec.path;
}

static void get_uuid(const void *r, struct field_value *out)
{
	uuid_format(&row(r)->rec.uuid, out->buf);
	out->s = out->buf;
}

static void get_size(const void *r, struct field_value *out)
{
	out->n = (int64_t)row(r)->rec.size;
}

static void get_used(const void *r, struct field_value *out)
{
	const struct pool_device_info *d = row(r);
	uint64_t area = d->rec.size > DEVICE_DATA_OFFSET ? d->rec.size - DEVICE_DATA_OFFSET : 0;

	out->n = (int64_t)(area > d->free ? area - d->free : 0);
	out->rounding = SIZE_UP;
}

static void get_free(const void *r, struct field_value *out)
{
	out->n = (int64_t)row(r)->free;
	out->rounding = SIZE_DOWN;
}

static void get_state(const void *r, struct field_value *out)
{
	out->s = row(r)->reconnecting ? "reconnecting" : row(r)->reason[0] ? "failed" : "ok";
}

static void get_reason(const void *r, struct field_value *out)
{
	out->s = row(r)->reason;
	out->none = !row(r)->reason[0];
}

static void get_id(const void *r, struct field_value *out)
{
	out->n = row(r)->rec.id;
}

static void get_tags(const void *r, struct field_value *out)
{
	out->tags = &row(r)->tags;
}

static const struct report_field fields[] = {
	{ "name", "NAME", "the device's name", FIELD_STRING, 0, get_name, NULL },
	{ "path", "PATH", "its block device or file", FIELD_STRING, 0, get_path, "pv_name" },
	{ "size", "SIZE", "its size when it was added", FIELD_SIZE, 0, get_size, "pv_size" },
	{ "used", "USED", "bytes of its data area that volumes use", FIELD_SIZE, 0, get_used,
	  "pv_used" },
	{ "free", "FREE", "bytes of its data area that create and extend can take",
	  FIELD_SIZE, 0, get_free, "pv_free" },
	{ "uuid", "UUID", "the uuid in its label", FIELD_STRING, 0, get_uuid, "pv_uuid" },
	{ "state", "STATE", "ok (open), reconnecting (NBD) or failed", FIELD_STRING, 0,
	  get_state, NULL },
	{ "reason", "REASON", "why it is failed or reconnecting", FIELD_STRING, 0, get_reason,
	  NULL },
	{ "id", "ID", "its id in the pool", FIELD_NUMBER, 0, get_id, NULL },
	{ "tags", "TAGS", "its tags (device set --addtag)", FIELD_TAGS, 0, get_tags, "pv_tags" },
};

static const struct option options[] = {
	REPORT_OPTIONS,
	{ 0 }
};

static int device_list_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_device_info *d;
	struct pool_error err;
	struct report rep;
	struct json j;
	size_t nr;
	int r;

	report_init(&rep, fields, sizeof(fields) / sizeof(fields[0]), DEFAULT_COLUMNS);
	r = cmd_report_parse(ctx, WHAT, argc, argv, options, &rep);
	if (r)
		return r;
	if (rep.help) {
		report_help(&rep, ctx->out);
	} else if (rep.own_json) {
		json_init(&j, ctx->out, JSON_PRETTY);
		r = pool_devices(ctx->pool, &j, &err) ? cmd_fail(ctx, WHAT, &err) : CMD_OK;
	} else if (pool_device_infos(ctx->pool, &d, &nr)) {
		r = cmd_error(ctx, WHAT, "out of memory");
	} else {
		if (report_print(&rep, ctx->out, d, nr, sizeof(*d)))
			r = cmd_error(ctx, WHAT, "out of memory");
		pool_device_infos_release(d, nr);
	}
	report_release(&rep);
	return r;
}

const struct cmd cmd_device_list = {
	.name = "device list",
	.usage =
		"device list [--json] [-o [+]FIELD[,FIELD...]] [-S|--select EXPR]\n"
		"            [-O|--sort [-]FIELD[,...]] [--units b|k|m|g|t|h] [--nosuffix]\n"
		"            [--noheadings] [--separator STR]\n"
		"\n"
		"Lists the pool's devices: name, path, size, the space of their data\n"
		"area that volumes use and that is free, and whether they are open\n"
		"(ok) or failed.  The report options are list's (mapperctl list\n"
		"--help), over the fields -o help lists.\n"
		"\n"
		"  --json  print a JSON array of {\"name\", \"path\", \"uuid\", \"size\",\n"
		"          \"used\", \"free\", \"state\", \"reason\", \"tags\"}, sizes in bytes;\n"
		"          with -o, --select or --sort the columns instead\n",
	.run = device_list_run,
	.options = options,
	.short_options = REPORT_SHORT_OPTIONS,
	.needs_pool = 1,
	.reads_only = 1,
};
