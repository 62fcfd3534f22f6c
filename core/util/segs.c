#include "segs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void segs_init(struct segs *s)
{
	s->v = s->inline_v;
	s->nr = 0;
	s->cap = sizeof(s->inline_v) / sizeof(s->inline_v[0]);
}

void segs_release(struct segs *s)
{
	if (s->v != s->inline_v)
		free(s->v);
	segs_init(s);
}

void segs_reset(struct segs *s)
{
	s->nr = 0;
}

static int segs_grow(struct segs *s)
{
	unsigned int cap = s->cap * 2;
	struct seg *v;

	if (s->v == s->inline_v) {
		v = malloc(cap * sizeof(*v));
		if (v)
			memcpy(v, s->inline_v, s->nr * sizeof(*v));
	} else {
		v = realloc(s->v, cap * sizeof(*v));
	}
	if (!v)
		return -ENOMEM;
	s->v = v;
	s->cap = cap;
	return 0;
}

int segs_push(struct segs *s, struct device *dev, uint64_t dev_off,
	      uint32_t len, uint32_t buf_off)
{
	if (s->nr) {
		struct seg *last = &s->v[s->nr - 1];

		if (last->dev == dev && last->buf_off + last->len == buf_off &&
		    (!dev || last->dev_off + last->len == dev_off)) {
			last->len += len;
			return 0;
		}
	}
	if (s->nr == s->cap && segs_grow(s))
		return -ENOMEM;
	s->v[s->nr++] = (struct seg){ .dev = dev, .dev_off = dev_off,
				      .len = len, .buf_off = buf_off };
	return 0;
}

uint64_t segs_len(const struct segs *s)
{
	uint64_t n = 0;

	for (unsigned int i = 0; i < s->nr; i++)
		n += s->v[i].len;
	return n;
}
