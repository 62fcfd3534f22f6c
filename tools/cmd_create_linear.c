/*
 * create linear: a volume made of extents, either carved by the allocator
 * (--size, optionally --on some devices) or placed by hand (--segment,
 * in order), as dmsetup's linear table lets one.  Hand-placed segments
 * are checked against the store (inside the device's data area, free)
 * and against each other before anything is written; the volume row and
 * its extents are one transaction.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "label.h"
#include "linear_alloc.h"
#include "opts.h"
#include "size.h"
#include "space.h"
#include "store.h"

#define WHAT "create linear"

struct create_args {
	const char *name;
	const char *size;		/* --size, or NULL */
	char **on;			/* --on arguments */
	size_t nr_on;
	char **segs;			/* --segment arguments */
	size_t nr_segs;
};

struct segment {
	const char *arg;		/* as typed, for messages */
	struct device_rec dev;
	uint64_t offset;		/* bytes from the device's start */
	uint64_t length;		/* bytes */
};

static int parse(struct cmd_ctx *ctx, int argc, char **argv,
		 struct create_args *a)
{
	static const struct option longopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "on", required_argument, NULL, 'o' },
		{ "segment", required_argument, NULL, 'g' },
		{ 0 }
	};
	int c, r;

	/* each list holds at most every argument */
	a->on = calloc((size_t)argc, sizeof(char *));
	a->segs = calloc((size_t)argc, sizeof(char *));
	if (!a->on || !a->segs)
		return cmd_error(ctx, WHAT, "out of memory");
	for (int first = 1; (c = opts_next(ctx, WHAT, argc, argv, longopts, first)) != -1;
	     first = 0) {
		switch (c) {
		case 's': a->size = optarg; break;
		case 'o': a->on[a->nr_on++] = optarg; break;
		case 'g': a->segs[a->nr_segs++] = optarg; break;
		default: return CMD_USAGE;
		}
	}
	r = opts_args(ctx, WHAT, argc, argv, 1, 1, "the volume NAME");
	if (r)
		return r;
	a->name = argv[optind];
	if (a->size && a->nr_segs)
		return cmd_usage_error(ctx, WHAT, "--size and --segment exclude each other");
	if (!a->size && !a->nr_segs)
		return cmd_usage_error(ctx, WHAT, "need --size or --segment (see 'mapperctl %s --help')",
				       WHAT);
	if (a->nr_on && !a->size)
		return cmd_usage_error(ctx, WHAT, "--on goes with --size");
	return opts_name(ctx, WHAT, a->name);
}

/* "d0:4M:8M" -> device d0, data area offset 4 MiB, 8 MiB long. */
static int parse_segment(struct cmd_ctx *ctx, const char *arg,
			 struct segment *s)
{
	char *copy = strdup(arg), *off, *len;
	int r;

	if (!copy)
		return cmd_error(ctx, WHAT, "out of memory");
	s->arg = arg;
	off = strchr(copy, ':');
	len = off ? strchr(off + 1, ':') : NULL;
	if (!len) {
		free(copy);
		return cmd_error(ctx, WHAT, "invalid segment '%s': use DEVICE:OFFSET:LENGTH", arg);
	}
	*off++ = '\0';
	*len++ = '\0';
	r = store_device_get(ctx->store, copy, &s->dev);
	if (r == -ENOENT)
		r = cmd_error(ctx, WHAT, "segment '%s': no device '%s'", arg, copy);
	else if (r)
		r = opts_store_error(ctx, WHAT, "look up a device", r);
	if (!r)
		r = opts_size(ctx, WHAT, off, &s->offset);
	if (!r && s->offset % OPTS_BLOCK)
		r = cmd_error(ctx, WHAT, "segment '%s': offset is not a multiple of 4 KiB", arg);
	if (!r)
		r = opts_block_size(ctx, WHAT, len, &s->length);
	free(copy);
	if (r)
		return r;
	if (s->offset > UINT64_MAX - DEVICE_DATA_OFFSET - s->length)
		return cmd_error(ctx, WHAT, "segment '%s' runs past the end of device '%s'",
				 arg, s->dev.name);
	s->offset += DEVICE_DATA_OFFSET;
	return 0;
}

/* Names the volume whose extent overlaps @s, for the error. */
static int overlap_error(struct cmd_ctx *ctx, const struct segment *s)
{
	struct extent_rec *e = NULL;
	struct volume_rec v;
	size_t nr = 0;
	int r;

	r = store_extents_on_device(ctx->store, s->dev.id, &e, &nr);
	for (size_t i = 0; !r && i < nr; i++) {
		if (e[i].dev_offset >= s->offset + s->length ||
		    e[i].dev_offset + e[i].length <= s->offset ||
		    store_volume_get_by_id(ctx->store, e[i].volume, &v))
			continue;
		free(e);
		return cmd_error(ctx, WHAT, "segment '%s' overlaps volume '%s'", s->arg,
				 v.name);
	}
	free(e);
	return cmd_error(ctx, WHAT, "segment '%s' overlaps another volume", s->arg);
}

static int check_segment(struct cmd_ctx *ctx, const struct segment *segs,
			 size_t i)
{
	const struct segment *s = &segs[i];
	int r;

	r = space_check_free(ctx->store, &s->dev, s->offset, s->length);
	if (r == -ERANGE)
		return cmd_error(ctx, WHAT, "segment '%s' runs past the end of device '%s'",
				 s->arg, s->dev.name);
	if (r == -EEXIST)
		return overlap_error(ctx, s);
	if (r)
		return opts_store_error(ctx, WHAT, "check free space", r);
	for (size_t k = 0; k < i; k++)
		if (segs[k].dev.id == s->dev.id &&
		    segs[k].offset < s->offset + s->length &&
		    s->offset < segs[k].offset + segs[k].length)
			return cmd_error(ctx, WHAT, "segment '%s' overlaps segment '%s'",
					 s->arg, segs[k].arg);
	return 0;
}

/* Parses and checks every --segment; *size becomes their sum. */
static int parse_segments(struct cmd_ctx *ctx, const struct create_args *a,
			  struct segment *segs, uint64_t *size)
{
	int r = 0;

	*size = 0;
	for (size_t i = 0; !r && i < a->nr_segs; i++) {
		r = parse_segment(ctx, a->segs[i], &segs[i]);
		if (!r)
			r = check_segment(ctx, segs, i);
		if (!r && segs[i].length > SIZE_MAX_BYTES - *size)
			r = cmd_error(ctx, WHAT, "the segments add up to more than 2^63 bytes");
		if (!r)
			*size += segs[i].length;
	}
	return r;
}

static int insert_segments(struct cmd_ctx *ctx, int64_t volume,
			   const struct segment *segs, size_t nr)
{
	int r = 0;

	for (size_t i = 0; !r && i < nr; i++) {
		struct extent_rec e = {
			.volume = volume,
			.seq = (uint32_t)i,
			.device = segs[i].dev.id,
			.dev_offset = segs[i].offset,
			.length = segs[i].length,
		};

		r = store_extent_insert(ctx->store, &e);
	}
	if (r)
		return opts_store_error(ctx, WHAT, "record the volume's extents", r);
	return 0;
}

/* One transaction: the volume row, then its extents. */
static int create(struct cmd_ctx *ctx, const struct create_args *a,
		  struct volume_rec *v, const struct segment *segs,
		  const int64_t *devs, size_t nr_devs)
{
	int r;

	r = opts_begin_volume(ctx, WHAT, v);
	if (!r && a->nr_segs)
		r = insert_segments(ctx, v->id, segs, a->nr_segs);
	else if (!r)
		r = linear_alloc_append(ctx, WHAT, v->id, 0, v->size, devs, nr_devs);
	return opts_end_transaction(ctx, WHAT, r);
}

static int create_linear_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct create_args a = { 0 };
	struct volume_rec v = { 0 }, old;
	struct segment *segs = NULL;
	char size[SIZE_STR_LEN];
	int64_t *devs = NULL;
	size_t nr_devs = 0;
	int r;

	r = parse(ctx, argc, argv, &a);
	if (!r && store_volume_get(ctx->store, a.name, &old) == 0)
		r = cmd_error(ctx, WHAT, "volume '%s' exists", a.name);
	if (!r && a.size) {
		r = opts_block_size(ctx, WHAT, a.size, &v.size);
		if (!r)
			r = opts_devices(ctx, WHAT, a.on, a.nr_on, &devs, &nr_devs);
	} else if (!r) {
		segs = calloc(a.nr_segs, sizeof(*segs));
		r = segs ? parse_segments(ctx, &a, segs, &v.size)
			 : cmd_error(ctx, WHAT, "out of memory");
	}
	if (!r) {
		snprintf(v.name, sizeof(v.name), "%s", a.name);
		snprintf(v.kind, sizeof(v.kind), "linear");
		r = create(ctx, &a, &v, segs, devs, nr_devs);
	}
	if (!r) {
		if (ctx->live)
			opts_live_result(ctx, WHAT,
					 ctx->live->volume_changed(ctx->live_arg, v.id));
		fprintf(ctx->out, "created linear volume '%s' (%s)\n", v.name,
			format_size(v.size, size));
	}
	free(devs);
	free(segs);
	free(a.on);
	free(a.segs);
	return r;
}

const struct cmd cmd_create_linear = {
	.name = "create linear",
	.usage =
		"create linear NAME --size SIZE [--on DEVICE[,DEVICE...]]...\n"
		"       mapperctl create linear NAME --segment DEVICE:OFFSET:LENGTH...\n"
		"\n"
		"Creates the linear volume NAME: SIZE bytes from the free space of the\n"
		"devices (the --on ones, or all), or the segments given, in order.\n"
		"\n"
		"  --size SIZE     the volume's size: a multiple of 4 KiB (K, M, G, T)\n"
		"  --on DEVICES    allocate on these devices only, in this order\n"
		"  --segment D:O:L LENGTH bytes at OFFSET of device D's data area (after\n"
		"                  its 1 MiB label); both multiples of 4 KiB; repeatable\n",
	.run = create_linear_run,
	.needs_store = 1,
};
