/*
 * receive: a stream that `mapperctl send` wrote, applied as a new
 * read-only thin volume, all or nothing (pool_receive), from standard
 * input or a file that mapperctl opened (cmd.h, input_option; a pipe is
 * read as it comes: cmd.h, streams).  One line says what came.
 */
#include <unistd.h>

#include "cmd.h"
#include "json.h"
#include "size.h"

#define WHAT "receive"

static const struct option options[] = {
	{ "from", required_argument, NULL, 'i' },
	{ "pool", required_argument, NULL, 'p' },
	{ "active", no_argument, NULL, 'a' },
	{ "abort", no_argument, NULL, 'x' },
	{ "json", no_argument, NULL, 'j' },
	{ 0 }
};

static const char *const path_options[] = { "--from", NULL };

static void print_received(struct cmd_ctx *ctx, const char *name, const struct pool_streamed *s,
			   bool as_json)
{
	char bytes[SIZE_STR_LEN], data[SIZE_STR_LEN], holes[SIZE_STR_LEN], at[SIZE_STR_LEN];
	struct json j;

	if (as_json) {
		json_init(&j, ctx->out, JSON_PRETTY);
		json_object_begin(&j, NULL);
		json_string(&j, "volume", name);
		if (s->base[0])
			json_string(&j, "snapshot_of", s->base);
		cmd_json_streamed(&j, s);
		json_object_end(&j);
		fputc('\n', ctx->out);
		return;
	}
	fprintf(ctx->out, "received '%s'%s%s%s: %s of stream, %llu record%s: %s of data, %s of "
		"holes", name, s->base[0] ? " (a snapshot of '" : "", s->base,
		s->base[0] ? "')" : "", format_size(s->bytes, bytes),
		(unsigned long long)s->records, s->records == 1 ? "" : "s",
		format_size(s->data_bytes, data),
		format_size(s->hole_bytes, holes));
	if (s->resumed_at)
		fprintf(ctx->out, "; went on from byte %llu (%s)", (unsigned long long)s->resumed_at,
			format_size(s->resumed_at, at));
	fputc('\n', ctx->out);
}

static int receive_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_receive_spec spec = { .fd = ctx->input, .caller = ctx->caller };
	bool abort_it = false, as_json = false;
	struct pool_streamed got;
	struct pool_error err;
	int c, r;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		if (c == 'p' && (r = cmd_thin_pool_option(ctx, WHAT, optarg)))
			return r;
		else if (c == 'p')
			spec.thin_pool = optarg;
		else if (c == 'a')
			spec.active = true;
		else if (c == 'x')
			abort_it = true;
		else if (c == 'j')
			as_json = true;
		else if (c != 'i')
			return CMD_USAGE;
	}
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the NAME of the volume to make");
	if (r)
		return r;
	spec.name = argv[ctx->optind];
	if (abort_it) {
		if (pool_receive_abort(ctx->pool, spec.name, &err))
			return cmd_fail(ctx, WHAT, &err);
		fprintf(ctx->out, "dropped what a receive of '%s' had applied\n", spec.name);
		return CMD_OK;
	}
	if (spec.fd < 0)
		return cmd_error(ctx, WHAT, "cannot read the stream: mapperctl did not open it");
	if (isatty(spec.fd))	/* as zfs receive: nobody types a stream */
		return cmd_error(ctx, WHAT, "refusing to read the stream from a terminal: pipe it "
				 "(mapperctl send VOLUME | ...) or give --from FILE");
	if (pool_receive(ctx->pool, &spec, &got, &err))
		return cmd_fail(ctx, WHAT, &err);
	print_received(ctx, spec.name, &got, as_json);
	return CMD_OK;
}

const struct cmd cmd_receive = {
	.name = "receive",
	.usage =
		"receive NAME [--from FILE|-] [--pool THIN_POOL] [--active] [--json]\n"
		"receive NAME --abort\n"
		"\n"
		"Applies a stream that 'mapperctl send' wrote (standard input unless\n"
		"--from names a file) as the new read-only thin volume NAME, all or\n"
		"nothing: a full stream makes a volume, an incremental one (what\n"
		"changed since a snapshot) a snapshot of its base, which this pool\n"
		"must hold (received earlier, or its own).  Every checksum is checked\n"
		"before NAME exists: a damaged stream leaves nothing.  A stream that\n"
		"stops early keeps what it applied in the inactive volume '.recv.NAME';\n"
		"the same receive again goes on from there, or one of the rest alone,\n"
		"which 'mapperctl send' writes from the byte it says.  It prints one\n"
		"line: the stream's bytes, records, data and holes.\n"
		"\n"
		"  --from F     read the stream from file F (- is standard input)\n"
		"  --pool P     the thin pool of a full stream (needed if there are\n"
		"               several)\n"
		"  --active     make NAME a file in the mount at once (else inactive,\n"
		"               as snapshots are: 'mapperctl activate NAME')\n"
		"  --abort      drop what a receive of NAME cut short had applied\n"
		"  --json       the summary as JSON\n",
	.run = receive_run,
	.options = options,
	.needs_pool = 1,
	.path_options = path_options,
	.input_option = "from",
	.streams = 1,
};
