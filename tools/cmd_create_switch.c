/*
 * create switch: a volume whose fixed-size regions are spread over 2 to
 * 256 paths by a region table, as dm-switch does.  Each path reaches the
 * whole volume (byte x of the volume is byte OFFSET + x of its path), so
 * a path is either a range of SIZE bytes carved from a device's free
 * space, which the volume then owns as an extent, or DEVICE:OFFSET, a
 * place the caller chose, which owns nothing and may be shared by other
 * paths (the multipath case: several paths that reach the same storage).
 * The new table maps region r to path r % N.  The volume row, its
 * extents, the paths and the table are one transaction.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "label.h"
#include "opts.h"
#include "size.h"
#include "space.h"
#include "store.h"
#include "store_switch.h"
#include "switch.h"
#include "switch_table.h"

#define WHAT "create switch"

struct create_args {
	const char *name;
	const char *size;
	const char *region_size;
	char **paths;			/* --path arguments */
	size_t nr_paths;
};

struct path {
	const char *arg;		/* as typed, for messages */
	struct device_rec dev;
	int owned;			/* allocated here: an extent of the volume */
	uint64_t dev_offset;		/* bytes from the device's start */
};

static int parse(struct cmd_ctx *ctx, int argc, char **argv,
		 struct create_args *a)
{
	static const struct option longopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "region-size", required_argument, NULL, 'r' },
		{ "path", required_argument, NULL, 'p' },
		{ 0 }
	};
	int c, r;

	a->paths = calloc((size_t)argc, sizeof(char *));
	if (!a->paths)
		return cmd_error(ctx, WHAT, "out of memory");
	for (int first = 1; (c = opts_next(ctx, WHAT, argc, argv, longopts, first)) != -1;
	     first = 0) {
		switch (c) {
		case 's': a->size = optarg; break;
		case 'r': a->region_size = optarg; break;
		case 'p': a->paths[a->nr_paths++] = optarg; break;
		default: return CMD_USAGE;
		}
	}
	r = opts_args(ctx, WHAT, argc, argv, 1, 1, "the volume NAME");
	if (r)
		return r;
	a->name = argv[optind];
	if (!a->size || !a->region_size)
		return cmd_usage_error(ctx, WHAT, "need --size and --region-size (see 'mapperctl %s --help')",
				       WHAT);
	if (a->nr_paths < 2 || a->nr_paths > SWITCH_PATHS_MAX)
		return cmd_usage_error(ctx, WHAT, "need 2 to %d --path options, not %zu",
				       SWITCH_PATHS_MAX, a->nr_paths);
	return opts_name(ctx, WHAT, a->name);
}

/* "d0" (allocate) or "d0:4M" (offset 4 MiB into d0's data area). */
static int parse_path(struct cmd_ctx *ctx, const char *arg, uint64_t size,
		      struct path *p)
{
	char *copy = strdup(arg), *off;
	int r;

	if (!copy)
		return cmd_error(ctx, WHAT, "out of memory");
	p->arg = arg;
	off = strchr(copy, ':');
	if (off)
		*off++ = '\0';
	p->owned = !off;
	r = store_device_get(ctx->store, copy, &p->dev);
	if (r == -ENOENT)
		r = cmd_error(ctx, WHAT, "path '%s': no device '%s'", arg, copy);
	else if (r)
		r = opts_store_error(ctx, WHAT, "look up a device", r);
	if (!r && off)
		r = opts_size(ctx, WHAT, off, &p->dev_offset);
	if (!r && off && p->dev_offset % OPTS_BLOCK)
		r = cmd_error(ctx, WHAT, "path '%s': offset is not a multiple of 4 KiB", arg);
	free(copy);
	if (r || !off)
		return r;
	p->dev_offset += DEVICE_DATA_OFFSET;
	if (p->dev_offset > p->dev.size || size > p->dev.size - p->dev_offset)
		return cmd_error(ctx, WHAT, "path '%s' runs past the end of device '%s'",
				 arg, p->dev.name);
	return 0;
}

/*
 * A path that owns its storage needs @size contiguous bytes: the first
 * free range of its device that holds them, from a SPACE_ALIGN boundary.
 * The extents this transaction inserted already count as used.
 */
static int allocate_path(struct cmd_ctx *ctx, uint64_t size, struct path *p)
{
	struct space_range *free_ranges;
	char want[SIZE_STR_LEN];
	size_t nr;
	int r;

	r = space_free_ranges(ctx->store, &p->dev, &free_ranges, &nr);
	if (r)
		return opts_store_error(ctx, WHAT, "compute free space", r);
	r = -ENOSPC;
	for (size_t i = 0; i < nr && r; i++) {
		uint64_t start = (free_ranges[i].offset + SPACE_ALIGN - 1) /
				 SPACE_ALIGN * SPACE_ALIGN;
		uint64_t end = free_ranges[i].offset + free_ranges[i].length;

		if (start < end && end - start >= size) {
			p->dev_offset = start;
			r = 0;
		}
	}
	free(free_ranges);
	if (r)
		return cmd_error(ctx, WHAT, "path '%s': device '%s' has no %s free in one piece",
				 p->arg, p->dev.name, format_size(size, want));
	return 0;
}

/*
 * Places every path (allocating those that own their storage, each as an
 * extent of the volume) and fills @recs.  Inside the transaction.
 */
static int place_paths(struct cmd_ctx *ctx, const struct volume_rec *v,
		       struct path *paths, size_t nr,
		       struct switch_path_rec *recs)
{
	uint32_t seq = 0;
	int r = 0;

	for (size_t i = 0; !r && i < nr; i++) {
		if (paths[i].owned) {
			struct extent_rec e;

			r = allocate_path(ctx, v->size, &paths[i]);
			if (r)
				break;
			e = (struct extent_rec){ v->id, seq++, paths[i].dev.id,
						 paths[i].dev_offset, v->size };
			r = store_extent_insert(ctx->store, &e);
			if (r)
				r = opts_store_error(ctx, WHAT, "record a path's extent", r);
		}
		recs[i] = (struct switch_path_rec){ (uint32_t)i, paths[i].dev.id,
						    paths[i].dev_offset };
	}
	return r;
}

/* The round-robin table of a new volume, as store bytes. */
static int new_table(struct cmd_ctx *ctx, struct switch_rec *sw, uint8_t **blob,
		     size_t *len)
{
	struct switch_table *t;
	int r;

	r = switch_table_create(sw->nr_regions, sw->nr_paths, &t);
	if (r)
		return cmd_error(ctx, WHAT, "out of memory");
	switch_table_round_robin(t);
	sw->entry_bits = t->bits;
	*len = t->nr_words * 8;
	*blob = malloc(*len);
	if (*blob)
		switch_table_export(t, *blob);
	switch_table_destroy(t);
	return *blob ? 0 : cmd_error(ctx, WHAT, "out of memory");
}

/* One transaction: the volume row, the paths' extents, the switch rows. */
static int create(struct cmd_ctx *ctx, struct volume_rec *v,
		  struct switch_rec *sw, struct path *paths, size_t nr)
{
	struct switch_path_rec *recs = calloc(nr, sizeof(*recs));
	uint8_t *blob = NULL;
	size_t len = 0;
	int r;

	if (!recs)
		return cmd_error(ctx, WHAT, "out of memory");
	r = new_table(ctx, sw, &blob, &len);
	if (r)
		goto out;
	r = opts_begin_volume(ctx, WHAT, v);
	if (!r)
		r = place_paths(ctx, v, paths, nr, recs);
	if (!r) {
		sw->volume = v->id;
		r = store_switch_insert(ctx->store, sw, recs, blob, len);
		if (r)
			r = opts_store_error(ctx, WHAT, "record the paths and the table", r);
	}
	r = opts_end_transaction(ctx, WHAT, r);
out:
	free(blob);
	free(recs);
	return r;
}

/* Sizes: the volume's, the region's, and the region count they make. */
static int parse_sizes(struct cmd_ctx *ctx, const struct create_args *a,
		       struct volume_rec *v, struct switch_rec *sw)
{
	int r;

	r = opts_block_size(ctx, WHAT, a->size, &v->size);
	if (!r)
		r = opts_block_size(ctx, WHAT, a->region_size, &sw->region_size);
	if (r)
		return r;
	sw->nr_regions = switch_nr_regions(v->size, sw->region_size);
	if (sw->nr_regions > SWITCH_REGIONS_MAX)
		return cmd_error(ctx, WHAT, "%llu regions are too many (at most %llu): use larger regions",
				 (unsigned long long)sw->nr_regions,
				 (unsigned long long)SWITCH_REGIONS_MAX);
	sw->nr_paths = (uint32_t)a->nr_paths;
	return 0;
}

static int create_switch_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct create_args a = { 0 };
	struct volume_rec v = { 0 }, old;
	struct switch_rec sw = { 0 };
	struct path *paths = NULL;
	char size[SIZE_STR_LEN], region[SIZE_STR_LEN];
	int r;

	r = parse(ctx, argc, argv, &a);
	if (!r && store_volume_get(ctx->store, a.name, &old) == 0)
		r = cmd_error(ctx, WHAT, "volume '%s' exists", a.name);
	if (!r)
		r = parse_sizes(ctx, &a, &v, &sw);
	if (!r) {
		paths = calloc(a.nr_paths, sizeof(*paths));
		if (!paths)
			r = cmd_error(ctx, WHAT, "out of memory");
	}
	for (size_t i = 0; !r && i < a.nr_paths; i++)
		r = parse_path(ctx, a.paths[i], v.size, &paths[i]);
	if (!r) {
		snprintf(v.name, sizeof(v.name), "%s", a.name);
		snprintf(v.kind, sizeof(v.kind), "switch");
		r = create(ctx, &v, &sw, paths, a.nr_paths);
	}
	if (!r) {
		if (ctx->live)
			opts_live_result(ctx, WHAT,
					 ctx->live->volume_changed(ctx->live_arg, v.id));
		fprintf(ctx->out, "created switch volume '%s' (%s, %zu paths, %llu regions of %s)\n",
			v.name, format_size(v.size, size), a.nr_paths,
			(unsigned long long)sw.nr_regions, format_size(sw.region_size, region));
	}
	free(paths);
	free(a.paths);
	return r;
}

const struct cmd cmd_create_switch = {
	.name = "create switch",
	.usage =
		"create switch NAME --size SIZE --region-size SIZE --path DEVICE[:OFFSET]...\n"
		"\n"
		"Creates the switch volume NAME: SIZE bytes cut into regions of\n"
		"--region-size, each served by one of 2 to 256 paths as its region\n"
		"table says (see 'mapperctl switch-map').  A new table sends region r\n"
		"to path r mod N.  Every path reaches the whole volume: byte x of the\n"
		"volume is byte OFFSET + x of the path.\n"
		"\n"
		"  --size SIZE         the volume's size: a multiple of 4 KiB (K, M, G, T)\n"
		"  --region-size SIZE  a multiple of 4 KiB (a power of two is fastest)\n"
		"  --path DEVICE       SIZE bytes from DEVICE's free space, owned by\n"
		"                      the volume\n"
		"  --path DEVICE:OFFSET\n"
		"                      OFFSET bytes into DEVICE's data area (after its\n"
		"                      1 MiB label); owns nothing, may be shared with\n"
		"                      other paths and volumes (multipath)\n",
	.run = create_switch_run,
	.needs_store = 1,
};
