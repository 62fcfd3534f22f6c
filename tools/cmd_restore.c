/*
 * restore: thin volumes and their maps in an empty thin pool, from
 * thin_dump XML (pool_thin_restore).  The data blocks stay where they
 * are: the XML's data block numbers are the pool's blocks.
 */
#include <errno.h>
#include <string.h>

#include "cmd.h"

#define WHAT "restore"

static const struct option options[] = {
	{ "from", required_argument, NULL, 'i' },
	{ "dry-run", no_argument, NULL, 'n' },
	{ 0 }
};

static const char *const path_options[] = { "--from", NULL };

static void print_line(void *arg, const char *line)
{
	fprintf(((struct cmd_ctx *)arg)->out, "%s\n", line);
}

static int restore_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	const char *from = NULL;
	struct pool_error err;
	int c, r, dry_run = 0;
	FILE *f;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		if (c == 'i')
			from = optarg;
		else if (c == 'n')
			dry_run = 1;
		else
			return CMD_USAGE;
	}
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the thin POOL");
	if (r)
		return r;
	if (!from)
		return cmd_usage_error(ctx, WHAT, "missing --from FILE (see 'mapperctl %s --help')", WHAT);
	f = fopen(from, "re");
	if (!f)
		return cmd_error(ctx, WHAT, "cannot open '%s': %s", from, strerror(errno));
	r = pool_thin_restore(ctx->pool, argv[optind], f, dry_run, print_line, ctx, &err);
	fclose(f);
	return r ? cmd_fail(ctx, WHAT, &err) : CMD_OK;
}

const struct cmd cmd_restore = {
	.name = "restore",
	.usage =
		"restore POOL --from FILE [--dry-run]\n"
		"\n"
		"Creates thin volumes and their maps in thin pool POOL, which must have\n"
		"no volumes, from thin_dump XML (thin_dump, or 'mapperctl dump').  The\n"
		"XML's data block numbers address POOL's blocks, whose content stays:\n"
		"restore over the data area the dump describes.  Volumes take the\n"
		"name and size that 'mapperctl dump' records, else thin<dev_id> and\n"
		"the end of their last mapping.  All or nothing.\n"
		"\n"
		"  --from FILE  the XML\n"
		"  --dry-run    check it and say what would be created; change nothing\n",
	.run = restore_run,
	.options = options,
	.needs_pool = 1,
	.path_options = path_options,
};
