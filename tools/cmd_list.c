/*
 * list: the volumes, one line each (or a JSON array of objects with their
 * name, kind, size, state and the kind's figures), with lvs's report
 * options (report.h) over the fields below.  `status` has more.
 */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "json.h"
#include "cmd_report.h"

#define WHAT "list"

/* list's columns with no -o, as they always were. */
#define DEFAULT_COLUMNS \
	"name,kind,size,pool,origin,data_percent,metadata_percent,attr,created,state"

static const struct pool_volume_info *row(const void *r)
{
	return r;
}

/* A string field: none when empty, as --json leaves it out. */
static void string_value(struct field_value *out, const char *s)
{
	out->s = s;
	out->none = !s[0];
}

static void get_name(const void *r, struct field_value *out)
{
	out->s = row(r)->rec.name;
}

static void get_kind(const void *r, struct field_value *out)
{
	out->s = row(r)->rec.kind;
}

static void get_size(const void *r, struct field_value *out)
{
	out->n = (int64_t)row(r)->rec.size;
}

static void get_pool(const void *r, struct field_value *out)
{
	string_value(out, row(r)->pool);
}

static void get_origin(const void *r, struct field_value *out)
{
	string_value(out, row(r)->origin);
}

static void percent_value(struct field_value *out, int32_t hundredths)
{
	out->n = hundredths;
	out->none = hundredths < 0;
}

static void get_data_percent(const void *r, struct field_value *out)
{
	percent_value(out, row(r)->data_pct);
}

static void get_sync_percent(const void *r, struct field_value *out)
{
	percent_value(out, row(r)->sync_pct);
}

static void get_legs(const void *r, struct field_value *out)
{
	out->n = row(r)->legs;
	out->none = !row(r)->legs;
}

static void get_metadata_percent(const void *r, struct field_value *out)
{
	percent_value(out, row(r)->meta_pct);
}

/* lvs's attributes, shortened: "rw" or "ro", then "a" active or "-". */
static void get_attr(const void *r, struct field_value *out)
{
	const struct pool_volume_info *v = row(r);

	if (!v->file)
		out->s = "";
	else
		out->s = v->rec.read_only ? (v->rec.inactive ? "ro-" : "roa") :
					    (v->rec.inactive ? "rw-" : "rwa");
}

static void get_active(const void *r, struct field_value *out)
{
	out->n = !row(r)->rec.inactive;
	out->none = !row(r)->file;
}

static void get_read_only(const void *r, struct field_value *out)
{
	out->n = row(r)->rec.read_only;
	out->none = !row(r)->file;
}

static void get_allow_shrink(const void *r, struct field_value *out)
{
	out->n = row(r)->rec.allow_shrink;
	out->none = !row(r)->file;
}

static void time_value(struct field_value *out, int64_t seconds)
{
	out->n = seconds;
	out->none = !seconds;
}

static void get_created(const void *r, struct field_value *out)
{
	time_value(out, row(r)->rec.created);
}

static void get_modified(const void *r, struct field_value *out)
{
	time_value(out, row(r)->rec.modified);
}

/* ok, a thin pool's full or low-water, or failed: what the STATE column says. */
static void get_state(const void *r, struct field_value *out)
{
	const struct pool_volume_info *v = row(r);

	if (v->reason[0]) {
		out->s = "failed";
		out->detail = v->reason;
	} else {
		out->s = v->condition ? v->condition : "ok";
	}
}

/* Why it is failed, or what its condition (degraded) is about. */
static void get_reason(const void *r, struct field_value *out)
{
	string_value(out, row(r)->reason[0] ? row(r)->reason : row(r)->condition_why);
}

static void get_id(const void *r, struct field_value *out)
{
	out->n = row(r)->rec.id;
}

static void get_thin_id(const void *r, struct field_value *out)
{
	out->n = row(r)->thin_id;
	out->none = !row(r)->thin_id;
}

static void usage_value(const void *r, struct field_value *out, uint64_t bytes)
{
	out->n = (int64_t)bytes;
	out->none = !row(r)->has_usage;
}

static void get_mapped(const void *r, struct field_value *out)
{
	usage_value(r, out, row(r)->mapped_bytes);
}

static void get_exclusive(const void *r, struct field_value *out)
{
	usage_value(r, out, row(r)->exclusive_bytes);
}

static void get_shared(const void *r, struct field_value *out)
{
	usage_value(r, out, row(r)->shared_bytes);
}

static void get_block_size(const void *r, struct field_value *out)
{
	out->n = row(r)->block_size;
	out->none = !row(r)->block_size;
}

static void get_stripes(const void *r, struct field_value *out)
{
	out->n = row(r)->stripes;
	out->none = !row(r)->stripes;
}

static void get_stripe_size(const void *r, struct field_value *out)
{
	out->n = row(r)->stripe_size;
	out->none = !row(r)->stripe_size;
}

static void get_when_full(const void *r, struct field_value *out)
{
	string_value(out, row(r)->when_full);
}

static void get_export(const void *r, struct field_value *out)
{
	string_value(out, row(r)->export ? row(r)->export->uri : "");
}

static void get_export_state(const void *r, struct field_value *out)
{
	const struct pool_export_info *e = row(r)->export;

	string_value(out, e ? pool_export_state_name(e->state) : "");
}

static void get_export_pid(const void *r, struct field_value *out)
{
	out->n = row(r)->export ? row(r)->export->pid : 0;
	out->none = !out->n;
}

static void get_tags(const void *r, struct field_value *out)
{
	out->tags = &row(r)->tags;
}

static const struct report_field fields[] = {
	{ "name", "NAME", "the volume's or thin pool's name", FIELD_STRING, 0, get_name,
	  "lv_name" },
	{ "kind", "KIND", "linear, switch, thin or thin-pool", FIELD_STRING, 0, get_kind,
	  "segtype" },
	{ "size", "SIZE", "its size (a thin volume's virtual size)", FIELD_SIZE, 10, get_size,
	  "lv_size" },
	{ "pool", "POOL", "a thin volume's thin pool", FIELD_STRING, 0, get_pool, "pool_lv" },
	{ "origin", "ORIGIN", "the volume a snapshot was taken of", FIELD_STRING, 0, get_origin, NULL },
	{ "data_percent", "DATA%", "a thin volume's mapped, a thin pool's used, % of its size",
	  FIELD_PERCENT, 6, get_data_percent, NULL },
	{ "metadata_percent", "META%", "a thin pool's map pages, % of its metadata limit",
	  FIELD_PERCENT, 6, get_metadata_percent, NULL },
	{ "legs", "LEGS", "a mirror's copies (create linear --mirrors)", FIELD_NUMBER, 0,
	  get_legs, NULL },
	{ "sync_percent", "CPY%SYNC",
	  "a mirror's (or move's) regions copied to every leg not failed, %; a failed leg "
	  "shows in state",
	  FIELD_PERCENT, 6, get_sync_percent, "copy_percent" },
	{ "attr", "ATTR", "rw or ro, then a (active) or - (inactive)", FIELD_STRING, 4,
	  get_attr, "lv_attr" },
	{ "active", "ACTIVE", "a file in the mount (activate, deactivate)", FIELD_BOOL, 0,
	  get_active, "lv_active" },
	{ "read_only", "RO", "writes fail with EROFS (set --read-only)", FIELD_BOOL, 0,
	  get_read_only, NULL },
	{ "allow_shrink", "SHRINK", "a truncate of its file may shrink it (set --allow-shrink)",
	  FIELD_BOOL, 0, get_allow_shrink, NULL },
	{ "created", "CREATED", "when it was created", FIELD_TIME, 16, get_created,
	  "lv_time" },
	{ "modified", "MODIFIED", "when it was last written", FIELD_TIME, 16, get_modified, NULL },
	{ "state", "STATE", "ok, full or low-water (a thin pool), degraded (a mirror), or failed",
	  FIELD_STRING, 0,
	  get_state, NULL },
	{ "reason", "REASON", "why it is failed", FIELD_STRING, 0, get_reason, NULL },
	{ "id", "ID", "its id in the pool (its file's inode number - 1)", FIELD_NUMBER, 0,
	  get_id, NULL },
	{ "thin_id", "THIN_ID", "a thin volume's device id, dump's dev_id (thin_delta, thin_ls)",
	  FIELD_NUMBER, 0, get_thin_id, NULL },
	{ "mapped", "MAPPED", "a thin volume's mapped bytes", FIELD_SIZE, 0, get_mapped, NULL },
	{ "exclusive", "EXCLUSIVE", "a thin volume's bytes no other volume maps", FIELD_SIZE, 0,
	  get_exclusive, NULL },
	{ "shared", "SHARED", "a thin volume's bytes other volumes map too", FIELD_SIZE, 0,
	  get_shared, NULL },
	{ "block_size", "BLOCK", "a thin pool's block size", FIELD_SIZE, 0, get_block_size,
	  "chunk_size" },
	{ "when_full", "WHEN_FULL", "a thin pool's error or wait:SECONDS", FIELD_STRING, 0,
	  get_when_full, "lv_when_full" },
	{ "stripes", "#STR", "a striped volume's number of stripes", FIELD_NUMBER, 0, get_stripes,
	  NULL },
	{ "stripe_size", "STRIPE", "a striped volume's chunk size", FIELD_SIZE, 0,
	  get_stripe_size, NULL },
	{ "export", "EXPORT", "where it is served over NBD (export), as a URI", FIELD_STRING, 0,
	  get_export, NULL },
	{ "export_state", "EXPORT_STATE",
	  "its export's serving, restarting, failed, or stopped (no daemon)", FIELD_STRING, 0,
	  get_export_state, NULL },
	{ "export_pid", "EXPORT_PID", "the pid of its export's nbdkit", FIELD_NUMBER, 0,
	  get_export_pid, NULL },
	{ "tags", "TAGS", "its tags (set --addtag)", FIELD_TAGS, 0, get_tags, "lv_tags" },
};

static const struct option options[] = {
	REPORT_OPTIONS,
	{ 0 }
};

static int list_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_volume_info *v;
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
		r = pool_list(ctx->pool, &j, &err) ? cmd_fail(ctx, WHAT, &err) : CMD_OK;
	} else if (pool_volume_infos(ctx->pool, &v, &nr)) {
		r = cmd_error(ctx, WHAT, "out of memory");
	} else {
		if (report_print(&rep, ctx->out, v, nr, sizeof(*v)))
			r = cmd_error(ctx, WHAT, "out of memory");
		pool_volume_infos_release(v, nr);
	}
	report_release(&rep);
	return r;
}

const struct cmd cmd_list = {
	.name = "list",
	.usage =
		"list [--json] [-o [+]FIELD[,FIELD...]] [-S|--select EXPR]\n"
		"     [-O|--sort [-]FIELD[,...]] [--units b|k|m|g|t|h] [--nosuffix]\n"
		"     [--noheadings] [--separator STR]\n"
		"\n"
		"Lists the volumes: name, kind, size, a thin volume's pool and the\n"
		"volume it is a snapshot of (ORIGIN), DATA% (of a thin volume: mapped\n"
		"of its size; of a thin pool: used) and META% (of a thin pool: map\n"
		"pages of its metadata limit) as lvs shows them, ATTR (rw or ro:\n"
		"writable or read-only; a: active, a file in the mount, or -: inactive),\n"
		"when it was CREATED, and its STATE: served (ok) or failed, with the\n"
		"reason; a served thin pool full or low-water instead of ok while\n"
		"status says so (full, low_water_crossed), a mirror degraded while a\n"
		"leg is failed.\n"
		"\n"
		"  -o, --options FIELDS  the columns, lvs's way: a comma list of\n"
		"          fields, +FIELDS to add to the default ones, help to list\n"
		"          every field with what it is; -o may be given more than once\n"
		"  -S, --select EXPR  only the volumes EXPR holds for: comparisons of\n"
		"          a field with a value (== = != < <= > >=, =~ !~ a regular\n"
		"          expression on a string field; sizes take units: size > 1G),\n"
		"          @TAG (carries tag TAG), joined by && || ! and ( )\n"
		"  -O, --sort FIELDS  the order: a comma list of fields, -FIELD\n"
		"          descending (default: by id, the order they were made in)\n"
		"  --units U  sizes in b, k, m, g, t (powers of 1024) or h (the\n"
		"          largest that keeps the number at least 1), with lvs's\n"
		"          suffix (1024.00m); without it, sizes read 1.00 GiB\n"
		"  --nosuffix  sizes without the unit's letter (--units h if none given)\n"
		"  --noheadings  no heading line\n"
		"  --separator STR  columns joined by STR, unpadded\n"
		"  --json  print a JSON array of {\"name\", \"kind\", \"size\", \"state\",\n"
		"          \"created\"}, sizes in bytes, \"reason\" when failed; volumes add\n"
		"          \"active\", \"read_only\", \"allow_shrink\", \"modified\"; linear\n"
		"          volumes and thin pools add \"segments\", mirrors \"mirror\" instead (\"legs\",\n"
		"          \"sync_percent\", \"dirty_regions\", \"degraded\", \"leg_list\"\n"
		"          of {\"leg\", \"state\", \"segments\"}); striped volumes \"stripes\",\n"
		"          \"stripe_size\" and a \"stripe\" in each segment; switch volumes \"region_size\",\n"
		"          \"region_count\", \"paths\"; thin volumes \"pool\", \"origin\",\n"
		"          \"external_origin\", \"mapped_bytes\", \"exclusive_bytes\",\n"
		"          \"shared_bytes\", \"data_percent\", \"identity\" (what send streams\n"
		"          call it), \"received_from\"; thin pools \"block_size\",\n"
		"          \"data_used_bytes\", \"data_total_bytes\", \"data_percent\",\n"
		"          \"metadata_used_bytes\", \"metadata_total_bytes\",\n"
		"          \"metadata_percent\", \"metadata_pages\", \"discarded_bytes\",\n"
		"          \"cache_bytes\", \"cache_budget_bytes\", \"cache_reserved_bytes\",\n"
		"          \"cache_evictions\", \"cache_loads\", \"cache_miss_waits\" (with\n"
		"          a daemon: the map's leaves loaded, the budget (0: none),\n"
		"          the part of it a check or dump holds for its walk, leaves\n"
		"          unloaded, leaves loaded on demand, reads that waited for\n"
		"          the pool's loader),\n"
		"          \"low_water_crossed\", \"full\", \"metadata_full\", \"thin_volumes\",\n"
		"          \"when_full\", \"wait_seconds\", \"zero\", \"low_water_percent\",\n"
		"          \"discard_passdown\", \"autoextend\", \"autoextend_threshold\",\n"
		"          \"autoextend_percent\", \"on_event\", and while its metadata\n"
		"          commits fail \"commit_error\", \"commit_failing_ms\"; an exported\n"
		"          volume \"export\" ({\"uri\", \"transport\", \"address\", \"tls\",\n"
		"          \"read_only\", \"state\", \"pid\", \"reason\"}); any object\n"
		"          that carries tags \"tags\".  With -o, --select or --sort it\n"
		"          prints the columns instead (the default ones without -o),\n"
		"          each under its field's name, sizes in bytes\n",
	.run = list_run,
	.options = options,
	.short_options = REPORT_SHORT_OPTIONS,
	.needs_pool = 1,
	.reads_only = 1,
};
