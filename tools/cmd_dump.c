/*
 * dump: a thin pool's maps as thin_dump's XML (or the same tree as JSON),
 * from a committed, consistent point, to standard output or a file
 * (pool_thin_dump) that mapperctl opened (cmd.h, output_option; for a
 * regular file a temporary, renamed onto it only if the dump succeeds:
 * tools/cmd_output.c).  thin_restore turns it into dm-thin metadata.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

#define WHAT "dump"

static const struct option options[] = {
	{ "format", required_argument, NULL, 'f' },
	{ "output", required_argument, NULL, 'o' },
	{ 0 }
};

static const char *const path_options[] = { "--output", NULL };

static int dump_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	enum pool_dump_format format = POOL_DUMP_XML;
	const char *output = NULL;
	struct pool_error err;
	struct pool_dumped what;
	FILE *f;
	int c, r;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		if (c == 'f' && !strcmp(optarg, "xml"))
			format = POOL_DUMP_XML;
		else if (c == 'f' && !strcmp(optarg, "json"))
			format = POOL_DUMP_JSON;
		else if (c == 'f')
			return cmd_error(ctx, WHAT, "unknown --format '%s': use xml or json", optarg);
		else if (c == 'o')
			output = optarg;
		else
			return CMD_USAGE;
	}
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the thin POOL");
	if (r)
		return r;
	if (!output || !strcmp(output, "-"))
		output = "standard output";
	f = cmd_stream(ctx, WHAT, ctx->output, "w", output);
	if (!f)
		return CMD_FAIL;
	r = pool_thin_dump(ctx->pool, argv[ctx->optind], format, f, &what, &err);
	if (fclose(f) && !r)
		r = pool_fail(&err, -errno, "cannot write '%s': %s", output, strerror(errno));
	if (r)
		return cmd_fail(ctx, WHAT, &err);
	/* A valid dump all the same: thin_dump of an empty pool is its superblock. */
	if (!what.nr_volumes)
		cmd_note(ctx, WHAT, "thin pool '%s' has no thin volumes: the dump holds only its superblock",
			 argv[ctx->optind]);
	/* Valid too, but a restore would not read what the origin showed. */
	if (what.nr_external)
		cmd_note(ctx, WHAT, "%zu volume%s ('%s'%s) read%s an external origin, which the dump "
			 "cannot hold: restored, %s zeros where %s not written",
			 what.nr_external, what.nr_external == 1 ? "" : "s", what.first_external,
			 what.nr_external == 1 ? "" : ", ...", what.nr_external == 1 ? "s" : "",
			 what.nr_external == 1 ? "it reads" : "they read",
			 what.nr_external == 1 ? "it has" : "they have");
	return CMD_OK;
}

const struct cmd cmd_dump = {
	.name = "dump",
	.usage =
		"dump POOL [--format xml|json] [-o|--output FILE]\n"
		"\n"
		"Writes the maps of thin pool POOL as thin_dump's XML: the superblock,\n"
		"each thin volume as a device (dev_id is the volume's id; mapperfs adds\n"
		"its name and size), its single and range mappings.  Online, from a\n"
		"committed, consistent point.  thin_restore, thin_check, thin_ls,\n"
		"thin_delta and thin_rmap read it; 'mapperctl restore' takes it back.\n"
		"A pool with no thin volumes dumps its superblock alone, as\n"
		"thin_dump does, and says so on standard error.\n"
		"\n"
		"  --format F   xml (default) or json (the same tree)\n"
		"  --output F   write to file F instead of standard output (- is\n"
		"               standard output); mapperctl writes, with your rights,\n"
		"               a new file beside F (0600, or F's mode) and renames it\n"
		"               onto F once the dump succeeded: a dump that fails\n"
		"               leaves F as it was.  A pipe, a FIFO or /dev/stdout is\n"
		"               written directly.  Refused: the pool's own files, a\n"
		"               raw device (its label), a volume, a symbolic link\n",
	.run = dump_run,
	.options = options,
	.short_options = ":o:",
	.needs_pool = 1,
	.reads_only = 1,
	.path_options = path_options,
	.output_option = "output",
};
