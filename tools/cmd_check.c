/*
 * check: verifies every invariant of the pool, or of one volume
 * (pool_check): the database's pages; extents on registered devices,
 * inside their data areas, overlapping nothing; each kind's records; and
 * each thin pool's committed map pages against themselves and against
 * the counts the pool keeps in memory.  Each breach is a line on stdout,
 * as fsck reports, then the verdict line; the exit status says it too,
 * and on failure one line on stderr.
 */
#include <errno.h>
#include <stdlib.h>

#include "cmd.h"
#include "json.h"

#define WHAT "check"

/* --json gathers the lines into {"breaches": [...], "summary": [...]}. */
struct check_out {
	struct cmd_ctx *ctx;
	FILE *breaches, *summary;	/* --json: one JSON string per line, or NULL */
	char *breaches_buf, *summary_buf;
	size_t breaches_len, summary_len;
};

static void print_line(struct cmd_ctx *ctx, FILE *json, const char *msg)
{
	struct json j;

	if (!json) {
		fprintf(ctx->out, "%s\n", msg);
		return;
	}
	json_init(&j, json, JSON_COMPACT);
	json_string(&j, NULL, msg);	/* a top-level value ends its line */
}

static void print_breach(void *arg, const char *msg)
{
	struct check_out *o = arg;

	print_line(o->ctx, o->breaches, msg);
}

static void print_summary(void *arg, const char *msg)
{
	struct check_out *o = arg;

	print_line(o->ctx, o->summary, msg);
}

/* Lines of JSON strings as an array. */
static void print_array(FILE *f, const char *key, const char *lines, size_t len)
{
	fprintf(f, "  \"%s\": [", key);
	for (size_t i = 0, n = 0; i < len; n++) {
		size_t end = i;

		while (end < len && lines[end] != '\n')
			end++;
		fprintf(f, "%s\n    %.*s", n ? "," : "", (int)(end - i), lines + i);
		i = end + 1;
	}
	fprintf(f, "%s]", len ? "\n  " : "");
}

static int check_json(struct cmd_ctx *ctx, struct check_out *o, const char *name,
		      size_t *breaches, struct pool_error *err)
{
	int r;

	o->breaches = open_memstream(&o->breaches_buf, &o->breaches_len);
	o->summary = open_memstream(&o->summary_buf, &o->summary_len);
	if (!o->breaches || !o->summary) {
		r = pool_fail(err, -ENOMEM, "out of memory");
	} else {
		r = pool_check(ctx->pool, name, print_breach, print_summary, o, breaches, err);
	}
	if (o->breaches)
		fclose(o->breaches);
	if (o->summary)
		fclose(o->summary);
	if (!r) {
		fprintf(ctx->out, "{\n");
		print_array(ctx->out, "breaches", o->breaches_buf, o->breaches_len);
		fprintf(ctx->out, ",\n");
		print_array(ctx->out, "summary", o->summary_buf, o->summary_len);
		fprintf(ctx->out, ",\n  \"ok\": %s\n}\n", *breaches ? "false" : "true");
	}
	free(o->breaches_buf);
	free(o->summary_buf);
	return r;
}

static int check_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct check_out o = { .ctx = ctx };
	struct pool_error err;
	size_t breaches;
	int r;

	int as_json;

	r = cmd_json_args(ctx, WHAT, argc, argv, &as_json, 0, 1, "");
	if (r)
		return r;
	r = as_json ? check_json(ctx, &o, ctx->optind < argc ? argv[ctx->optind] : NULL, &breaches, &err) :
		      pool_check(ctx->pool, ctx->optind < argc ? argv[ctx->optind] : NULL, print_breach,
				 print_summary, &o, &breaches, &err);
	if (r)
		return cmd_fail(ctx, WHAT, &err);
	if (breaches)
		return cmd_error(ctx, WHAT, "%zu breach%s found", breaches,
				 breaches == 1 ? "" : "es");
	return CMD_OK;
}

const struct cmd cmd_check = {
	.name = "check",
	.usage =
		"check [NAME] [--json]\n"
		"\n"
		"Verifies every invariant of the pool, or of the volume or thin pool\n"
		"NAME: the database's pages; extents on registered devices, inside\n"
		"their data areas, overlapping no other; each volume's records; and\n"
		"each thin pool's committed maps against themselves and against its\n"
		"counts in memory.  Prints each fault once, one line each (a device\n"
		"that is failed names the volumes it keeps out of service), then a\n"
		"verdict line, and exits 1 if there is any breach.\n"
		"\n"
		"  --json  print {\"breaches\": [lines], \"summary\": [lines], \"ok\"}\n",
	.run = check_run,
	.needs_pool = 1,
	.reads_only = 1,
};
