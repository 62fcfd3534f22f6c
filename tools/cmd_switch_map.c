/*
 * switch-map: changes (or prints) a switch volume's region table with
 * dm-switch's set_region_mappings arguments.
 *
 * The table is read from the store into a private copy, the whole
 * message is applied to the copy (switch_msg.h), and only if every
 * argument was good is the copy written back, in one transaction; then
 * the daemon publishes the words that changed into the live table.  So
 * a message is all or nothing, and the first bad argument is named.
 *
 * --file F reads the arguments from F (any white space between them),
 * which is how a table of millions of regions is sent: mapperctl makes F
 * absolute and the daemon reads it (cmd.file_option), so the request
 * stays small.  --dump prints the table in the same syntax.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "opts.h"
#include "store.h"
#include "store_switch.h"
#include "switch_msg.h"
#include "switch_table.h"

#define WHAT "switch-map"
#define FILE_MAX	(1u << 30)	/* bytes: a message file at most */

struct map_args {
	const char *name;
	const char *file;		/* --file, or NULL */
	int dump;
	char **argv;			/* the message, unless --file/--dump */
	size_t argc;
};

static int parse(struct cmd_ctx *ctx, int argc, char **argv, struct map_args *a)
{
	static const struct option longopts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "dump", no_argument, NULL, 'd' },
		{ 0 }
	};
	int c, r;

	for (int first = 1; (c = opts_next(ctx, WHAT, argc, argv, longopts, first)) != -1;
	     first = 0) {
		switch (c) {
		case 'f': a->file = optarg; break;
		case 'd': a->dump = 1; break;
		default: return CMD_USAGE;
		}
	}
	r = opts_args(ctx, WHAT, argc, argv, 1, argc, "the volume NAME");
	if (r)
		return r;
	a->name = argv[optind];
	a->argv = argv + optind + 1;
	a->argc = (size_t)(argc - optind - 1);
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

/* The whole of @path, NUL-terminated, in *text (malloc'ed). */
static int read_file(struct cmd_ctx *ctx, const char *path, char **text)
{
	struct stat st;
	size_t done = 0;
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = cmd_error(ctx, WHAT, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > FILE_MAX) {
		r = cmd_error(ctx, WHAT, "'%s' is not a regular file of at most 1 GiB", path);
		goto out;
	}
	*text = malloc((size_t)st.st_size + 1);
	if (!*text) {
		r = cmd_error(ctx, WHAT, "out of memory");
		goto out;
	}
	while (done < (size_t)st.st_size) {
		ssize_t n = read(fd, *text + done, (size_t)st.st_size - done);

		if (n <= 0) {
			r = cmd_error(ctx, WHAT, "cannot read '%s': %s", path,
				      n ? strerror(errno) : "it shrank");
			free(*text);
			goto out;
		}
		done += (size_t)n;
	}
	(*text)[done] = '\0';
out:
	if (fd >= 0)
		close(fd);
	return r;
}

/* The volume's table from the store, as a private switch_table. */
static int load_table(struct cmd_ctx *ctx, const char *name, struct volume_rec *v,
		      struct switch_table **out)
{
	struct switch_rec sw;
	void *blob;
	size_t len;
	int r;

	r = store_volume_get(ctx->store, name, v);
	if (r == -ENOENT)
		return cmd_error(ctx, WHAT, "no volume '%s'", name);
	if (r)
		return opts_store_error(ctx, WHAT, "look up the volume", r);
	if (strcmp(v->kind, "switch"))
		return cmd_error(ctx, WHAT, "volume '%s' is a %s volume, not a switch volume",
				 name, v->kind);
	r = store_switch_get(ctx->store, v->id, &sw);
	if (!r)
		r = store_switch_table_get(ctx->store, v->id, &blob, &len);
	if (r)
		return opts_store_error(ctx, WHAT, "read the region table", r);
	r = switch_table_create(sw.nr_regions, sw.nr_paths, out);
	if (!r) {
		r = switch_table_import(*out, blob, len);
		if (r)
			switch_table_destroy(*out);
	}
	free(blob);
	if (r == -EUCLEAN)
		return cmd_error(ctx, WHAT, "the stored region table of '%s' is corrupt", name);
	if (r)
		return cmd_error(ctx, WHAT, "out of memory");
	return 0;
}

/* Regions whose path differs between @a and @b (same shape). */
static uint64_t regions_changed(const struct switch_table *a,
				const struct switch_table *b)
{
	uint64_t n = 0;

	for (uint64_t r = 0; r < a->nr_regions; r++)
		n += switch_table_get(a, r) != switch_table_get(b, r);
	return n;
}

/* Writes @t back in one transaction. */
static int save_table(struct cmd_ctx *ctx, const struct volume_rec *v,
		      const struct switch_table *t)
{
	size_t len = t->nr_words * 8;
	uint8_t *blob = malloc(len);
	int r;

	if (!blob)
		return cmd_error(ctx, WHAT, "out of memory");
	switch_table_export(t, blob);
	r = store_begin(ctx->store);
	if (!r)
		r = store_switch_table_set(ctx->store, v->id, blob, len);
	if (!r)
		r = store_commit(ctx->store);
	if (r) {
		store_rollback(ctx->store);
		r = opts_store_error(ctx, WHAT, "record the region table", r);
	}
	free(blob);
	return r;
}

/* Applies the message to a copy of @live; saves the copy if it all parsed. */
static int remap(struct cmd_ctx *ctx, const struct map_args *a,
		 const struct volume_rec *v, const struct switch_table *live)
{
	char **argv = a->argv, *text = NULL, why[256];
	struct switch_table *next;
	size_t argc = a->argc;
	uint64_t changed;
	int r;

	if (a->file) {
		r = read_file(ctx, a->file, &text);
		if (!r && switch_msg_split(text, &argv, &argc))
			r = cmd_error(ctx, WHAT, "out of memory");
		if (!r && !argc)
			r = cmd_error(ctx, WHAT, "'%s' holds no mappings", a->file);
		if (r)
			goto out_text;
	}
	r = switch_table_clone(live, &next);
	if (r) {
		r = cmd_error(ctx, WHAT, "out of memory");
		goto out_argv;
	}
	if (switch_msg_apply(next, argc, argv, why, sizeof(why))) {
		r = cmd_error(ctx, WHAT, "%s; the table of '%s' is unchanged", why, v->name);
		goto out_next;
	}
	changed = regions_changed(live, next);
	r = save_table(ctx, v, next);
	if (r)
		goto out_next;
	if (ctx->live)
		opts_live_result(ctx, WHAT, ctx->live->volume_changed(ctx->live_arg, v->id));
	fprintf(ctx->out, "switch volume '%s': %llu of %llu regions changed path\n",
		v->name, (unsigned long long)changed, (unsigned long long)next->nr_regions);
out_next:
	switch_table_destroy(next);
out_argv:
	if (a->file)
		free(argv);
out_text:
	free(text);
	return r;
}

static int switch_map_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct map_args a = { 0 };
	struct switch_table *t;
	struct volume_rec v;
	int r;

	r = parse(ctx, argc, argv, &a);
	if (!r)
		r = load_table(ctx, a.name, &v, &t);
	if (r)
		return r;
	if (a.dump) {
		r = switch_msg_dump(t, ctx->out);
		if (r)
			r = cmd_error(ctx, WHAT, "cannot write the table: %s", strerror(-r));
	} else {
		r = remap(ctx, &a, &v, t);
	}
	switch_table_destroy(t);
	return r;
}

const struct cmd cmd_switch_map = {
	.name = "switch-map",
	.usage =
		"switch-map NAME MAPPING...\n"
		"       mapperctl switch-map NAME --file FILE\n"
		"       mapperctl switch-map NAME --dump\n"
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
		"  --file FILE  read the mappings from FILE, separated by white space\n"
		"  --dump       print the table as mappings, with R where it repeats\n",
	.run = switch_map_run,
	.needs_store = 1,
	.file_option = "--file",
};
