/*
 * tools/cmd_parse.c: what every command calls to read its arguments, to
 * take the file mapperctl opened for it, and to say what went wrong, in
 * one line.
 *
 * The daemon runs commands on several threads at once, so that a report
 * never waits behind a change that waits on a device; the pool service
 * orders the changes.  Only parsing cannot be shared: getopt keeps its
 * state in globals.  So a command parses under parse_lock, taken by
 * cmd_dispatch (cmd_parse_begin) before it runs the command and let go
 * by cmd_next_option when the options are done, which copies getopt's
 * optind into the command's ctx first; a command that returns before (a bad value) lets
 * it go on its way out of cmd_dispatch.
 */
#include "cmd.h"
#include "cmd_parse.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t parse_lock = PTHREAD_MUTEX_INITIALIZER;
/* The short options of the command that holds parse_lock. */
static const char *short_options = ":";

void cmd_parse_begin(struct cmd_ctx *ctx, const struct cmd *c)
{
	pthread_mutex_lock(&parse_lock);
	ctx->parsing = true;
	ctx->optind = 1;
	short_options = c->short_options ? c->short_options : ":";
}

void cmd_parse_end(struct cmd_ctx *ctx)
{
	if (!ctx->parsing)
		return;
	ctx->optind = optind;
	ctx->parsing = false;
	pthread_mutex_unlock(&parse_lock);
}

/*
 * Names and paths come from users and may hold a newline: control
 * characters are escaped so an error stays one line.
 */
static int verror(struct cmd_ctx *ctx, int status, const char *what,
		  const char *fmt, va_list ap)
{
	char *msg;

	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	fprintf(ctx->err, "mapperctl: %s: ", what);
	for (const unsigned char *p = (unsigned char *)(msg ? msg : fmt); *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			fprintf(ctx->err, "\\x%02x", *p);
		else
			fputc(*p, ctx->err);
	}
	fputc('\n', ctx->err);
	free(msg);
	return status;
}

int cmd_error(struct cmd_ctx *ctx, const char *what, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = verror(ctx, CMD_FAIL, what, fmt, ap);
	va_end(ap);
	return r;
}

int cmd_usage_error(struct cmd_ctx *ctx, const char *what, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = verror(ctx, CMD_USAGE, what, fmt, ap);
	va_end(ap);
	return r;
}

int cmd_thin_pool_option(struct cmd_ctx *ctx, const char *what, const char *arg)
{
	if (!strchr(arg, '/'))
		return 0;
	return cmd_usage_error(ctx, what, "--pool %s: after the command, --pool names a thin "
			       "pool (a volume), not a path; the pool directory goes before it: "
			       "mapperctl --pool DIR %s ...", arg, what);
}

int cmd_fail(struct cmd_ctx *ctx, const char *what, const struct pool_error *err)
{
	return cmd_error(ctx, what, "%s", err->msg);
}

void cmd_note(struct cmd_ctx *ctx, const char *what, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(ctx, CMD_OK, what, fmt, ap);
	va_end(ap);
}

int cmd_next_option(struct cmd_ctx *ctx, const char *what, int argc, char **argv,
		    const struct option *options, int first)
{
	static const struct option none[] = { { 0 } };
	int c;

	if (first) {
		optind = 0;
		opterr = 0;
	}
	c = getopt_long(argc, argv, short_options, options ? options : none, NULL);
	if (c == '?' && optopt) {
		cmd_usage_error(ctx, what, "unknown option '-%c' (see 'mapperctl %s --help')",
				optopt, what);
		c = CMD_OPTION_ERROR;
	} else if (c == '?') {
		cmd_usage_error(ctx, what, "unknown option '%s' (see 'mapperctl %s --help')",
				argv[optind - 1], what);
		c = CMD_OPTION_ERROR;
	} else if (c == ':') {
		cmd_usage_error(ctx, what, "option '%s' needs a value", argv[optind - 1]);
		c = CMD_OPTION_ERROR;
	}
	if (c == -1 || c == CMD_OPTION_ERROR)
		cmd_parse_end(ctx);
	return c;
}

int cmd_args(struct cmd_ctx *ctx, const char *what, int argc, char **argv,
	     int min, int max, const char *missing)
{
	int n = argc - ctx->optind;

	if (n < min)
		return cmd_usage_error(ctx, what, "missing %s (see 'mapperctl %s --help')",
				       missing, what);
	if (n > max)
		return cmd_usage_error(ctx, what, "unexpected argument '%s'",
				       argv[ctx->optind + max]);
	return 0;
}

int cmd_json_args(struct cmd_ctx *ctx, const char *what, int argc, char **argv,
		  int *as_json, int min, int max, const char *missing)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ 0 }
	};
	int c;

	*as_json = 0;
	for (int first = 1; (c = cmd_next_option(ctx, what, argc, argv, options, first)) != -1;
	     first = 0) {
		if (c != 'j')
			return CMD_USAGE;
		*as_json = 1;
	}
	return cmd_args(ctx, what, argc, argv, min, max, missing);
}

FILE *cmd_stream(struct cmd_ctx *ctx, const char *what, int fd, const char *mode,
		 const char *name)
{
	const char *verb = mode[0] == 'r' ? "read" : "write";
	int own = fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0);
	FILE *f;

	if (fd < 0) {
		cmd_error(ctx, what, "cannot %s '%s': mapperctl did not open it", verb, name);
		return NULL;
	}
	if (own < 0) {
		cmd_error(ctx, what, "cannot %s '%s': %s", verb, name, strerror(errno));
		return NULL;
	}
	f = fdopen(own, mode);
	if (!f) {
		close(own);
		cmd_error(ctx, what, "out of memory");
	}
	return f;
}
