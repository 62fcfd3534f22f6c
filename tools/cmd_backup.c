/*
 * backup: the pool's layout as text (vgcfgbackup), to standard output or a
 * file mapperctl opened (cmd.h, output_option).  The archive keeps one
 * before every change by itself (POOL/archive/); restore-layout reads
 * either back.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

#define WHAT "backup"

static const struct option options[] = {
	{ "output", required_argument, NULL, 'o' },
	{ 0 }
};

static const char *const path_options[] = { "--output", NULL };

/* Whether @path (absolute: mapperctl made it so) lies in POOL/archive. */
static bool in_archive(const char *pool_dir, const char *path)
{
	char archive[PATH_MAX + 16], *real_archive, *real = NULL, *dir = strdup(path);
	bool in = false;

	snprintf(archive, sizeof(archive), "%s/archive", pool_dir);
	real_archive = realpath(archive, NULL);
	if (dir && real_archive && strrchr(dir, '/')) {
		/* the file may not exist yet: its directory says where it is */
		*strrchr(dir, '/') = 0;
		real = realpath(*dir ? dir : "/", NULL);
		in = real && !strcmp(real, real_archive);
	}
	free(real);
	free(real_archive);
	free(dir);
	return in;
}

static int backup_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	const char *output = "standard output";
	struct pool_error err;
	FILE *f;
	int c, r;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		if (c != 'o')
			return CMD_USAGE;
		if (strcmp(optarg, "-"))
			output = optarg;
	}
	r = cmd_args(ctx, WHAT, argc, argv, 0, 0, "");
	if (r)
		return r;
	if (output[0] == '/' && in_archive(ctx->pool_dir, output))
		return cmd_error(ctx, WHAT, "'%s' is in the pool's archive, which keeps the layouts "
				 "as they were: write the backup elsewhere", output);
	f = cmd_stream(ctx, WHAT, ctx->output, "w", output);
	if (!f)
		return CMD_FAIL;
	r = pool_backup(ctx->pool, f, &err);
	if (fclose(f) && !r)
		r = pool_fail(&err, -errno, "cannot write '%s': %s", output, strerror(errno));
	return r ? cmd_fail(ctx, WHAT, &err) : CMD_OK;
}

const struct cmd cmd_backup = {
	.name = "backup",
	.usage =
		"backup [-o|--output FILE]\n"
		"\n"
		"Writes the pool's layout (devices, volumes and their extents, switch\n"
		"tables, thin pools and their policies, thin volumes; not the thin\n"
		"maps: 'dump' keeps those) as text, as vgcfgbackup does, to standard\n"
		"output or FILE.  Before every change the pool also keeps the layout\n"
		"it had in POOL/archive/SEQ.layout (the newest 10, and any younger\n"
		"than 30 days), and every raw device carries a copy of the current\n"
		"one.  'mapperctl restore-layout FILE' puts one back.\n",
	.run = backup_run,
	.options = options,
	.short_options = ":o:",
	.needs_pool = 1,
	.reads_only = 1,
	.path_options = path_options,
	.output_option = "output",
};
