/*
 * core/util/tags.h: the tags a volume, thin pool or device carries (LVM's
 * --addtag), and what a tag may be.
 *
 * A tag is 1 to TAG_MAX characters of [A-Za-z0-9_+.-], LVM's rule, so
 * that it reads the same in a report, a --select expression (@tag) and a
 * command line.  An object carries each tag once; a set keeps them
 * sorted, so reports list them in one order whatever order they came in.
 */
#ifndef MAPPERFS_TAGS_H
#define MAPPERFS_TAGS_H

#include <stdbool.h>
#include <stddef.h>

#define TAG_MAX		128		/* bytes of a tag */

/* Completes "invalid tag 'x': " in error messages. */
#define TAG_RULES	"use letters, digits and _ + . - (at most 128)"

/* true if @tag is a valid tag. */
bool tag_valid(const char *tag);

/* A set of tags, sorted, each once. */
struct tags {
	char **v;			/* malloc'ed strings */
	size_t nr;
};
#define TAGS_INIT { 0 }

void tags_release(struct tags *t);		/* frees the strings and v, not t */
bool tags_has(const struct tags *t, const char *tag);	/* O(log n) */
/* Adds @tag unless it is there.  0 or -ENOMEM. */
int tags_add(struct tags *t, const char *tag);
/* Removes @tag if it is there. */
void tags_remove(struct tags *t, const char *tag);
/* A copy of @src into @dst (empty before).  0 or -ENOMEM (@dst left empty). */
int tags_copy(struct tags *dst, const struct tags *src);

#endif
