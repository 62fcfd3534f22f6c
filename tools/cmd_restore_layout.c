/*
 * restore-layout: vgcfgrestore.  Puts the linear and switch volumes of a
 * layout file (a backup, or an archive entry) back into a pool that no
 * daemon serves (pool_restore_layout).  Runs in mapperctl only, like init:
 * it replaces what a daemon would be serving.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

#define WHAT "restore-layout"

static const struct option options[] = {
	{ "dry-run", no_argument, NULL, 'n' },
	{ "force", no_argument, NULL, 'f' },
	{ 0 }
};

/* The whole of @path, malloc'ed, at most CMD_INPUT_MAX bytes. */
static char *read_whole(struct cmd_ctx *ctx, const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	char *text = NULL;
	size_t cap = 0;

	*len = 0;
	if (!f) {
		cmd_error(ctx, WHAT, "cannot open '%s': %s", path, strerror(errno));
		return NULL;
	}
	for (;;) {
		size_t n;

		if (*len == cap) {
			char *g = cap < CMD_INPUT_MAX ? realloc(text, cap = cap ? cap * 2 : 65536) :
				  NULL;

			if (!g) {
				cmd_error(ctx, WHAT, "'%s' is too big for a layout", path);
				break;
			}
			text = g;
		}
		n = fread(text + *len, 1, cap - *len, f);
		*len += n;
		if (n)
			continue;
		if (!ferror(f)) {
			fclose(f);
			return text;
		}
		cmd_error(ctx, WHAT, "cannot read '%s': %s", path, strerror(errno));
		break;
	}
	fclose(f);
	free(text);
	return NULL;
}

static int restore_layout_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_restore_layout_spec s = { .dir = ctx->pool_dir };
	struct pool_error err;
	char *text;
	int c, r;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		if (c == 'n')
			s.dry_run = true;
		else if (c == 'f')
			s.force = true;
		else
			return CMD_USAGE;
	}
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the layout FILE");
	if (r)
		return r;
	s.file = argv[ctx->optind];
	text = read_whole(ctx, s.file, &s.len);
	if (!text)
		return CMD_FAIL;
	s.text = text;
	r = pool_restore_layout(&s, ctx->open_meta, ctx->out, &err);
	free(text);
	if (r)
		return cmd_fail(ctx, WHAT, &err);
	fprintf(ctx->out, s.dry_run ? "dry run: nothing changed\n" :
		"restored the layout of '%s'\n", s.file);
	return CMD_OK;
}

const struct cmd cmd_restore_layout = {
	.name = "restore-layout",
	.usage =
		"restore-layout FILE [--dry-run] [--force]\n"
		"\n"
		"Puts back the layout in FILE (from 'backup', or an archive entry\n"
		"POOL/archive/SEQ.layout), as vgcfgrestore does: every linear and\n"
		"switch volume as FILE has it, extents and region tables exactly;\n"
		"those FILE lacks are removed from the layout (their data stays on\n"
		"the devices).  Thin pools and thin volumes stay as they are: their\n"
		"maps live only in the pool database.  The pool must not be served\n"
		"(stop mapperfs first) and must have the devices FILE names.  The\n"
		"layout before is archived first.\n"
		"\n"
		"  --dry-run  print what would change, change nothing\n"
		"  --force    restore although thin volumes of FILE are gone\n"
		"             (they are named and left out)\n",
	.run = restore_layout_run,
	.options = options,
	.path_positional = 1,
};
