/*
 * check: verifies every thin pool's committed metadata (with the daemon,
 * after it committed what it serves): each volume's map exists, every
 * page it reaches exists, nothing maps past the pool's or the volume's
 * end, every block is mapped at one virtual block only (sharing comes
 * only from copied pages), and free and used blocks add up.  Reference
 * counts are derived from the pages, so they equal the references by
 * construction; the daemon derives them the same way.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "opts.h"
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

static int check_pool(struct cmd_ctx *ctx, const struct volume_rec *p, size_t *breaches)
{
	struct check_out o = { ctx, p->name };
	struct thin_walk w;
	size_t n;
	int r;

	r = thin_util_walk(ctx, WHAT, p->id, &w);
	if (r)
		return r;
	n = thin_walk_check(&w, print_breach, &o);
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
