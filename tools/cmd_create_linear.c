/*
 * create linear: a volume made of extents, either carved by the allocator
 * (--size, optionally --on some devices, optionally striped over
 * --stripes of them) or placed by hand (--segment, in order), as dmsetup's
 * linear table lets one (pool_create_linear).
 */
#include <errno.h>
#include <stdlib.h>

#include "stripe.h"

#include "cmd.h"
#include "opts.h"
#include "tag_opts.h"
#include "size.h"

#define WHAT "create linear"

static const struct option options[] = {
	{ "size", required_argument, NULL, 's' },
	{ "on", required_argument, NULL, 'o' },
	{ "segment", required_argument, NULL, 'g' },
	{ "read-only", no_argument, NULL, 'R' },
	{ "mirrors", required_argument, NULL, 'm' },
	{ "stripes", required_argument, NULL, 'i' },
	{ "stripe-size", required_argument, NULL, 'I' },
	TAG_ADD_OPTION,
	{ 0 }
};

struct create_args {
	bool read_only;			/* --read-only */
	const char *size;		/* --size, or NULL */
	const char *mirrors;		/* --mirrors, or NULL */
	const char *stripes;		/* --stripes, or NULL */
	const char *stripe_size;	/* --stripe-size, or NULL */
	char **on;			/* --on arguments */
	size_t nr_on;
	char **segs;			/* --segment arguments */
	size_t nr_segs;
	struct tag_opts tags;		/* --addtag */
};

static int parse(struct cmd_ctx *ctx, int argc, char **argv, struct create_args *a)
{
	int c, r;

	/* each list holds at most every argument */
	a->on = calloc((size_t)argc, sizeof(char *));
	a->segs = calloc((size_t)argc, sizeof(char *));
	if (!a->on || !a->segs)
		return cmd_error(ctx, WHAT, "out of memory");
	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		switch (c) {
		case 'R': a->read_only = true; break;
		case 's': a->size = optarg; break;
		case 'm': a->mirrors = optarg; break;
		case 'o': a->on[a->nr_on++] = optarg; break;
		case 'g': a->segs[a->nr_segs++] = optarg; break;
		case 'i': a->stripes = optarg; break;
		case 'I': a->stripe_size = optarg; break;
		default:
			r = tag_opts_parse(ctx, WHAT, &a->tags, c, optarg);
			if (r)
				return r;
		}
	}
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the volume NAME");
	if (r)
		return r;
	if (a->size && a->nr_segs)
		return cmd_usage_error(ctx, WHAT, "--size and --segment exclude each other");
	if (!a->size && !a->nr_segs)
		return cmd_usage_error(ctx, WHAT, "need --size or --segment (see 'mapperctl %s --help')",
				       WHAT);
	if (a->nr_on && !a->size)
		return cmd_usage_error(ctx, WHAT, "--on goes with --size");
	if (a->mirrors && !a->size)
		return cmd_usage_error(ctx, WHAT, "--mirrors goes with --size");
	if (a->mirrors && a->stripes)
		return cmd_usage_error(ctx, WHAT, "--mirrors and --stripes exclude each other "
				       "(a striped mirror is not offered yet)");
	if ((a->stripes || a->stripe_size) && !a->size)
		return cmd_usage_error(ctx, WHAT, "--stripes and --stripe-size go with --size");
	if (a->stripe_size && !a->stripes)
		return cmd_usage_error(ctx, WHAT, "--stripe-size goes with --stripes");
	return 0;
}

/* --stripe-size: a size the service checks further (a power of two). */
static int stripe_size(const char *arg, uint32_t *out, struct pool_error *err)
{
	uint64_t n;
	int r = opts_size(arg, &n, err);

	if (!r && n > STRIPE_CHUNK_MAX)
		r = pool_fail(err, -EINVAL, "the stripe size must be a power of two from 4 KiB to 1 GiB, not '%s'",
			      arg);
	if (!r)
		*out = (uint32_t)n;
	return r;
}

static int create_linear_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_linear_spec s = { 0 };
	struct create_args a = { 0 };
	struct pool_segment *segs = NULL;
	char **copies = NULL, size[SIZE_STR_LEN], chunk[SIZE_STR_LEN];
	struct pool_error err;
	struct volume_rec v;
	int r;

	r = parse(ctx, argc, argv, &a);
	if (r)
		goto out;
	s.name = argv[ctx->optind];
	s.read_only = a.read_only;
	s.on = a.on;
	s.nr_on = a.nr_on;
	segs = calloc(a.nr_segs + 1, sizeof(*segs));
	copies = calloc(a.nr_segs + 1, sizeof(*copies));
	if (!segs || !copies) {
		r = cmd_error(ctx, WHAT, "out of memory");
		goto out;
	}
	r = a.size ? opts_block_size(a.size, &s.size, &err) : 0;
	if (!r && a.mirrors)
		r = opts_number(a.mirrors, "--mirrors", 1, 3, &s.mirrors, &err);
	if (!r && a.stripes)
		r = opts_number(a.stripes, "--stripes", STRIPES_MIN, STRIPES_MAX, &s.stripes, &err);
	s.stripe_size = STRIPE_CHUNK_DEFAULT;
	if (!r && a.stripe_size)
		r = stripe_size(a.stripe_size, &s.stripe_size, &err);
	for (size_t i = 0; !r && i < a.nr_segs; i++)
		r = opts_segment(a.segs[i], &copies[i], &segs[i], &err);
	s.segs = segs;
	s.nr_segs = a.nr_segs;
	if (!r)
		r = s.stripes ? pool_create_striped(ctx->pool, &s, &v, &err)
			      : pool_create_linear(ctx->pool, &s, &v, &err);
	if (r) {
		r = cmd_fail(ctx, WHAT, &err);
		goto out;
	}
	if (s.mirrors)
		fprintf(ctx->out, "created linear volume '%s' (%s, %u legs; syncing in the "
			"background)\n", v.name, format_size(v.size, size), s.mirrors + 1);
	else if (s.stripes)
		fprintf(ctx->out, "created linear volume '%s' (%s, %u stripes of %s%s)\n", v.name,
			format_size(v.size, size), s.stripes, format_size(s.stripe_size, chunk),
			v.size != s.size ? ", the size rounded up to whole stripe rows" : "");
	else
		fprintf(ctx->out, "created linear volume '%s' (%s)\n", v.name,
			format_size(v.size, size));
	r = tag_opts_tag_new(&a.tags, ctx, WHAT, TAG_ON_VOLUME, v.name);
out:
	for (size_t i = 0; copies && i < a.nr_segs; i++)
		free(copies[i]);
	free(copies);
	free(segs);
	free(a.on);
	free(a.segs);
	tag_opts_release(&a.tags);
	return r;
}

const struct cmd cmd_create_linear = {
	.name = "create linear",
	.usage =
		"create linear NAME --size SIZE [--on DEVICE[,DEVICE...]]... [--read-only]\n"
		"              [--mirrors N | --stripes N [--stripe-size SIZE]] [--addtag TAG]...\n"
		"create linear NAME --segment DEVICE:OFFSET:LENGTH... [--addtag TAG]...\n"
		"\n"
		"Creates the linear volume NAME: SIZE bytes from the free space of the\n"
		"devices (the --on ones, or all), or the segments given, in order.\n"
		"\n"
		"  --size SIZE     the volume's size: a multiple of 4 KiB (K, M, G, T)\n"
		"  --on DEVICES    allocate on these devices only, in this order\n"
		"  --mirrors N     N more copies (1 to 3, lvcreate --type raid1 -m N), each\n"
		"                  on devices no other copy uses; writes go to every copy,\n"
		"                  reads to any; synced in the background after create\n"
		"  --stripes N     stripe it over N devices (2..16: lvcreate -i): chunk c\n"
		"                  of the volume on stripe c mod N; each stripe is carved\n"
		"                  from the first device (of --on, or all) with room for\n"
		"                  it; SIZE is rounded up to whole rows (N chunks)\n"
		"  --stripe-size S the chunk size (lvcreate -I): a power of two from 4 KiB\n"
		"                  to 1 GiB; default 64 KiB\n"
		"  --segment D:O:L LENGTH bytes at OFFSET of device D's data area (after\n"
		"                  its 1 MiB label); both multiples of 4 KiB; repeatable\n"
		"  --read-only     writes fail with EROFS (see 'mapperctl set')\n"
		"  --addtag TAG    tags it (see 'mapperctl set'); repeatable\n",
	.run = create_linear_run,
	.options = options,
	.needs_pool = 1,
};
