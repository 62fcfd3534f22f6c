/*
 * mapperctl: the admin CLI.
 *
 * It parses only the global options.  While a daemon serves the pool, the
 * command line goes to it over the control socket and the daemon runs the
 * command (it is the only writer then, and its volumes follow the change
 * at once); otherwise mapperctl runs the same command itself, holding the
 * pool's lock so that a daemon starting meanwhile, or a second mapperctl,
 * waits its turn.  It waits its own turn too, as mapperfs does
 * (lock_wait.h): a daemon that was just unmounted, or another mapperctl,
 * lets go of the lock a moment later.  `init` and --help need no pool.
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
#include "lock_wait.h"
#include "log.h"
#include "pool.h"
#include "pool_port.h"
#include "regfile.h"
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

#define RUN_AGAIN	(-1)	/* the daemon went away before it read the command */

/*
 * The daemon runs the command (reading or writing @file, if it has one,
 * which we opened for it); we print
 * what it said.  A connection reset before any answer means the daemon
 * closed it with our request unread (it was stopping): it ran nothing, so
 * RUN_AGAIN.  One that merely ends may have run it: that is an error.
 */
static int run_remote(int fd, const char *pool, int argc, char **argv, int file)
{
	char *out = NULL, *err = NULL;
	int status, r;

	r = wire_send_request(fd, argc, argv, file);
	if (!r)
		r = wire_recv_response(fd, &status, &out, &err, stderr);
	close(fd);
	if (r == -ECONNRESET || r == -EPIPE)
		return RUN_AGAIN;
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

static void say_waiting(void *arg, const char *holder)
{
	(void)arg;
	fprintf(stderr, "mapperctl: waiting for %s ...\n", holder);
}

/* Whether the command's own arguments give --pool (a thin pool, for some). */
static bool pool_option_after(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--pool") || !strncmp(argv[i], "--pool=", 7))
			return true;
	return false;
}

/*
 * No daemon: open the pool here, under its lock, and run the command.
 * The lock may be held for a moment (a daemon that was just unmounted,
 * another mapperctl): lock_wait waits for it.  RUN_AGAIN if a daemon
 * serves the pool meanwhile.
 */
static int run_local(struct cmd_ctx *ctx, const struct cmd *c, int argc, char **argv)
{
	char who[80], db[PATH_MAX];
	struct lock_wait w = { .who = who, .waiting = say_waiting };
	struct pool_error err;
	struct stat st;
	int lock, status;

	if (snprintf(db, sizeof(db), "%s/pool.db", ctx->pool_dir) >= (int)sizeof(db)) {
		fprintf(stderr, "mapperctl: %s: pool path '%s' is too long\n", c->name,
			ctx->pool_dir);
		return CMD_FAIL;
	}
	if (stat(db, &st) < 0 && errno == ENOENT) {
		fprintf(stderr, "mapperctl: %s: no pool at '%s' (run 'mapperctl init', or name "
			"the pool with --pool DIR before the command, or MAPPERFS_POOL%s)\n",
			c->name, ctx->pool_dir, pool_option_after(argc, argv) ?
			"; a --pool after the command names a thin pool" : "");
		return CMD_FAIL;
	}
	snprintf(who, sizeof(who), "'%s'", c->name);
	lock = lock_wait(ctx->pool_dir, &w);
	if (lock == -EISCONN)
		return RUN_AGAIN;
	if (lock == -EBUSY) {
		fprintf(stderr, "mapperctl: %s: pool '%s' is in use by %s\n", c->name, ctx->pool_dir,
			w.holder);
		return CMD_FAIL;
	}
	if (lock < 0) {
		fprintf(stderr, "mapperctl: %s: cannot lock pool '%s': %s/lock: %s\n", c->name,
			ctx->pool_dir, ctx->pool_dir, regfile_strerror(lock));
		return CMD_FAIL;
	}
	if (pool_open(ctx->pool_dir, pool_port_open, &ctx->pool, &err)) {
		fprintf(stderr, "mapperctl: %s: %s\n", c->name, err.msg);
		close(lock);
		return CMD_FAIL;
	}
	status = cmd_dispatch(ctx, argc, argv);
	pool_close(ctx->pool);
	close(lock);
	return status;
}

/*
 * To the daemon if one answers, else here.  Either may send us to the
 * other once: the daemon stopped before it read the command, or one
 * started while we waited for the lock.
 */
#define RUN_TRIES	4

static int run(struct cmd_ctx *ctx, const struct cmd *c, int argc, char **argv)
{
	int status = RUN_AGAIN;

	for (int i = 0; status == RUN_AGAIN && i < RUN_TRIES; i++) {
		char why[PATH_MAX + 128];
		int fd = wire_connect(ctx->pool_dir, why, sizeof(why));

		if (fd >= 0) {
			status = run_remote(fd, ctx->pool_dir, argc, argv,
					    ctx->input >= 0 ? ctx->input : ctx->output);
		} else if (fd == -ENOENT || fd == -ECONNREFUSED) {
			status = run_local(ctx, c, argc, argv);
		} else if (fd == -EPERM) {
			fprintf(stderr, "mapperctl: %s: %s: not sending it the command\n", c->name, why);
			return CMD_FAIL;
		} else {
			fprintf(stderr, "mapperctl: %s: cannot reach the daemon of pool '%s': %s\n",
				c->name, ctx->pool_dir, strerror(-fd));
			return CMD_FAIL;
		}
	}
	if (status == RUN_AGAIN) {
		fprintf(stderr, "mapperctl: %s: the daemon of pool '%s' keeps going away; "
			"try again\n", c->name, ctx->pool_dir);
		return CMD_FAIL;
	}
	return status;
}

int main(int argc, char **argv)
{
	const char *pool = getenv("MAPPERFS_POOL");
	struct cmd_ctx ctx = { .input = -1, .output = -1, .out = stdout, .err = stderr,
			       .open_meta = pool_port_open };
	struct cmd_output output;
	struct pool_error err;
	const struct cmd *c;
	int first, words, status;

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
	if (cmd_open_input(c, argc - words + 1, argv + words - 1, &ctx.input, &err) ||
	    cmd_open_output(c, ctx.pool_dir, argc - words + 1, argv + words - 1, &output, &err)) {
		fprintf(stderr, "mapperctl: %s: %s\n", c->name, err.msg);
		return CMD_FAIL;
	}
	ctx.output = output.fd;
	status = run(&ctx, c, argc, argv);
	fflush(stdout);		/* what the command printed comes before a copied output */
	if (cmd_close_output(&output, status, &err)) {
		fprintf(stderr, "mapperctl: %s: %s\n", c->name, err.msg);
		return CMD_FAIL;
	}
	return status;
}
