/*
 * send: a thin volume, or what changed in it since a snapshot, as a
 * stream (pool_send; core/util/send_stream.h has the format) to standard
 * output or a file that mapperctl opened (cmd.h, output_option; a pipe
 * is written as it goes: cmd.h, streams), for `mapperctl receive` in
 * another pool, through ssh or any pipe.  Standard output carries the
 * stream alone: what it says goes to standard error.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "json.h"
#include "size.h"

#define WHAT "send"

static const struct option options[] = {
	{ "since", required_argument, NULL, 'i' },
	{ "resume-at", required_argument, NULL, 'r' },
	{ "output", required_argument, NULL, 'o' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "json", no_argument, NULL, 'j' },
	{ 0 }
};

static const char *const path_options[] = { "--output", NULL };

void cmd_json_streamed(struct json *j, const struct pool_streamed *s)
{
	json_u64(j, "stream_bytes", s->bytes);
	json_u64(j, "records", s->records);
	json_u64(j, "data_bytes", s->data_bytes);
	json_u64(j, "hole_bytes", s->hole_bytes);
	json_u64(j, "resumed_at", s->resumed_at);
}

static void print_summary(struct cmd_ctx *ctx, const char *name, const char *since,
			  const struct pool_streamed *s, bool as_json)
{
	char bytes[SIZE_STR_LEN], data[SIZE_STR_LEN], holes[SIZE_STR_LEN], from[48] = "";
	struct json j;

	if (as_json) {
		json_init(&j, ctx->err, JSON_COMPACT);
		json_object_begin(&j, NULL);
		json_string(&j, "volume", name);
		if (since)
			json_string(&j, "since", since);
		cmd_json_streamed(&j, s);
		json_object_end(&j);
		fputc('\n', ctx->err);
		return;
	}
	if (s->resumed_at)
		snprintf(from, sizeof(from), "; written from byte %llu",
			 (unsigned long long)s->resumed_at);
	cmd_note(ctx, WHAT, "sent '%s'%s%s%s: %s of stream, %llu record%s: %s of data, %s of "
		 "holes%s", name, since ? " since '" : "", since ? since : "", since ? "'" : "",
		 format_size(s->bytes, bytes), (unsigned long long)s->records,
		 s->records == 1 ? "" : "s",
		 format_size(s->data_bytes, data), format_size(s->hole_bytes, holes), from);
}

/* A plain decimal byte position, > 0.  0 or -EINVAL. */
static int parse_position(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 10);
	return *s < '1' || *s > '9' || *end || errno ? -EINVAL : 0;
}

static int send_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_send_spec spec = { .fd = ctx->output, .caller = ctx->caller };
	bool verbose = false, as_json = false;
	struct pool_streamed sent;
	struct pool_error err;
	int c, r;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		if (c == 'i')
			spec.since = optarg;
		else if (c == 'r' && parse_position(optarg, &spec.resume_at))
			return cmd_error(ctx, WHAT, "invalid --resume-at '%s': the byte where a receive "
					 "stopped, as it said", optarg);
		else if (c == 'v')
			verbose = true;
		else if (c == 'j')
			as_json = true;
		else if (c != 'o' && c != 'r')
			return CMD_USAGE;
	}
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the thin VOLUME");
	if (r)
		return r;
	if (spec.fd < 0)
		return cmd_error(ctx, WHAT, "cannot write the stream: mapperctl did not open it");
	if (isatty(spec.fd))	/* as zfs send: binary on a terminal helps nobody */
		return cmd_error(ctx, WHAT, "refusing to write the stream to a terminal: pipe it "
				 "(| ssh HOST mapperctl receive NAME) or give -o FILE");
	spec.name = argv[ctx->optind];
	if (pool_send(ctx->pool, &spec, &sent, &err))
		return cmd_fail(ctx, WHAT, &err);
	if (verbose || as_json)
		print_summary(ctx, spec.name, spec.since, &sent, as_json);
	return CMD_OK;
}

const struct cmd cmd_send = {
	.name = "send",
	.usage =
		"send VOLUME [--since SNAPSHOT] [--resume-at BYTE] [-o|--output FILE] [-v|--verbose]\n"
		"     [--json]\n"
		"\n"
		"Writes thin volume VOLUME as a stream that 'mapperctl receive' applies\n"
		"in another pool: every range it maps (its holes cost nothing), or with\n"
		"--since only the blocks that changed since SNAPSHOT (as 'diff' finds\n"
		"them), as data, and as holes where VOLUME no longer maps a block that\n"
		"SNAPSHOT maps.  Every record is checksummed (crc32), and so is the\n"
		"whole stream.  VOLUME must not be open (send a snapshot of a volume in\n"
		"use) and cannot be opened until the send ends.  Standard output\n"
		"carries the stream alone:\n"
		"  mapperctl send vm1-mon --since vm1-sun | ssh host mapperctl receive vm1-mon\n"
		"\n"
		"  --since S    only what changed since snapshot S (the receiving pool\n"
		"               must have received S)\n"
		"  --resume-at B  only the stream from byte B on, where a receive cut\n"
		"               short stopped (it says so); the bytes before are read\n"
		"               and summed here, not sent\n"
		"  --output F   write to file F instead of standard output (- is\n"
		"               standard output); a regular file is written beside F\n"
		"               and renamed onto it once the send succeeded\n"
		"  --verbose    a summary on standard error: bytes, records, data, holes\n"
		"  --json       the summary as JSON, on standard error\n",
	.run = send_run,
	.options = options,
	.short_options = ":o:v",
	.needs_pool = 1,
	.path_options = path_options,
	.output_option = "output",
	.streams = 1,
};
