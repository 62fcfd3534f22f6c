/* core/util/tags.c: tag sets (tags.h), kept sorted for a binary search. */
#include "tags.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool tag_valid(const char *tag)
{
	size_t n = strlen(tag);

	if (!n || n > TAG_MAX)
		return false;
	return strspn(tag, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			   "0123456789_+.-") == n;
}

void tags_release(struct tags *t)
{
	for (size_t i = 0; i < t->nr; i++)
		free(t->v[i]);
	free(t->v);
	t->v = NULL;
	t->nr = 0;
}

/* Where @tag is, or would go; *found says which. */
static size_t tags_find(const struct tags *t, const char *tag, bool *found)
{
	size_t lo = 0, hi = t->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(t->v[mid], tag);

		if (!c) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

bool tags_has(const struct tags *t, const char *tag)
{
	bool found;

	tags_find(t, tag, &found);
	return found;
}

int tags_add(struct tags *t, const char *tag)
{
	bool found;
	size_t at = tags_find(t, tag, &found);
	char **v, *copy;

	if (found)
		return 0;
	copy = strdup(tag);
	v = copy ? realloc(t->v, (t->nr + 1) * sizeof(*v)) : NULL;
	if (!v) {
		free(copy);
		return -ENOMEM;
	}
	memmove(v + at + 1, v + at, (t->nr - at) * sizeof(*v));
	v[at] = copy;
	t->v = v;
	t->nr++;
	return 0;
}

void tags_remove(struct tags *t, const char *tag)
{
	bool found;
	size_t at = tags_find(t, tag, &found);

	if (!found)
		return;
	free(t->v[at]);
	memmove(t->v + at, t->v + at + 1, (t->nr - at - 1) * sizeof(*t->v));
	t->nr--;
}

int tags_copy(struct tags *dst, const struct tags *src)
{
	for (size_t i = 0; i < src->nr; i++) {
		if (tags_add(dst, src->v[i])) {
			tags_release(dst);
			return -ENOMEM;
		}
	}
	return 0;
}
