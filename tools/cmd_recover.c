/*
 * recover: the pool database rebuilt from the layout copies its raw
 * devices carry (pool_recover), when pool.db is lost or damaged.  Runs in
 * mapperctl only, like init: there is no pool for a daemon to serve.
 */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

#define WHAT "recover"

static const struct option options[] = {
	{ "devices", no_argument, NULL, 'd' },
	{ "dump", required_argument, NULL, 'm' },
	{ "force", no_argument, NULL, 'f' },
	{ 0 }
};

static int recover_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_recover_spec s = { .dir = ctx->pool_dir };
	struct pool_recover_dump *dumps;
	struct pool_error err;
	char **paths = NULL;
	bool devices = false;
	size_t nr_dumps = 0;
	int c, r;

	dumps = calloc((size_t)argc, sizeof(*dumps));
	if (!dumps)
		return cmd_error(ctx, WHAT, "out of memory");
	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		struct pool_recover_dump *d = &dumps[nr_dumps];
		char *eq;

		if (c == 'd') {
			devices = true;
		} else if (c == 'f') {
			s.force = true;
		} else if (c == 'm' && (eq = strchr(optarg, '=')) && eq != optarg && eq[1]) {
			nr_dumps++;
			d->pool = strndup(optarg, (size_t)(eq - optarg));
			d->path = cmd_absolute(eq + 1, &err);
			if (!d->path) {
				r = cmd_fail(ctx, WHAT, &err);
				goto out;
			}
			if (!d->pool) {
				r = cmd_error(ctx, WHAT, "out of memory");
				goto out;
			}
		} else if (c == 'm') {
			r = cmd_error(ctx, WHAT, "--dump takes THIN-POOL=FILE, not '%s'", optarg);
			goto out;
		} else {
			r = CMD_USAGE;
			goto out;
		}
	}
	if (!devices || ctx->optind == argc) {
		r = cmd_usage_error(ctx, WHAT, "name the raw devices: --devices PATH...");
		goto out;
	}
	s.nr_paths = (size_t)(argc - ctx->optind);
	paths = calloc(s.nr_paths, sizeof(*paths));
	if (!paths) {
		r = cmd_error(ctx, WHAT, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < s.nr_paths; i++) {
		paths[i] = cmd_absolute(argv[ctx->optind + (int)i], &err);
		if (!paths[i]) {
			r = cmd_fail(ctx, WHAT, &err);
			goto out;
		}
	}
	s.paths = paths;
	s.dumps = dumps;
	s.nr_dumps = nr_dumps;
	r = pool_recover(&s, ctx->open_meta, ctx->out, &err) ? cmd_fail(ctx, WHAT, &err) : CMD_OK;
	if (r == CMD_OK)
		fprintf(ctx->out, "recovered pool '%s': start mapperfs to serve it\n", s.dir);
out:
	for (size_t i = 0; paths && i < s.nr_paths; i++)
		free(paths[i]);
	free(paths);
	for (size_t i = 0; i < nr_dumps; i++) {
		free((char *)dumps[i].pool);
		free((char *)dumps[i].path);
	}
	free(dumps);
	return r;
}

const struct cmd cmd_recover = {
	.name = "recover",
	.usage =
		"recover --devices PATH... [--dump THIN-POOL=FILE]... [--force]\n"
		"\n"
		"Rebuilds the pool database from the copies of the layout that every\n"
		"raw device carries, when POOL/pool.db is lost or damaged (a damaged\n"
		"one is moved aside to pool.db.damaged-TIME).  Reads each PATH's label\n"
		"and copies; the newest good copy wins, and a device whose copy is\n"
		"stale, damaged or missing is named.  Linear and switch volumes and\n"
		"thin pools come back as they were; thin volumes are reported lost\n"
		"(their maps were in the database) unless a dump of their pool is\n"
		"given.  No daemon may serve the pool.\n"
		"\n"
		"  --dump THIN-POOL=FILE  restores the thin volumes of THIN-POOL from\n"
		"           FILE ('mapperctl dump' XML), as 'restore' does\n"
		"  --force  rebuild although pool.db is readable, a device of the\n"
		"           layout is not among PATHs (it stays failed until back), or\n"
		"           the devices' copies are stale (the layout outgrew their\n"
		"           metadata area: the last copy that fitted is used)\n",
	.run = recover_run,
	.options = options,
};
