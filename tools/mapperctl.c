/*
 * mapperctl: the admin CLI.
 *
 * It parses only the global options.  While a daemon serves the pool, the
 * command line goes to it over the control socket and the daemon runs the
 * command (it is the only writer then, and its volumes follow the change
 * at once); otherwise mapperctl runs the same command itself, holding the
 * pool's lock so that a daemon starting meanwhile, or a second mapperctl,
 * waits its turn.  `init` and --help need no pool.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "log.h"
#include "pool.h"
#include "pool_port.h"
#include "wire.h"

#define DEFAULT_POOL	"/var/lib/mapperfs"

static void usage(FILE *f)
{
	fprintf(f, "usage: mapperctl [--pool DIR] COMMAND [ARGS...]\n\ncommands:\n");
	cmd_print_commands(f);
	fprintf(f, "\nThe pool is DIR, else $MAPPERFS_POOL, else %s.\n"
		"Run 'mapperctl COMMAND --help' for a command's options; --version\n"
		"prints the version.\n",
		DEFAULT_POOL);
}

/* Parses the options before COMMAND; returns the index of COMMAND. */
static int parse_global(int argc, char **argv, const char **pool)
{
	static const struct option longopts[] = {
		{ "pool", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'V':
			printf("mapperctl %s\n", MAPPERFS_VERSION);
			exit(CMD_OK);
		case 'p':
			*pool = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(CMD_OK);
		case ':':
			fprintf(stderr, "mapperctl: option '%s' needs a value\n",
				argv[optind - 1]);
			exit(CMD_USAGE);
		default:
			fprintf(stderr, "mapperctl: unknown option '%s' (see 'mapperctl --help')\n",
				argv[optind - 1]);
			exit(CMD_USAGE);
		}
	}
	if (optind == argc) {
		fprintf(stderr, "mapperctl: no command given (see 'mapperctl --help')\n");
		exit(CMD_USAGE);
	}
	return optind;
}

/* The daemon runs the command (reading @input, if it has one); we print what it said. */
static int run_remote(int fd, const char *pool, int argc, char **argv, int input)
{
	char *out = NULL, *err = NULL;
	int status, r;

	r = wire_send_request(fd, argc, argv, input);
	if (!r)
		r = wire_recv_response(fd, &status, &out, &err);
	close(fd);
	if (r) {
		fprintf(stderr, "mapperctl: lost the daemon of pool '%s': %s\n", pool,
			strerror(-r));
		return CMD_FAIL;
	}
	fputs(out, stdout);
	fputs(err, stderr);
	free(out);
	free(err);
	return status;
}

/* Takes the pool's lock; returns its descriptor or -1 after a message. */
static int lock_pool(const char *pool)
{
	int fd = pool_lock(pool);

	if (fd == -EBUSY)
		fprintf(stderr, "mapperctl: pool '%s' is in use by another process\n", pool);
	else if (fd < 0)
		fprintf(stderr, "mapperctl: cannot lock pool '%s': %s\n", pool, strerror(-fd));
	return fd < 0 ? -1 : fd;
}

/* No daemon: open the pool here, under its lock, and run the command. */
static int run_local(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_error err;
	char db[PATH_MAX];
	struct stat st;
	int lock, status;

	if (snprintf(db, sizeof(db), "%s/pool.db", ctx->pool_dir) >= (int)sizeof(db)) {
		fprintf(stderr, "mapperctl: pool path '%s' is too long\n", ctx->pool_dir);
		return CMD_FAIL;
	}
	if (stat(db, &st) < 0 && errno == ENOENT) {
		fprintf(stderr, "mapperctl: no pool at '%s' (run 'mapperctl init')\n",
			ctx->pool_dir);
		return CMD_FAIL;
	}
	lock = lock_pool(ctx->pool_dir);
	if (lock < 0)
		return CMD_FAIL;
	if (pool_open(ctx->pool_dir, pool_port_open, &ctx->pool, &err)) {
		fprintf(stderr, "mapperctl: %s\n", err.msg);
		close(lock);
		return CMD_FAIL;
	}
	status = cmd_dispatch(ctx, argc, argv);
	pool_close(ctx->pool);
	close(lock);
	return status;
}

int main(int argc, char **argv)
{
	const char *pool = getenv("MAPPERFS_POOL");
	struct cmd_ctx ctx = { .input = -1, .out = stdout, .err = stderr,
			       .open_meta = pool_port_open };
	struct pool_error err;
	const struct cmd *c;
	int first, words, fd;

	log_init("mapperctl");
	log_set_level(LOG_LEVEL_WARN);
	if (!pool || !*pool)
		pool = DEFAULT_POOL;
	first = parse_global(argc, argv, &pool);
	argc -= first;
	argv += first;
	ctx.pool_dir = pool;
	c = cmd_find(argc, argv, &words);
	if (c && !cmd_help_requested(argc - words, argv + words) &&
	    cmd_absolute_paths(c, argc - words + 1, argv + words - 1, &err)) {
		fprintf(stderr, "mapperctl: %s: %s\n", c->name, err.msg);
		return CMD_FAIL;
	}
	if (!c || !c->needs_pool || cmd_help_requested(argc - words, argv + words))
		return cmd_dispatch(&ctx, argc, argv);
	if (cmd_open_input(c, argc - words + 1, argv + words - 1, &ctx.input, &err)) {
		fprintf(stderr, "mapperctl: %s: %s\n", c->name, err.msg);
		return CMD_FAIL;
	}
	fd = wire_connect(pool);
	if (fd >= 0)
		return run_remote(fd, pool, argc, argv, ctx.input);
	if (fd != -ENOENT && fd != -ECONNREFUSED) {
		fprintf(stderr, "mapperctl: cannot reach the daemon of pool '%s': %s\n", pool,
			strerror(-fd));
		return CMD_FAIL;
	}
	return run_local(&ctx, argc, argv);
}
