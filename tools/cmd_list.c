/*
 * list: the volumes, one line each (or a JSON array of objects with their
 * name, kind, size, state and the kind's figures).  `status` has more.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "json.h"
#include "size.h"

#define WHAT "list"

static int widest(int w, const char *s)
{
	return (int)strlen(s) > w ? (int)strlen(s) : w;
}

/* "12.34", or "" for none: lvs's Data% and Meta%. */
static const char *percent(int32_t hundredths, char *buf, size_t len)
{
	if (hundredths < 0)
		return "";
	snprintf(buf, len, "%d.%02d", hundredths / 100, hundredths % 100);
	return buf;
}

/* "2025-01-31 12:00" in local time, or "" for none. */
static const char *when(int64_t seconds, char *buf, size_t len)
{
	time_t t = (time_t)seconds;
	struct tm tm;

	if (!seconds || !localtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M", &tm))
		return "";
	return buf;
}

/* lvs's attributes, shortened: "rw" or "ro", then "a" active or "-". */
static const char *attr(const struct pool_volume_info *v)
{
	if (!strcmp(v->rec.kind, "thin-pool"))
		return "";
	return v->rec.read_only ? (v->rec.inactive ? "ro-" : "roa") :
				  (v->rec.inactive ? "rw-" : "rwa");
}

static void print_text(struct cmd_ctx *ctx, const struct pool_volume_info *v, size_t nr)
{
	char size[SIZE_STR_LEN], data[16], meta[16], created[32];
	int wn = 4, wk = 4, wp = 4, wo = 6;

	if (!nr)
		return;
	for (size_t i = 0; i < nr; i++) {
		wn = widest(wn, v[i].rec.name);
		wk = widest(wk, v[i].rec.kind);
		wp = widest(wp, v[i].pool);
		wo = widest(wo, v[i].origin);
	}
	fprintf(ctx->out, "%-*s  %-*s  %10s  %-*s  %-*s  %6s  %6s  %-4s  %-16s  %s\n", wn, "NAME",
		wk, "KIND", "SIZE", wp, "POOL", wo, "ORIGIN", "DATA%", "META%", "ATTR", "CREATED",
		"STATE");
	for (size_t i = 0; i < nr; i++)
		fprintf(ctx->out, "%-*s  %-*s  %10s  %-*s  %-*s  %6s  %6s  %-4s  %-16s  %s%s\n", wn,
			v[i].rec.name, wk, v[i].rec.kind, format_size(v[i].rec.size, size), wp,
			v[i].pool, wo, v[i].origin, percent(v[i].data_pct, data, sizeof(data)),
			percent(v[i].meta_pct, meta, sizeof(meta)), attr(&v[i]),
			when(v[i].rec.created, created, sizeof(created)),
			v[i].reason[0] ? "failed: " : v[i].condition ? v[i].condition : "ok",
			v[i].reason);
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
	pool_volume_infos_release(v, nr);
	return CMD_OK;
}

const struct cmd cmd_list = {
	.name = "list",
	.usage =
		"list [--json]\n"
		"\n"
		"Lists the volumes: name, kind, size, a thin volume's pool and the\n"
		"volume it is a snapshot of (ORIGIN), DATA% (of a thin volume: mapped\n"
		"of its size; of a thin pool: used) and META% (of a thin pool: map\n"
		"pages of its metadata limit) as lvs shows them, ATTR (rw or ro:\n"
		"writable or read-only; a: active, a file in the mount, or -: inactive),\n"
		"when it was CREATED, and its STATE: served (ok) or failed, with the\n"
		"reason; a served thin pool full or low-water instead of ok while\n"
		"status says so (full, low_water_crossed).\n"
		"\n"
		"  --json  print a JSON array of {\"name\", \"kind\", \"size\", \"state\",\n"
		"          \"created\"}, sizes in bytes, \"reason\" when failed; volumes add\n"
		"          \"active\", \"read_only\", \"modified\"; linear volumes and thin\n"
		"          pools add \"segments\"; switch volumes \"region_size\",\n"
		"          \"region_count\", \"paths\"; thin volumes \"pool\", \"origin\",\n"
		"          \"external_origin\", \"mapped_bytes\", \"exclusive_bytes\",\n"
		"          \"shared_bytes\", \"data_percent\"; thin pools \"block_size\",\n"
		"          \"data_used_bytes\", \"data_total_bytes\", \"data_percent\",\n"
		"          \"metadata_used_bytes\", \"metadata_total_bytes\",\n"
		"          \"metadata_percent\", \"metadata_pages\", \"discarded_bytes\",\n"
		"          \"low_water_crossed\", \"full\", \"metadata_full\", \"thin_volumes\",\n"
		"          \"when_full\", \"wait_seconds\", \"zero\", \"low_water_percent\",\n"
		"          \"discard_passdown\", \"autoextend_threshold\",\n"
		"          \"autoextend_percent\", \"on_event\", and while its metadata\n"
		"          commits fail \"commit_error\", \"commit_failing_ms\"\n",
	.run = list_run,
	.needs_pool = 1,
	.reads_only = 1,
};
