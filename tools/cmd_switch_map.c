/*
 * switch-map: changes (or prints) a switch volume's region table with
 * dm-switch's set_region_mappings arguments, all or nothing
 * (pool_switch_map).
 *
 * --file F reads the arguments from F (any white space between them),
 * which is how a table of millions of regions is sent: mapperctl opens F
 * (a file, a pipe, a FIFO, or "-", its standard input) and hands the open
 * file to the daemon with the request (cmd.h, input_option), so the
 * request stays small and `--file <(...)` works online too.  --dump
 * prints the table in the same syntax.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "switch_msg.h"

#define WHAT "switch-map"

struct map_args {
	const char *name;
	const char *file;		/* --file, or NULL */
	int dump;
	char **argv;			/* the message, unless --file/--dump */
	size_t argc;
};

static const struct option options[] = {
	{ "file", required_argument, NULL, 'f' },
	{ "dump", no_argument, NULL, 'd' },
	{ 0 }
};

static const char *const path_options[] = { "--file", NULL };

static int parse(struct cmd_ctx *ctx, int argc, char **argv, struct map_args *a)
{
	int c, r;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		switch (c) {
		case 'f': a->file = optarg; break;
		case 'd': a->dump = 1; break;
		default: return CMD_USAGE;
		}
	}
	r = cmd_args(ctx, WHAT, argc, argv, 1, argc, "the volume NAME");
	if (r)
		return r;
	a->name = argv[ctx->optind];
	a->argv = argv + ctx->optind + 1;
	a->argc = (size_t)(argc - ctx->optind - 1);
	if (a->file && a->dump)
		return cmd_usage_error(ctx, WHAT, "--file and --dump exclude each other");
	if ((a->file || a->dump) && a->argc)
		return cmd_usage_error(ctx, WHAT, "unexpected argument '%s' after %s",
				       a->argv[0], a->file ? "--file" : "--dump");
	if (!a->file && !a->dump && !a->argc)
		return cmd_usage_error(ctx, WHAT, "missing the mappings (see 'mapperctl %s --help')",
				       WHAT);
	return 0;
}

/*
 * The whole of the input mapperctl opened for --file (named @path in
 * messages), NUL-terminated, in *text (malloc'ed): it grows with what
 * arrives, up to CMD_INPUT_MAX bytes.
 */
static int read_file(struct cmd_ctx *ctx, const char *path, char **text)
{
	size_t done = 0, cap = 0;
	char *buf = NULL, *tmp;
	struct stat st;
	ssize_t n = 1;

	if (ctx->input < 0)
		return cmd_error(ctx, WHAT, "cannot read '%s': mapperctl did not open it", path);
	if (!fstat(ctx->input, &st) && S_ISREG(st.st_mode) && (uint64_t)st.st_size > CMD_INPUT_MAX)
		return cmd_error(ctx, WHAT, "'%s' holds more than 1 GiB", path);
	while (n) {
		if (cap - done < 2) {
			cap = !cap ? 1 << 16 : 2 * cap < CMD_INPUT_MAX + 2 ? 2 * cap :
			      CMD_INPUT_MAX + 2;	/* room to see one byte too many */
			tmp = realloc(buf, cap);
			if (!tmp) {
				free(buf);
				return cmd_error(ctx, WHAT, "out of memory");
			}
			buf = tmp;
		}
		n = read(ctx->input, buf + done, cap - done - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return cmd_error(ctx, WHAT, "cannot read '%s': %s", path, strerror(errno));
		}
		done += (size_t)n;
		if (done > CMD_INPUT_MAX) {
			free(buf);
			return cmd_error(ctx, WHAT, "'%s' holds more than 1 GiB", path);
		}
	}
	buf[done] = '\0';
	if (strlen(buf) != done) {
		size_t at = strlen(buf);

		free(buf);
		return cmd_error(ctx, WHAT, "'%s' holds a NUL byte at offset %zu: it is not a text of mappings",
				 path, at);
	}
	*text = buf;
	return 0;
}

/* The mappings: the arguments, or the words of --file. */
static int remap(struct cmd_ctx *ctx, const struct map_args *a)
{
	char **argv = a->argv, *text = NULL;
	uint64_t changed, nr_regions;
	struct pool_error err;
	size_t argc = a->argc;
	int r;

	if (a->file) {
		r = read_file(ctx, a->file, &text);
		if (!r && switch_msg_split(text, &argv, &argc))
			r = cmd_error(ctx, WHAT, "out of memory");
		if (!r && !argc)
			r = cmd_error(ctx, WHAT, "'%s' holds no mappings", a->file);
		if (r)
			goto out;
	}
	r = pool_switch_map(ctx->pool, a->name, argc, argv, &changed, &nr_regions, &err);
	if (r)
		r = cmd_fail(ctx, WHAT, &err);
	else
		fprintf(ctx->out, "switch volume '%s': %llu of %llu regions changed path\n",
			a->name, (unsigned long long)changed, (unsigned long long)nr_regions);
	if (a->file)
		free(argv);
out:
	free(text);
	return r;
}

static int switch_map_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct map_args a = { 0 };
	struct pool_error err;
	int r;

	r = parse(ctx, argc, argv, &a);
	if (r)
		return r;
	if (!a.dump)
		return remap(ctx, &a);
	if (pool_switch_dump(ctx->pool, a.name, ctx->out, &err))
		return cmd_fail(ctx, WHAT, &err);
	return CMD_OK;
}

const struct cmd cmd_switch_map = {
	.name = "switch-map",
	.usage =
		"switch-map NAME MAPPING...\n"
		"switch-map NAME --file FILE\n"
		"switch-map NAME --dump\n"
		"\n"
		"Changes which path serves which region of the switch volume NAME,\n"
		"with dm-switch's set_region_mappings arguments, all numbers in\n"
		"hexadecimal (no 0x):\n"
		"\n"
		"  INDEX:PATH  region INDEX goes to path PATH\n"
		"  :PATH       the region after the last one named goes to PATH\n"
		"  Rn,m        repeat the last n regions m more times\n"
		"\n"
		"The last region named starts at 0, as in dm-switch.  The change is\n"
		"all or nothing: if any argument is bad, the error names it and the\n"
		"table stays as it was.  The table is kept in the pool and survives\n"
		"a restart of the daemon.\n"
		"\n"
		"  --file FILE  read the mappings from FILE (a file, a pipe, a FIFO, or -\n"
		"               for standard input; at most 1 GiB), separated by white\n"
		"               space\n"
		"  --dump       print the table as mappings, with R where it repeats\n",
	.run = switch_map_run,
	.options = options,
	.needs_pool = 1,
	.path_options = path_options,
	.input_option = "file",
};
