/*
 * snapshot: writable thin volumes sharing every block of thin volumes, in
 * O(1), while the origins are in use (pool_snapshot).  One ORIGIN NAME
 * pair, or with --group several ORIGIN=NAME pairs taken at one instant.
 * Snapshots are inactive (not in the mount) unless --active, as LVM's.
 */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "tag_opts.h"

#define WHAT "snapshot"

static const struct option options[] = {
	{ "group", no_argument, NULL, 'g' },
	{ "active", no_argument, NULL, 'a' },
	{ "read-only", no_argument, NULL, 'r' },
	TAG_ADD_OPTION,
	{ 0 }
};

/* ORIGIN=NAME arguments, split in place. */
static int parse_group(struct cmd_ctx *ctx, int argc, char **argv,
		       struct pool_snapshot_pair *pairs)
{
	for (int i = ctx->optind; i < argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (!eq || eq == argv[i] || !eq[1])
			return cmd_error(ctx, WHAT, "'%s' is not ORIGIN=NAME", argv[i]);
		*eq = '\0';
		pairs[i - ctx->optind] = (struct pool_snapshot_pair){ argv[i], eq + 1 };
	}
	return 0;
}

static int snapshot_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct tag_opts tags = TAG_OPTS_INIT;
	struct pool_snapshot_spec s = { 0 };
	struct pool_snapshot_pair *pairs = NULL;
	struct volume_rec *v = NULL;
	struct pool_error err;
	int c, r, group = 0;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		if (c == 'g')
			group = 1;
		else if (c == 'a')
			s.active = true;
		else if (c == 'r')
			s.read_only = true;
		else if ((r = tag_opts_parse(ctx, WHAT, &tags, c, optarg)))
			goto out;
	}
	r = group ? cmd_args(ctx, WHAT, argc, argv, 1, argc, "ORIGIN=NAME") :
		    cmd_args(ctx, WHAT, argc, argv, 2, 2, "the ORIGIN and the snapshot NAME");
	if (r)
		goto out;
	s.nr = group ? (size_t)(argc - ctx->optind) : 1;
	pairs = calloc(s.nr, sizeof(*pairs));
	v = calloc(s.nr, sizeof(*v));
	if (!pairs || !v) {
		r = cmd_error(ctx, WHAT, "out of memory");
		goto out;
	}
	if (group)
		r = parse_group(ctx, argc, argv, pairs);
	else
		pairs[0] = (struct pool_snapshot_pair){ argv[ctx->optind], argv[ctx->optind + 1] };
	if (r)
		goto out;
	s.pairs = pairs;
	if (pool_snapshot(ctx->pool, &s, v, &err)) {
		r = cmd_fail(ctx, WHAT, &err);
		goto out;
	}
	for (size_t i = 0; i < s.nr; i++)
		fprintf(ctx->out, "created snapshot '%s' of '%s'%s%s\n", v[i].name, pairs[i].origin,
			s.read_only ? ", read-only" : "", s.active ? "" : ", inactive");
	r = CMD_OK;
	for (size_t i = 0; !r && i < s.nr; i++)
		r = tag_opts_tag_new(&tags, ctx, WHAT, TAG_ON_VOLUME, v[i].name);
out:
	free(pairs);
	free(v);
	tag_opts_release(&tags);
	return r;
}

const struct cmd cmd_snapshot = {
	.name = "snapshot",
	.usage =
		"snapshot ORIGIN NAME [--active] [--read-only] [--addtag TAG]...\n"
		"snapshot --group ORIGIN=NAME... [--active] [--read-only] [--addtag TAG]...\n"
		"\n"
		"Creates thin volume NAME with the content of thin volume ORIGIN, sharing\n"
		"its blocks until either is written.  Works while ORIGIN is in use.\n"
		"A snapshot is inactive (not a file in the mount) until 'mapperctl\n"
		"activate NAME', as LVM's are, unless --active.\n"
		"\n"
		"  --group      take a snapshot of each ORIGIN at one instant: writes to\n"
		"               all of them wait while all are taken, so the snapshots\n"
		"               agree with each other (a VM's disks); all or nothing\n"
		"  --active     put the snapshots in the mount at once\n"
		"  --read-only  writes to the snapshots fail with EROFS (see 'set')\n"
		"  --addtag TAG tags each snapshot (see 'set'); repeatable; a snapshot\n"
		"               does not take its origin's tags\n",
	.run = snapshot_run,
	.options = options,
	.needs_pool = 1,
};
