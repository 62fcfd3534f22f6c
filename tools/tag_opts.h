/*
 * tools/tag_opts.h: --addtag TAG and --deltag TAG, as lvchange, vgchange
 * and pvchange take them, for every command that tags (set, device set,
 * create, snapshot, device add).  Each may be given any number of times;
 * a tag that breaks LVM's rule (tags.h) is refused before the pool is
 * touched.
 */
#ifndef MAPPERFS_TAG_OPTS_H
#define MAPPERFS_TAG_OPTS_H

#include <stddef.h>
#include <stdio.h>

#include "pool.h"

/* Option vals outside any command's letters. */
#define TAG_OPT_ADD	1001
#define TAG_OPT_DEL	1002
#define TAG_OPTIONS							\
	{ "addtag", required_argument, NULL, TAG_OPT_ADD },		\
	{ "deltag", required_argument, NULL, TAG_OPT_DEL }

struct tag_opts {
	char **add, **del;		/* the values, in argv; the arrays malloc'ed */
	size_t nr_add, nr_del;
};
#define TAG_OPTS_INIT { 0 }

/*
 * Takes option @c with @arg if it is --addtag or --deltag: 1 if taken, 0
 * if @c is another option, or -errno with @err set ("invalid tag 'x':
 * ...").
 */
int tag_opts_take(struct tag_opts *t, int c, char *arg, struct pool_error *err);
/* Whether any tag was given. */
int tag_opts_any(const struct tag_opts *t);
/* Tags @on object @name as asked (pool_tag); 0 if nothing was asked. */
int tag_opts_apply(const struct tag_opts *t, struct pool *p, enum tag_owner on,
		   const char *name, struct pool_error *err);
/* Prints what was asked as " -old +new", removals first. */
void tag_opts_print(const struct tag_opts *t, FILE *f);
void tag_opts_release(struct tag_opts *t);

#endif
