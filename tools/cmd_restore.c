/*
 * restore: thin volumes and their maps in an empty thin pool, from
 * thin_dump XML (pool_thin_restore), which mapperctl opened (cmd.h,
 * input_option).  The data blocks stay where they are: the XML's data
 * block numbers are the pool's blocks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "json.h"
#include "opts.h"

#define WHAT "restore"

static const struct option options[] = {
	{ "from", required_argument, NULL, 'i' },
	{ "dry-run", no_argument, NULL, 'n' },
	{ "force", no_argument, NULL, 'f' },
	{ "volume", required_argument, NULL, 'v' },
	{ "json", no_argument, NULL, 'j' },
	{ 0 }
};

static const char *const path_options[] = { "--from", NULL };

/* Where the report goes: lines on ctx->out, or strings of j's "report". */
struct report {
	struct cmd_ctx *ctx;
	struct json *j;		/* NULL: text */
};

static void print_line(void *arg, const char *line)
{
	struct report *rep = arg;

	if (rep->j)
		json_string(rep->j, NULL, line);
	else
		fprintf(rep->ctx->out, "%s\n", line);
}

/* "DEV_ID:NAME[:SIZE]" into @v (name pointing into @arg, cut). */
static int parse_volume(char *arg, struct pool_restore_volume *v, struct pool_error *err)
{
	char *name = strchr(arg, ':'), *size, *end;

	if (!name || name == arg)
		return pool_fail(err, -EINVAL, "--volume '%s': use DEV_ID:NAME[:SIZE]", arg);
	*name++ = '\0';
	errno = 0;
	v->dev_id = strtoull(arg, &end, 10);
	if (*end || errno || arg[0] < '0' || arg[0] > '9')
		return pool_fail(err, -EINVAL, "--volume: dev_id '%s' is not a number", arg);
	size = strchr(name, ':');
	if (size)
		*size++ = '\0';
	v->name = *name ? name : NULL;
	v->size = 0;
	return size ? opts_block_size(size, &v->size, err) : 0;
}

static int cmp_dev_id(const void *a, const void *b)
{
	const struct pool_restore_volume *x = a, *y = b;

	return (x->dev_id > y->dev_id) - (x->dev_id < y->dev_id);
}

static int cmp_name(const void *a, const void *b)
{
	const struct pool_restore_volume *x = *(const struct pool_restore_volume *const *)a;
	const struct pool_restore_volume *y = *(const struct pool_restore_volume *const *)b;

	return strcmp(x->name, y->name);
}

/*
 * Each dev_id and each name once: two --volume for one would leave the
 * last.  Sorts @v by dev_id.  O(n log n).
 */
static int check_unique(struct pool_restore_volume *v, size_t nr, struct pool_error *err)
{
	const struct pool_restore_volume **named = calloc(nr + 1, sizeof(*named));
	size_t n = 0;
	int r = 0;

	if (!named)
		return pool_fail(err, -ENOMEM, "out of memory");
	qsort(v, nr, sizeof(*v), cmp_dev_id);
	for (size_t i = 0; i < nr; i++) {
		if (i && v[i].dev_id == v[i - 1].dev_id && !r)
			r = pool_fail(err, -EINVAL, "--volume: dev_id %llu is given twice",
				      (unsigned long long)v[i].dev_id);
		if (v[i].name)
			named[n++] = &v[i];
	}
	qsort(named, n, sizeof(*named), cmp_name);
	for (size_t i = 1; !r && i < n; i++)
		if (!strcmp(named[i]->name, named[i - 1]->name))
			r = pool_fail(err, -EINVAL, "--volume: name '%s' is given twice", named[i]->name);
	free(named);
	return r;
}

static int restore_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_restore_spec s = { 0 };
	struct pool_restore_volume *vols;
	struct report rep = { .ctx = ctx };
	const char *from = NULL;
	struct pool_error err;
	struct json j;
	int c, r;

	vols = calloc((size_t)argc + 1, sizeof(*vols));
	if (!vols)
		return cmd_error(ctx, WHAT, "out of memory");
	s.vols = vols;
	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		if (c == 'i') {
			from = optarg;
		} else if (c == 'n') {
			s.dry_run = true;
		} else if (c == 'f') {
			s.force = true;
		} else if (c == 'j') {
			rep.j = &j;
		} else if (c == 'v') {
			if (parse_volume(optarg, &vols[s.nr_vols++], &err)) {
				r = cmd_error(ctx, WHAT, "%s", err.msg);
				goto out;
			}
		} else {
			r = CMD_USAGE;
			goto out;
		}
	}
	if (check_unique(vols, s.nr_vols, &err)) {
		r = cmd_error(ctx, WHAT, "%s", err.msg);
		goto out;
	}
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the thin POOL");
	if (!r && !from)
		r = cmd_usage_error(ctx, WHAT, "missing --from FILE (see 'mapperctl %s --help')", WHAT);
	if (r)
		goto out;
	s.xml = cmd_stream(ctx, WHAT, ctx->input, "r", from);
	if (!s.xml) {
		r = CMD_FAIL;
		goto out;
	}
	if (rep.j) {		/* closed even after a failure: what was said stays JSON */
		json_init(&j, ctx->out, JSON_PRETTY);
		json_object_begin(&j, NULL);
		json_string(&j, "pool", argv[ctx->optind]);
		json_bool(&j, "dry_run", s.dry_run);
		json_array_begin(&j, "report");
	}
	r = pool_thin_restore(ctx->pool, argv[ctx->optind], &s, print_line, &rep, &err);
	fclose(s.xml);
	if (rep.j) {
		json_array_end(&j);
		json_object_end(&j);
	}
	r = r ? cmd_fail(ctx, WHAT, &err) : CMD_OK;
out:
	free(vols);
	return r;
}

const struct cmd cmd_restore = {
	.name = "restore",
	.usage =
		"restore POOL --from FILE [--dry-run] [--force]\n"
		"        [--volume DEV_ID:NAME[:SIZE]]... [--json]\n"
		"\n"
		"Creates thin volumes and their maps in thin pool POOL, which must have\n"
		"no volumes, from thin_dump XML (thin_dump, or 'mapperctl dump --format\n"
		"xml').  The XML's data block numbers address POOL's blocks, whose\n"
		"content stays: restore over the data area the dump describes; POOL\n"
		"may be smaller than the dump's pool if every mapping fits.  Volumes\n"
		"take the name, size and snapshot origin that 'mapperctl dump' records,\n"
		"else thin<dev_id> and the end of their last mapping (said in the\n"
		"report); a device that maps nothing needs its size given.  All or\n"
		"nothing: every check is made before anything is written, and\n"
		"--dry-run makes them all (sizes, POOL's end and metadata limit, and\n"
		"that no mapped data block is a hole in a raw device file).\n"
		"\n"
		"  --from FILE  the XML: a file, a pipe, a FIFO, or - for standard\n"
		"               input (at most 1 GiB), which mapperctl reads with your\n"
		"               rights\n"
		"  --dry-run    check it and say what would be created; change nothing\n"
		"  --force      map data blocks that are holes in a raw device file all\n"
		"               the same: they read zeros.  Without it such a block,\n"
		"               most likely discarded since the dump, is refused\n"
		"  --volume DEV_ID:NAME[:SIZE]  name (and size) the volume of device\n"
		"               DEV_ID (thin_dump's XML has neither); each DEV_ID and\n"
		"               NAME once\n"
		"  --json       print {\"pool\", \"dry_run\", \"report\"}: the report's\n"
		"               lines as an array of strings\n",
	.run = restore_run,
	.options = options,
	.needs_pool = 1,
	.path_options = path_options,
	.input_option = "from",
};
