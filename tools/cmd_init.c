/*
 * init: a new pool is a directory (0700: it holds the control socket) with
 * an empty database in it.  Registering devices is a separate step.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd.h"
#include "opts.h"
#include "store.h"

#define WHAT "init"

/* mkdir -p with mode 0700 for what it creates. */
static int make_dirs(const char *dir)
{
	char path[PATH_MAX];
	size_t len = strlen(dir);
	char c;

	if (len >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, dir, len + 1);
	for (char *p = path + 1; ; p++) {
		if (*p && *p != '/')
			continue;
		c = *p;
		*p = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = c;
		if (!c)
			break;
	}
	return 0;
}

static int init_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = { { 0 } };
	const char *dir = ctx->pool_dir;
	char db[PATH_MAX];
	struct store *s;
	int r;

	if (opts_next(ctx, WHAT, argc, argv, longopts, 1) != -1)
		return CMD_USAGE;
	r = opts_args(ctx, WHAT, argc, argv, 0, 1, "");
	if (r)
		return r;
	if (optind < argc)
		dir = argv[optind];
	if (snprintf(db, sizeof(db), "%s/pool.db", dir) >= (int)sizeof(db))
		return cmd_error(ctx, WHAT, "pool path '%s' is too long", dir);
	r = make_dirs(dir);
	if (r)
		return cmd_error(ctx, WHAT, "cannot create directory '%s': %s", dir,
				 strerror(-r));
	r = store_open(db, STORE_CREATE, &s);
	if (r == -EEXIST)
		return cmd_error(ctx, WHAT, "a pool exists at '%s' already", dir);
	if (r)
		return cmd_error(ctx, WHAT, "cannot create pool database '%s': %s",
				 db, strerror(-r));
	store_close(s);
	fprintf(ctx->out, "created pool '%s'\n", dir);
	return CMD_OK;
}

const struct cmd cmd_init = {
	.name = "init",
	.usage =
		"init [DIR]\n"
		"\n"
		"Creates a pool: the directory DIR (default: the --pool directory),\n"
		"mode 0700, and its database DIR/pool.db.  Add devices with\n"
		"'mapperctl device add'.\n",
	.run = init_run,
};
