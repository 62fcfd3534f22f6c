/*
 * tools/cmd.c: the command table and the dispatcher both hosts share.  Command names
 * have one or two words ("list", "device add"); a first word that only
 * starts two-word commands ("device") is a group, which answers --help
 * with its members and is otherwise a usage error.
 *
 * The daemon runs commands on several threads at once; they take turns
 * only to parse their options (cmd_parse.c), which cmd_dispatch begins
 * for them.
 */
#include "cmd.h"
#include "cmd_parse.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

extern const struct cmd cmd_init, cmd_device_add, cmd_device_list, cmd_device_set,
	cmd_device_remove, cmd_create_linear, cmd_create_switch, cmd_extend,
	cmd_remove, cmd_list, cmd_status, cmd_switch_map, cmd_create_thin_pool,
	cmd_create_thin, cmd_snapshot, cmd_rollback, cmd_diff, cmd_check, cmd_reload,
	cmd_dump, cmd_restore, cmd_repair, cmd_trim, cmd_thin_metadata_size, cmd_change,
	cmd_rename, cmd_set, cmd_activate, cmd_deactivate, cmd_clone, cmd_backup,
	cmd_restore_layout, cmd_recover, cmd_reduce, cmd_replace, cmd_refresh, cmd_move,
	cmd_export, cmd_unexport, cmd_send, cmd_receive;

static const struct cmd *const cmd_table[] = {
	&cmd_init,
	&cmd_device_add,
	&cmd_device_list,
	&cmd_device_set,
	&cmd_device_remove,
	&cmd_create_linear,
	&cmd_create_switch,
	&cmd_create_thin_pool,
	&cmd_create_thin,
	&cmd_snapshot,
	&cmd_rollback,
	&cmd_clone,
	&cmd_rename,
	&cmd_set,
	&cmd_activate,
	&cmd_deactivate,
	&cmd_diff,
	&cmd_send,
	&cmd_receive,
	&cmd_check,
	&cmd_change,
	&cmd_dump,
	&cmd_backup,
	&cmd_restore_layout,
	&cmd_recover,
	&cmd_restore,
	&cmd_repair,
	&cmd_trim,
	&cmd_thin_metadata_size,
	&cmd_reload,
	&cmd_extend,
	&cmd_reduce,
	&cmd_replace,
	&cmd_refresh,
	&cmd_move,
	&cmd_remove,
	&cmd_export,
	&cmd_unexport,
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

/*
 * A usage starts with its synopsis: lines up to the first empty one.  A
 * line that starts with a space continues the one before (a synopsis that
 * wraps, indented to sit under the command's arguments); any other is
 * another form of the command.  Each synopsis line goes to @f after
 * @first (the first line) or @form (another form) or @more (a
 * continuation, which keeps its indent).  Returns where the synopsis ends.
 */
static const char *print_synopsis(FILE *f, const char *u, const char *first,
				  const char *form, const char *more)
{
	for (size_t n; *u && *u != '\n'; u += n + (u[n] == '\n')) {
		const char *lead = *u == ' ' ? more : form;

		n = strcspn(u, "\n");
		fprintf(f, "%s%.*s\n", first ? first : lead, (int)n, u);
		first = NULL;
	}
	return u;
}

/* Prints the synopsis of each usage whose name passes @group. */
static void print_synopses(FILE *f, const char *group)
{
	for (size_t i = 0; i < CMD_COUNT; i++) {
		if (group && !is_group(cmd_table[i], group))
			continue;
		print_synopsis(f, cmd_table[i]->usage, "  ", "  ", "  ");
	}
}

/* A command's --help: "usage: mapperctl SYNOPSIS", then the rest as is. */
static void print_usage(FILE *f, const char *usage)
{
	fputs(print_synopsis(f, usage, "usage: mapperctl ", "       mapperctl ",
			     "                 "), f);
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

/* "mapperctl remove lv1" for the layout archive: what made a change. */
static void name_command(int argc, char **argv)
{
	char line[512] = "mapperctl";
	size_t n = strlen(line);

	for (int i = 0; i < argc && n < sizeof(line); i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n,
				      strpbrk(argv[i], " \t'\"") ? " '%s'" : " %s", argv[i]);
	pool_set_command(line);
}

int cmd_dispatch(struct cmd_ctx *ctx, int argc, char **argv)
{
	const struct cmd *c;
	int words, r;

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
		print_usage(ctx->out, c->usage);
		return CMD_OK;
	}
	if (c->needs_pool && !ctx->pool)
		return cmd_error(ctx, c->name, "no pool is open");
	/* argv[0] of the command is its last name word, as getopt expects */
	name_command(argc, argv);
	cmd_parse_begin(ctx, c);
	r = c->run(ctx, argc - words + 1, argv + words - 1);
	cmd_parse_end(ctx);
	pool_set_command(NULL);
	return r;
}

const char *cmd_option_value(const struct cmd *c, int argc, char **argv, const char *name)
{
	static const struct option none[] = { { 0 } };
	const struct option *options = c->options ? c->options : none;
	char **copy = calloc((size_t)argc + 1, sizeof(*copy));
	const char *value = NULL;
	int ch, index;

	if (!copy)
		return NULL;
	memcpy(copy, argv, (size_t)argc * sizeof(*copy));
	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, copy, c->short_options ? c->short_options : ":",
				 options, &index)) != -1) {
		for (index = 0; ch != '?' && ch != ':' && options[index].name; index++)
			if (options[index].val == ch && options[index].has_arg &&
			    !strcmp(options[index].name, name))
				value = optarg;
	}
	free(copy);
	return value;
}

/* Reads @src to its end into a memory file, at most CMD_INPUT_MAX bytes. */
static int read_whole(int src, const char *name, int *out, struct pool_error *err)
{
	static char buf[1 << 16];
	uint64_t total = 0;
	int mem = memfd_create("mapperctl-input", MFD_CLOEXEC), r = 0;
	ssize_t n;

	if (mem < 0)
		return pool_fail(err, -errno, "cannot read '%s': %s", name, strerror(errno));
	while (!r && (n = read(src, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r = pool_fail(err, -errno, "cannot read '%s': %s", name, strerror(errno));
		else if ((total += (uint64_t)n) > CMD_INPUT_MAX)
			r = pool_fail(err, -EFBIG, "'%s' holds more than 1 GiB", name);
		else if (write(mem, buf, (size_t)n) != n)
			r = pool_fail(err, -EIO, "cannot keep what '%s' holds: %s", name,
				      strerror(errno));
	}
	if (!r && lseek(mem, 0, SEEK_SET) < 0)
		r = pool_fail(err, -errno, "cannot read '%s': %s", name, strerror(errno));
	if (r) {
		close(mem);
		return r;
	}
	*out = mem;
	return 0;
}

int cmd_open_input(const struct cmd *c, int argc, char **argv, int *input,
		   struct pool_error *err)
{
	const char *path = c->input_option ? cmd_option_value(c, argc, argv, c->input_option) : NULL;
	struct stat st;
	int fd, r;

	*input = -1;
	if (!path && c->streams && c->input_option)
		path = "-";		/* a stream comes on standard input unless named */
	if (!path)
		return 0;
	fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) :
				 fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0);
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = pool_fail(err, -errno, "cannot read '%s': %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return r;
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return pool_fail(err, -EISDIR, "cannot read '%s': %s", path, strerror(EISDIR));
	}
	if (S_ISREG(st.st_mode) || c->streams) {
		*input = fd;
		return 0;
	}
	r = read_whole(fd, path, input, err);
	close(fd);
	return r;
}
