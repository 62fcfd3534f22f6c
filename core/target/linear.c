#include "linear.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "engine.h"
#include "rcu.h"

struct linear_table {
	unsigned int nr;
	uint64_t *start;		/* volume offset of each segment */
	struct linear_seg *seg;
	unsigned int nr_devs;
	struct device **devs;		/* distinct devices, for flush */
};

struct linear {
	struct target target;
	struct linear_table *_Atomic table;
};

static struct linear *to_linear(struct target *t)
{
	return (struct linear *)t;
}

static void table_free(struct linear_table *tb)
{
	if (!tb)
		return;
	free(tb->start);
	free(tb->seg);
	free(tb->devs);
	free(tb);
}

static struct linear_table *table_build(const struct linear_seg *v, unsigned int nr)
{
	struct linear_table *tb = calloc(1, sizeof(*tb));
	uint64_t at = 0;

	if (!tb)
		return NULL;
	tb->nr = nr;
	tb->start = calloc(nr, sizeof(*tb->start));
	tb->seg = calloc(nr, sizeof(*tb->seg));
	tb->devs = calloc(nr, sizeof(*tb->devs));
	if (!tb->start || !tb->seg || !tb->devs) {
		table_free(tb);
		return NULL;
	}
	for (unsigned int i = 0; i < nr; i++) {
		unsigned int d = 0;

		tb->start[i] = at;
		tb->seg[i] = v[i];
		at += v[i].len;
		while (d < tb->nr_devs && tb->devs[d] != v[i].dev)
			d++;
		if (d == tb->nr_devs)
			tb->devs[tb->nr_devs++] = v[i].dev;
	}
	return tb;
}

/* The segment holding @off: the last whose start is <= off. */
static unsigned int table_find(const struct linear_table *tb, uint64_t off)
{
	unsigned int lo = 0, hi = tb->nr;

	while (hi - lo > 1) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (tb->start[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static int linear_map(struct target *t, enum io_dir dir, uint64_t off,
		      uint32_t len, struct segs *out)
{
	struct linear_table *tb = rcu_load(to_linear(t)->table);
	unsigned int i = table_find(tb, off);
	uint32_t buf_off = 0;

	(void)dir;
	while (len) {
		const struct linear_seg *s;
		uint64_t in_seg, n;

		if (i >= tb->nr)
			return -EIO;	/* size and table disagree */
		s = &tb->seg[i];
		in_seg = off - tb->start[i];
		n = s->len - in_seg < len ? s->len - in_seg : len;
		if (segs_push(out, s->dev, s->dev_off + in_seg, (uint32_t)n, buf_off))
			return -ENOMEM;
		off += n;
		buf_off += (uint32_t)n;
		len -= (uint32_t)n;
		i++;
	}
	return MAP_REMAPPED;
}

/* The devices of @t's table, for target_sync_devices.  Under RCU. */
static struct device *const *linear_devs(struct target *t, unsigned int *nr)
{
	struct linear_table *tb = rcu_load(to_linear(t)->table);

	*nr = tb->nr_devs;
	return tb->devs;
}

static int linear_flush(struct target *t, struct engine *e)
{
	return target_sync_devices(t, e, linear_devs);
}

static int linear_discard(struct target *t, struct engine *e, uint64_t off,
			  uint64_t len, enum discard_mode mode)
{
	struct linear_table *tb;
	int r = 0;

	(void)e;
	/* Devices outlive every table, and segments never move: copy out. */
	while (len && !r) {
		struct linear_seg s;
		uint64_t in_seg, n;
		unsigned int i;

		rcu_read_begin();
		tb = rcu_load(to_linear(t)->table);
		i = table_find(tb, off);
		s = tb->seg[i];
		in_seg = off - tb->start[i];
		rcu_read_end();
		if (in_seg >= s.len)
			return -EINVAL;
		n = s.len - in_seg < len ? s.len - in_seg : len;
		r = target_device_discard(s.dev, s.dev_off + in_seg, n, mode);
		off += n;
		len -= n;
	}
	return r;
}

/*
 * Segment @i of @t's table in *@s, starting at volume offset *@start;
 * false past the last.  Devices outlive every table and segments never
 * move, so the copy stays good outside the read section.
 */
static bool segment_at(struct target *t, unsigned int i, struct linear_seg *s,
		       uint64_t *start)
{
	struct linear_table *tb;
	bool found;

	rcu_read_begin();
	tb = rcu_load(to_linear(t)->table);
	found = i < tb->nr;
	if (found) {
		*s = tb->seg[i];
		*start = tb->start[i];
	}
	rcu_read_end();
	return found;
}

/*
 * The devices' holes show through: a segment on a file answers SEEK_DATA
 * and SEEK_HOLE as the file does (a discard punched holes in it), one on
 * a block device is all data.  One lseek per segment the answer crosses.
 */
static int linear_seek(struct target *t, uint64_t off, uint64_t size, int whence,
		       uint64_t *out)
{
	struct linear_seg s;
	uint64_t start, at;
	unsigned int i;
	int r;

	rcu_read_begin();
	i = table_find(rcu_load(to_linear(t)->table), off);
	rcu_read_end();
	for (; off < size && segment_at(t, i, &s, &start); i++) {
		uint64_t end = start + s.len < size ? start + s.len : size;

		r = device_seek(s.dev, s.dev_off + (off - start), whence, &at);
		if (r == -ENXIO && whence == SEEK_DATA)
			at = s.dev_off + s.len;		/* no data left on the device */
		else if (r)
			return r;
		if (at - s.dev_off < end - start) {
			*out = start + (at - s.dev_off);
			return 0;
		}
		off = end;
	}
	*out = size;
	return whence == SEEK_DATA ? -ENXIO : 0;
}

static void linear_destroy(struct target *t)
{
	table_free(atomic_load(&to_linear(t)->table));
	free(t);
}

static const struct target_ops linear_ops = {
	.name = "linear",
	.parks = true,
	.map = linear_map,
	.fault = target_loads_nothing,
	.fault_release = target_holds_nothing,
	.fault_start = target_faults_inline,
	.write_deferred = target_never_defers,
	.read_failed = target_no_read_retry,
	.write_failed = target_no_write_retry,
	.end_write = target_no_end_write,
	.flush = linear_flush,
	.discard = linear_discard,
	.seek = linear_seek,
	.mapped_bytes = target_all_mapped,
	.destroy = linear_destroy,
};

int linear_create(const struct linear_seg *v, unsigned int nr, struct target **out)
{
	struct linear *l;

	if (!nr)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->target.ops = &linear_ops;
	atomic_init(&l->table, table_build(v, nr));
	if (!atomic_load(&l->table)) {
		free(l);
		return -ENOMEM;
	}
	*out = &l->target;
	return 0;
}

int linear_table_new(const struct linear_seg *v, unsigned int nr,
		     struct linear_table **out)
{
	if (!nr)
		return -EINVAL;
	*out = table_build(v, nr);
	return *out ? 0 : -ENOMEM;
}

void linear_table_free(struct linear_table *tb)
{
	table_free(tb);
}

void linear_publish(struct target *t, struct linear_table *tb)
{
	struct linear_table *old = rcu_publish(to_linear(t)->table, tb);

	rcu_wait_readers();
	table_free(old);
}
