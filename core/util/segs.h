/*
 * core/util/segs.h: where one request lands on the raw devices.
 *
 * A target's map() turns a byte range of a volume into segments, in
 * volume order.  A segment with no device is a hole: it reads as zeros.
 */
#ifndef MAPPERFS_SEGS_H
#define MAPPERFS_SEGS_H

#include <stdint.h>

struct device;

struct seg {
	struct device *dev;		/* NULL: a hole, reads as zeros */
	uint64_t dev_off;		/* bytes on dev */
	uint32_t len;			/* bytes */
	uint32_t buf_off;		/* bytes into the request's buffer */
	uint32_t done;			/* bytes transferred so far (engine) */
};

struct segs {
	struct seg *v;
	unsigned int nr, cap;
	struct seg inline_v[8];		/* most requests need no allocation */
};

void segs_init(struct segs *s);
void segs_release(struct segs *s);		/* frees v, not s */
void segs_reset(struct segs *s);		/* nr = 0, keeps memory */
/* Drops the segments past the first @nr (a map undone). */
static inline void segs_truncate(struct segs *s, unsigned int nr)
{
	s->nr = nr;
}

/*
 * Appends a segment, merging it into the last one when it continues it on
 * the same device (so contiguous runs become one SQE).  0 or -ENOMEM.
 */
int segs_push(struct segs *s, struct device *dev, uint64_t dev_off,
	      uint32_t len, uint32_t buf_off);
uint64_t segs_len(const struct segs *s);	/* bytes */

#endif
