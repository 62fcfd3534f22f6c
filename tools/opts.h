/*
 * tools/opts.h: argument parsing and messages the command files share.
 *
 * Commands parse with getopt_long, long options only, positional
 * arguments anywhere (getopt permutes them to the end).  getopt keeps its
 * state in globals: the daemon runs one command at a time on one thread,
 * and opts_next() starts every parse afresh (optind = 0), with getopt's own
 * messages off so that errors come out as our one-liners.
 *
 * Every helper that can fail prints its one-line error naming the value
 * and returns the command's exit status (CMD_FAIL or CMD_USAGE), or 0.
 */
#ifndef MAPPERFS_OPTS_H
#define MAPPERFS_OPTS_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

#include "cmd.h"

struct volume_rec;

#define OPTS_ERROR	(-2)	/* opts_next(): usage error printed */
#define OPTS_BLOCK	4096u	/* bytes: volume sizes and offsets align to it */

/*
 * Returns the next option's val (the caller's longopts may not use '?' or
 * ':'), -1 when the options are done and argv[optind..argc) are the
 * positional arguments, or OPTS_ERROR after printing "unknown option" or
 * "option needs a value".  Pass @first = 1 on the first call of a parse.
 */
int opts_next(struct cmd_ctx *ctx, const char *what, int argc, char **argv,
	      const struct option *longopts, int first);

/*
 * Parses a command whose only option is --json: sets *as_json, and checks
 * that min..max positional arguments follow (@missing names one).
 * 0, or CMD_USAGE after a message.
 */
int opts_json_args(struct cmd_ctx *ctx, const char *what, int argc, char **argv,
		   int *as_json, int min, int max, const char *missing);

/* Checks that min..max positional arguments are left; @missing names one. */
int opts_args(struct cmd_ctx *ctx, const char *what, int argc, char **argv,
	      int min, int max, const char *missing);

/* parse_size() with messages ("size '9999999T' is too large"). */
int opts_size(struct cmd_ctx *ctx, const char *what, const char *arg,
	      uint64_t *out);
/* A size for a volume or segment: positive, a multiple of OPTS_BLOCK. */
int opts_block_size(struct cmd_ctx *ctx, const char *what, const char *arg,
		    uint64_t *out);
/* "invalid name 'a/b': use letters, ..." */
int opts_name(struct cmd_ctx *ctx, const char *what, const char *name);

/*
 * Resolves --on arguments, each a device name or a comma list of them,
 * to distinct device ids in the order given.  *ids is malloc'ed (NULL when
 * @nr_args is 0).
 */
int opts_devices(struct cmd_ctx *ctx, const char *what, char **args,
		 size_t nr_args, int64_t **ids, size_t *nr);

/* A store call failed with @r: "cannot <doing>: <reason>". */
int opts_store_error(struct cmd_ctx *ctx, const char *what, const char *doing,
		     int r);

/*
 * Starts the command's store transaction and records the volume row @v
 * (sets v->id).  Reports "volume 'x' exists" or the store's error, and
 * returns it; the caller ends with opts_end_transaction() either way.
 */
int opts_begin_volume(struct cmd_ctx *ctx, const char *what, struct volume_rec *v);

/*
 * Ends the command's store transaction: commits it when @r is 0 (a failed
 * commit is reported), rolls it back otherwise.  Returns @r, or the
 * status of the failed commit.
 */
int opts_end_transaction(struct cmd_ctx *ctx, const char *what, int r);

/*
 * A live hook failed with @r after the commit: the change stands, so this
 * is a warning and the command still succeeds.
 */
void opts_live_result(struct cmd_ctx *ctx, const char *what, int r);

#endif
