/*
 * tools/tag_opts.h: --addtag TAG and --deltag TAG, as lvchange, vgchange
 * and pvchange take them, for every command that tags (set, device set,
 * the create commands, device add).  Each may be given any number of
 * times; a tag that breaks LVM's rule (tags.h) is refused before the
 * pool is touched.
 */
#ifndef MAPPERFS_TAG_OPTS_H
#define MAPPERFS_TAG_OPTS_H

#include <stddef.h>
#include <stdio.h>

#include "cmd.h"

/* Option vals outside any command's letters. */
#define TAG_OPT_ADD	1001
#define TAG_OPT_DEL	1002
/* What a command that makes an object takes; one that changes it takes both. */
#define TAG_ADD_OPTION	{ "addtag", required_argument, NULL, TAG_OPT_ADD }
#define TAG_OPTIONS	TAG_ADD_OPTION, { "deltag", required_argument, NULL, TAG_OPT_DEL }

struct tag_opts {
	char **add, **del;		/* the values, in argv; the arrays malloc'ed */
	size_t nr_add, nr_del;
};
#define TAG_OPTS_INIT { 0 }

/*
 * For a command's option loop: takes option @c with @arg if it is
 * --addtag or --deltag (0); CMD_USAGE if @c is another option; CMD_FAIL
 * after one line if the tag breaks the rule ("invalid tag 'x': ...").
 */
int tag_opts_parse(struct cmd_ctx *ctx, const char *what, struct tag_opts *t, int c,
		   char *arg);
/* Whether any tag was given. */
int tag_opts_any(const struct tag_opts *t);
/* Tags @on object @name as asked (pool_tag); 0 if nothing was asked. */
int tag_opts_apply(const struct tag_opts *t, struct pool *p, enum tag_owner on,
		   const char *name, struct pool_error *err);
/*
 * For a command that has just made object @name: tags it with the
 * --addtag values.  CMD_OK, or CMD_FAIL after one line saying it was made
 * but not tagged.
 */
int tag_opts_tag_new(const struct tag_opts *t, struct cmd_ctx *ctx, const char *what,
		     enum tag_owner on, const char *name);
/* Prints what was asked as " -old +new", removals first. */
void tag_opts_print(const struct tag_opts *t, FILE *f);
void tag_opts_release(struct tag_opts *t);

#endif
