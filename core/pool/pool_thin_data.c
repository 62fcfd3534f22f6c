/*
 * core/pool/pool_thin_data.c: a thin pool's data area, the target its
 * blocks live on (core/thin/thin_data.c).
 *
 * A plain pool's data area is a linear target over its extents, each cut
 * to whole blocks: that is how the areas were always counted, so block
 * numbers stay where existing pools have them.  A mirrored pool (`create
 * thin-pool --mirrors N`, LVM's raid1 under a thin pool's data) is a
 * mirror of its legs, each a linear target over that leg's extents, one
 * range [0, size) of whole blocks: it has everything a mirrored linear
 * volume has (pool_mirror.c), its write-intent log POOL/mirrors/<id>.log,
 * resync, failed legs served around, replace and refresh.  The thin map
 * above it does not know which it runs on.
 *
 * A plain pool's data moves off a device (pool_move.c) as a linear
 * volume does: run on a mirror of where it is and where it goes
 * (thin_pool_set_data), then on the new place.  For that its extents are
 * whole blocks, so that both places number the blocks alike: pools are
 * carved in whole blocks (pool_plan_extents' grain), and one carved
 * before, with an extent short of whole blocks, is refused by name.
 */
#include "pool_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "linear.h"
#include "mirror.h"
#include "thin_pool.h"

int pool_thin_data_segs(struct pool *p, struct pool_volume *tp, const struct extent_rec *extra,
			size_t nr_extra, struct linear_seg **out, unsigned int *nr,
			uint64_t *bytes, struct pool_error *err)
{
	uint32_t bs = tp->tp.rec->block_size;
	struct linear_seg *segs;
	unsigned int n, k = 0;
	int r = pool_volume_segs(p, tp, extra, nr_extra, &segs, &n, err);

	if (r)
		return r;
	*bytes = 0;
	for (unsigned int i = 0; i < n; i++) {
		segs[i].len -= segs[i].len % bs;	/* a tail short of a block is unused */
		if (segs[i].len)
			segs[k++] = segs[i];
		*bytes += segs[i].len;
	}
	if (!k) {
		free(segs);
		return pool_fail(err, -EINVAL, "its data area holds no whole block");
	}
	*out = segs;
	*nr = k;
	return 0;
}

int pool_thin_data_open(struct pool *p, struct pool_volume *tp, const struct extent_rec *extra,
			size_t nr_extra, uint64_t *bytes, struct pool_error *err)
{
	unsigned int legs = pool_volume_legs_with(p, tp, extra, nr_extra), nr;
	struct linear_seg *segs;
	int r;

	if (tp->tp.data) {		/* built before its records (create) */
		*bytes = tp->rec.size;
		return 0;
	}
	if (pool_move_source_of(p, tp) >= 0) {	/* whole blocks: pool_thin_data_build_over */
		*bytes = tp->rec.size;
		return pool_move_build(p, tp, &tp->tp.data, err);
	}
	if (legs > 1) {
		*bytes = tp->rec.size;
		return pool_mirror_build(p, tp, legs, extra, nr_extra, &tp->tp.data, err);
	}
	r = pool_thin_data_segs(p, tp, extra, nr_extra, &segs, &nr, bytes, err);
	if (r)
		return r;
	r = linear_create(segs, nr, &tp->tp.data);
	free(segs);
	return r ? pool_fail(err, r, "cannot build its data area: %s", strerror(-r)) : 0;
}

void pool_thin_data_close(struct pool_volume *tp)
{
	if (tp->tp.data)
		tp->tp.data->ops->destroy(tp->tp.data);
	tp->tp.data = NULL;
}

int pool_thin_data_build_over(struct pool *p, struct pool_volume *tp,
			      const struct extent_rec *e, size_t n, struct target **out,
			      struct pool_error *err)
{
	uint32_t bs = tp->tp.rec->block_size;
	struct linear_seg *segs;
	unsigned int nr;
	int r;

	for (size_t i = 0; i < n; i++) {
		struct pool_device *d = pool_device_by_id(p, e[i].device);

		if (e[i].length % bs)
			return pool_fail(err, -EOPNOTSUPP, "thin pool '%s': its data extent on '%s' "
					 "is not whole blocks of %u bytes (carved before pools were "
					 "carved in whole blocks): its data cannot move", tp->rec.name,
					 d ? d->rec.name : "?", bs);
	}
	r = pool_extents_segs(p, e, n, &segs, &nr, err);
	if (r)
		return r;
	r = linear_create(segs, nr, out);
	free(segs);
	return r ? pool_fail(err, r, "cannot build its data area: %s", strerror(-r)) : 0;
}

struct target *pool_thin_data_reload(struct pool_volume *tp, struct target *t)
{
	struct target *old = tp->tp.data;

	if (tp->tp.pool)
		old = thin_pool_set_data(tp->tp.pool, t);
	tp->tp.data = t;
	return old;
}
