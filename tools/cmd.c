/*
 * The command table and the dispatcher both transports share.  Command
 * names have one or two words ("list", "device add"); a first word that
 * only starts two-word commands ("device") is a group, which answers
 * --help with its members and is otherwise a usage error.
 */
#include "cmd.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

extern const struct cmd cmd_init, cmd_device_add, cmd_device_list,
	cmd_device_remove, cmd_create_linear, cmd_create_switch, cmd_extend,
	cmd_remove, cmd_list, cmd_status, cmd_switch_map, cmd_create_thin_pool,
	cmd_create_thin, cmd_snapshot, cmd_rollback, cmd_diff, cmd_check;

static const struct cmd *const cmd_table[] = {
	&cmd_init,
	&cmd_device_add,
	&cmd_device_list,
	&cmd_device_remove,
	&cmd_create_linear,
	&cmd_create_switch,
	&cmd_create_thin_pool,
	&cmd_create_thin,
	&cmd_snapshot,
	&cmd_rollback,
	&cmd_diff,
	&cmd_check,
	&cmd_extend,
	&cmd_remove,
	&cmd_list,
	&cmd_status,
	&cmd_switch_map,
};

#define CMD_COUNT (sizeof(cmd_table) / sizeof(cmd_table[0]))

/* Length of the first word of a command's name. */
static size_t first_word(const struct cmd *c)
{
	return strcspn(c->name, " ");
}

static int is_group(const struct cmd *c, const char *word)
{
	size_t n = first_word(c);

	return c->name[n] && strlen(word) == n && !strncmp(c->name, word, n);
}

const struct cmd *cmd_find(int argc, char **argv, int *words)
{
	for (size_t i = 0; argc >= 1 && i < CMD_COUNT; i++) {
		const struct cmd *c = cmd_table[i];

		if (!c->name[first_word(c)] && !strcmp(c->name, argv[0])) {
			*words = 1;
			return c;
		}
		if (argc >= 2 && is_group(c, argv[0]) &&
		    !strcmp(c->name + first_word(c) + 1, argv[1])) {
			*words = 2;
			return c;
		}
	}
	return NULL;
}

int cmd_help_requested(int argc, char **argv)
{
	for (int i = 0; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return 1;
	return 0;
}

/* Prints the first line of each usage whose name passes @group. */
static void print_synopses(FILE *f, const char *group)
{
	for (size_t i = 0; i < CMD_COUNT; i++) {
		const char *u = cmd_table[i]->usage;

		if (group && !is_group(cmd_table[i], group))
			continue;
		fprintf(f, "  %.*s\n", (int)strcspn(u, "\n"), u);
	}
}

void cmd_print_commands(FILE *f)
{
	print_synopses(f, NULL);
}

/* "device" alone, or "device frob": list what the group has. */
static int dispatch_group(struct cmd_ctx *ctx, int argc, char **argv)
{
	if (cmd_help_requested(argc - 1, argv + 1)) {
		fprintf(ctx->out, "usage:\n");
		print_synopses(ctx->out, argv[0]);
		return CMD_OK;
	}
	if (argc == 1)
		return cmd_usage_error(ctx, argv[0], "missing sub-command (see 'mapperctl %s --help')",
				       argv[0]);
	return cmd_usage_error(ctx, argv[0], "unknown sub-command '%s' (see 'mapperctl %s --help')",
			       argv[1], argv[0]);
}

int cmd_dispatch(struct cmd_ctx *ctx, int argc, char **argv)
{
	const struct cmd *c;
	int words;

	if (argc < 1) {
		fprintf(ctx->err, "mapperctl: no command given (see 'mapperctl --help')\n");
		return CMD_USAGE;
	}
	c = cmd_find(argc, argv, &words);
	if (!c) {
		for (size_t i = 0; i < CMD_COUNT; i++)
			if (is_group(cmd_table[i], argv[0]))
				return dispatch_group(ctx, argc, argv);
		fprintf(ctx->err, "mapperctl: unknown command '%s' (see 'mapperctl --help')\n",
			argv[0]);
		return CMD_USAGE;
	}
	if (cmd_help_requested(argc - words, argv + words)) {
		fprintf(ctx->out, "usage: mapperctl %s", c->usage);
		return CMD_OK;
	}
	if (c->needs_store && !ctx->store)
		return cmd_error(ctx, c->name, "no pool is open");
	/* argv[0] of the command is its last name word, as getopt expects */
	return c->run(ctx, argc - words + 1, argv + words - 1);
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
