/*
 * core/thin/thin_origin.c: where an unmapped piece of a thin volume reads
 * from: its external origin's bytes (thin.c: External origin), else zeros.
 * map() (thin.c) reads through it and a first write (thin_provision.c)
 * copies through it, so it lives apart from both: neither file calls the
 * other's.
 */
#include "thin_int.h"

#include <errno.h>

/*
 * Where [off, off + n) of the origin lies, appended to @out at @buf_off:
 * the origin's own map, shifted into our buffer.  Under RCU.  MAP_MISS
 * (nothing appended) where the origin's map is not loaded (a thin volume).
 */
static int map_origin(struct thin *th, uint64_t off, uint32_t n, uint32_t buf_off,
		      struct segs *out)
{
	struct segs tmp;
	int r;

	segs_init(&tmp);
	r = th->origin->ops->map(th->origin, IO_READ, off, n, &tmp);
	if (r == MAP_REMAPPED) {
		for (unsigned int i = 0; i < tmp.nr && !r; i++)
			r = segs_push(out, tmp.v[i].dev, tmp.v[i].dev_off, tmp.v[i].len,
				      buf_off + tmp.v[i].buf_off);
	} else if (r > 0 && r != MAP_MISS) {
		r = -EIO;		/* an origin never defers reads */
	}
	segs_release(&tmp);
	return r;
}

int thin_push_unmapped(struct thin *th, uint64_t off, uint32_t n, uint32_t buf_off,
		       struct segs *out)
{
	uint32_t from_origin = 0;
	int r;

	if (th->origin && off < th->origin_size) {
		from_origin = th->origin_size - off < n ? (uint32_t)(th->origin_size - off) : n;
		r = map_origin(th, off, from_origin, buf_off, out);
		if (r)
			return r;
	}
	if (from_origin == n)
		return 0;
	return segs_push(out, NULL, 0, n - from_origin, buf_off + from_origin);
}
