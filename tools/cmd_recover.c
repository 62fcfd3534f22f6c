/*
 * recover: the pool database rebuilt from the layout copies its raw
 * devices carry (pool_recover), when pool.db is lost or damaged.  Runs in
 * mapperctl only, like init: there is no pool for a daemon to serve.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

#define WHAT "recover"

static const struct option options[] = {
	{ "devices", no_argument, NULL, 'd' },
	{ "dump", required_argument, NULL, 'm' },
	{ "force", no_argument, NULL, 'f' },
	{ 0 }
};

/* A --dump POOL=FILE: the thin maps of a recovered thin pool. */
struct dump {
	char *pool;
	char *file;
};

static void print_line(void *arg, const char *line)
{
	fprintf(((struct cmd_ctx *)arg)->out, "%s\n", line);
}

/*
 * Restores each thin pool's maps from its dump, on the pool opened here
 * (recover let go of its lock): what `restore POOL --from FILE` does.
 */
static int restore_dumps(struct cmd_ctx *ctx, const struct dump *dumps, size_t nr)
{
	struct pool_restore_spec rs = { 0 };
	struct pool_error err;
	struct pool *p;
	int lock, r = 0;

	lock = pool_lock(ctx->pool_dir, "'recover'");
	if (lock < 0)
		return cmd_error(ctx, WHAT, "cannot lock pool '%s' again: %s", ctx->pool_dir,
				 strerror(-lock));
	if (pool_open(ctx->pool_dir, ctx->open_meta, &p, &err)) {
		close(lock);
		return cmd_fail(ctx, WHAT, &err);
	}
	for (size_t i = 0; i < nr && !r; i++) {
		rs.xml = fopen(dumps[i].file, "re");
		if (!rs.xml) {
			r = cmd_error(ctx, WHAT, "cannot open '%s': %s", dumps[i].file,
				      strerror(errno));
			break;
		}
		if (pool_thin_restore(p, dumps[i].pool, &rs, print_line, ctx, &err))
			r = cmd_fail(ctx, WHAT, &err);
		fclose(rs.xml);
	}
	pool_close(p);
	close(lock);
	return r;
}

static int recover_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_recover_spec s = { .dir = ctx->pool_dir };
	struct dump *dumps;
	struct pool_error err;
	char **paths = NULL, cwd[PATH_MAX];
	const char **pools = NULL;
	bool devices = false;
	size_t nr_dumps = 0;
	int c, r;

	if (!getcwd(cwd, sizeof(cwd)))
		return cmd_error(ctx, WHAT, "cannot find the current directory: %s",
				 strerror(errno));
	dumps = calloc((size_t)argc, sizeof(*dumps));
	if (!dumps)
		return cmd_error(ctx, WHAT, "out of memory");
	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		struct dump *d = &dumps[nr_dumps];
		char *eq;

		if (c == 'd') {
			devices = true;
		} else if (c == 'f') {
			s.force = true;
		} else if (c == 'm' && (eq = strchr(optarg, '=')) && eq != optarg && eq[1]) {
			nr_dumps++;
			d->pool = strndup(optarg, (size_t)(eq - optarg));
			if (eq[1] == '/' ? !(d->file = strdup(eq + 1)) :
			    asprintf(&d->file, "%s/%s", cwd, eq + 1) < 0)
				d->file = NULL;
			if (!d->pool || !d->file) {
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
		const char *path = argv[ctx->optind + (int)i];

		if (path[0] == '/' ? !(paths[i] = strdup(path)) :
		    asprintf(&paths[i], "%s/%s", cwd, path) < 0) {
			paths[i] = NULL;
			r = cmd_error(ctx, WHAT, "out of memory");
			goto out;
		}
	}
	s.paths = paths;
	pools = calloc(nr_dumps + 1, sizeof(*pools));
	if (!pools) {
		r = cmd_error(ctx, WHAT, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nr_dumps; i++)
		pools[i] = dumps[i].pool;
	s.dump_pools = pools;
	s.nr_dumps = nr_dumps;
	r = pool_recover(&s, ctx->open_meta, ctx->out, &err) ? cmd_fail(ctx, WHAT, &err) : CMD_OK;
	if (r == CMD_OK && nr_dumps)
		r = restore_dumps(ctx, dumps, nr_dumps);
	if (r == CMD_OK)
		fprintf(ctx->out, "recovered pool '%s': start mapperfs to serve it\n", s.dir);
out:
	for (size_t i = 0; paths && i < s.nr_paths; i++)
		free(paths[i]);
	free(paths);
	for (size_t i = 0; i < nr_dumps; i++) {
		free(dumps[i].pool);
		free(dumps[i].file);
	}
	free(dumps);
	free(pools);
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
		"  --force  rebuild although pool.db is readable, or a device of the\n"
		"           layout is not among PATHs (it stays failed until back)\n",
	.run = recover_run,
	.options = options,
};
