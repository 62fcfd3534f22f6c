/* tools/tag_opts.c: --addtag and --deltag (tag_opts.h). */
#include "tag_opts.h"

#include <errno.h>
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

int tag_opts_take(struct tag_opts *t, int c, char *arg, struct pool_error *err)
{
	if (c != TAG_OPT_ADD && c != TAG_OPT_DEL)
		return 0;
	if (!tag_valid(arg))
		return pool_fail(err, -EINVAL, "invalid tag '%s': %s", arg, TAG_RULES);
	if (c == TAG_OPT_ADD ? push(&t->add, &t->nr_add, arg) : push(&t->del, &t->nr_del, arg))
		return pool_fail(err, -ENOMEM, "out of memory");
	return 1;
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
