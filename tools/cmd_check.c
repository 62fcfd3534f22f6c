/*
 * check: verifies every thin pool's committed metadata: each volume's map
 * exists, every page it reaches exists, nothing maps past the pool's or
 * the volume's end, every block is mapped at one virtual block only
 * (sharing comes only from copied pages), and free and used blocks add
 * up.  The store keeps no counts (they derive from the pages), so with the
 * daemon check also compares the counts the daemon keeps incrementally,
 * as of a commit it makes for this, with the counts the committed pages
 * give: each block's references, no block both free and used, free space.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "opts.h"
#include "thin_pool.h"
#include "thin_util.h"

#define WHAT "check"

struct check_out {
	struct cmd_ctx *ctx;
	const char *pool;
};

static void print_breach(void *arg, const char *msg)
{
	struct check_out *o = arg;

	fprintf(o->ctx->err, "mapperctl: check: thin pool '%s': %s\n", o->pool, msg);
}

static void breach(struct check_out *o, size_t *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void breach(struct check_out *o, size_t *n, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	print_breach(o, msg);
	(*n)++;
}

/* The daemon's counts against the ones the committed pages give. */
static size_t compare_counts(struct check_out *o, const struct thin_walk *w,
			     const struct thin_pool_counts *c)
{
	uint64_t pending = 0;
	size_t n = 0;

	if (c->nr_blocks != w->nr_blocks) {
		breach(o, &n, "the daemon has %llu blocks, the metadata %llu",
		       (unsigned long long)c->nr_blocks, (unsigned long long)w->nr_blocks);
		return n;
	}
	for (uint64_t b = 0; b < c->nr_blocks && n < 20; b++) {
		pending += c->pending[b];
		if (c->refs[b] != w->block_refs[b])
			breach(o, &n, "block %llu: the daemon counts %u references, the committed pages %u",
			       (unsigned long long)b, c->refs[b], w->block_refs[b]);
		if (c->pending[b] && w->block_refs[b])
			breach(o, &n, "block %llu is both free and mapped", (unsigned long long)b);
	}
	if (!n && c->nr_free + pending + w->used != c->nr_blocks)
		breach(o, &n, "free (%llu), freed (%llu) and used (%llu) blocks do not add up to %llu",
		       (unsigned long long)c->nr_free, (unsigned long long)pending,
		       (unsigned long long)w->used, (unsigned long long)c->nr_blocks);
	return n;
}

static int check_pool(struct cmd_ctx *ctx, const struct volume_rec *p, size_t *breaches)
{
	struct check_out o = { ctx, p->name };
	struct thin_pool_counts counts = { 0 };
	struct thin_walk w;
	size_t n;
	int r;

	if (ctx->live) {
		r = ctx->live->pool_counts(ctx->live_arg, p->id, &counts);
		if (r)
			return cmd_error(ctx, WHAT, "the daemon cannot commit thin pool '%s': %s",
					 p->name, strerror(-r));
	}
	r = thin_walk_load(ctx->store, p->id, &w);
	if (r) {
		thin_pool_counts_release(&counts);
		return opts_store_error(ctx, WHAT, "read the thin pool's metadata", r);
	}
	n = thin_walk_check(&w, print_breach, &o);
	if (ctx->live)
		n += compare_counts(&o, &w, &counts);
	thin_pool_counts_release(&counts);
	fprintf(ctx->out, "thin pool '%s': %zu volumes, %llu of %llu blocks used, %zu breaches\n",
		p->name, w.nr_vols, (unsigned long long)w.used,
		(unsigned long long)w.nr_blocks, n);
	*breaches += n;
	thin_walk_release(&w);
	return 0;
}

static int check_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = { { 0 } };
	struct volume_rec *v = NULL;
	size_t nr = 0, breaches = 0;
	int r;

	if (opts_next(ctx, WHAT, argc, argv, longopts, 1) != -1)
		return CMD_USAGE;
	r = opts_args(ctx, WHAT, argc, argv, 0, 1, "the thin POOL");
	if (r)
		return r;
	r = store_volume_list(ctx->store, &v, &nr);
	if (r)
		return opts_store_error(ctx, WHAT, "list the volumes", r);
	for (size_t i = 0; !r && i < nr; i++) {
		if (strcmp(v[i].kind, "thin-pool"))
			continue;
		if (optind < argc && strcmp(v[i].name, argv[optind]))
			continue;
		r = check_pool(ctx, &v[i], &breaches);
	}
	free(v);
	if (!r && breaches)
		r = cmd_error(ctx, WHAT, "%zu breaches found", breaches);
	return r;
}

const struct cmd cmd_check = {
	.name = "check",
	.usage =
		"check [POOL]\n"
		"\n"
		"Verifies the metadata of every thin pool (or of POOL); prints each\n"
		"broken invariant and exits 1 if there is any.\n",
	.run = check_run,
	.needs_store = 1,
};
