/* tools/tag_opts.c: --addtag and --deltag (tag_opts.h). */
#include "tag_opts.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

static int push(char ***v, size_t *nr, char *arg)
{
	char **n = realloc(*v, (*nr + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	n[(*nr)++] = arg;
	*v = n;
	return 0;
}

int tag_opts_parse(struct cmd_ctx *ctx, const char *what, struct tag_opts *t, int c,
		   char *arg)
{
	if (c != TAG_OPT_ADD && c != TAG_OPT_DEL)
		return CMD_USAGE;
	if (!tag_valid(arg))
		return cmd_error(ctx, what, "invalid tag '%s': %s", arg, TAG_RULES);
	if (c == TAG_OPT_ADD ? push(&t->add, &t->nr_add, arg) : push(&t->del, &t->nr_del, arg))
		return cmd_error(ctx, what, "out of memory");
	return 0;
}

int tag_opts_any(const struct tag_opts *t)
{
	return t->nr_add || t->nr_del;
}

int tag_opts_apply(const struct tag_opts *t, struct pool *p, enum tag_owner on,
		   const char *name, struct pool_error *err)
{
	if (!tag_opts_any(t))
		return 0;
	return pool_tag(p, on, name, t->add, t->nr_add, t->del, t->nr_del, err);
}

int tag_opts_tag_new(const struct tag_opts *t, struct cmd_ctx *ctx, const char *what,
		     enum tag_owner on, const char *name)
{
	struct pool_error err;

	if (!t->nr_add || !pool_tag(ctx->pool, on, name, t->add, t->nr_add, NULL, 0, &err))
		return CMD_OK;
	return cmd_error(ctx, what, "'%s' was made but not tagged: %s", name, err.msg);
}

void tag_opts_print(const struct tag_opts *t, FILE *f)
{
	for (size_t i = 0; i < t->nr_del; i++)
		fprintf(f, " -%s", t->del[i]);
	for (size_t i = 0; i < t->nr_add; i++)
		fprintf(f, " +%s", t->add[i]);
}

void tag_opts_release(struct tag_opts *t)
{
	free(t->add);
	free(t->del);
	*t = (struct tag_opts)TAG_OPTS_INIT;
}
