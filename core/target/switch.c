/*
 * The switch target keeps the region table behind an RCU pointer, but
 * almost never swaps it.  A set_region_mappings message is staged on a
 * private copy and then published word by word into the live table
 * (switch_set_table), so a million-region update costs one pass of
 * stores and no grace period, and requests keep flowing through it.  Only
 * a table of another shape (the volume was resized) is swapped whole.
 *
 * A request that crosses region boundaries is split at each of them, and
 * each piece goes to its region's path; segs_push() merges neighbouring
 * pieces that land contiguously on one device, so a 1 MiB request over
 * regions that share a path is still one SQE.  Region size is usually a
 * power of two and costs a shift; any other multiple of 4 KiB costs a
 * division per request.
 */
#include "switch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "engine.h"
#include "rcu.h"
#include "switch_table.h"

/* One cache line per path, so that counting does not bounce lines. */
struct switch_path_slot {
	struct switch_path path;
	struct switch_path_stats stats;
} __attribute__((aligned(64)));

struct switch_target {
	struct target target;
	struct switch_table *_Atomic table;
	uint64_t region_size;		/* bytes */
	int region_shift;		/* log2(region_size), or -1: divide */
	unsigned int nr_paths;
	unsigned int nr_devs;
	struct device *devs[SWITCH_PATHS_MAX];	/* distinct, for flush */
	struct switch_path_slot *slot;
};

static struct switch_target *to_switch(struct target *t)
{
	return (struct switch_target *)t;
}

uint64_t switch_nr_regions(uint64_t size, uint64_t region_size)
{
	return size / region_size + (size % region_size != 0);
}

static uint64_t region_of(const struct switch_target *s, uint64_t off)
{
	if (s->region_shift >= 0)
		return off >> s->region_shift;
	return off / s->region_size;
}

/* @more: the piece continues a request already counted on this path. */
static void count(struct switch_path_stats *st, enum io_dir dir, int more,
		  uint32_t len)
{
	if (dir == IO_READ) {
		if (!more)
			atomic_fetch_add_explicit(&st->reads, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&st->read_bytes, len, memory_order_relaxed);
	} else {
		if (!more)
			atomic_fetch_add_explicit(&st->writes, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&st->write_bytes, len, memory_order_relaxed);
	}
}

/*
 * Counts one request per run of pieces on one path (what becomes one
 * segment), and every byte.
 */
static int switch_map(struct target *t, enum io_dir dir, uint64_t off,
		      uint32_t len, struct segs *out)
{
	struct switch_target *s = to_switch(t);
	struct switch_table *tb = rcu_load(s->table);
	uint64_t region = region_of(s, off);
	uint64_t end = (region + 1) * s->region_size;
	struct switch_path_slot *prev = NULL;
	uint32_t buf_off = 0;

	while (len) {
		uint32_t n = end - off < len ? (uint32_t)(end - off) : len;
		struct switch_path_slot *p;

		if (region >= tb->nr_regions)
			return -EIO;	/* size and table disagree */
		p = &s->slot[switch_table_get(tb, region)];
		if (segs_push(out, p->path.dev, p->path.dev_off + off, n, buf_off))
			return -ENOMEM;
		count(&p->stats, dir, p == prev, n);
		prev = p;
		off += n;
		buf_off += n;
		len -= n;
		region++;
		end += s->region_size;
	}
	return MAP_REMAPPED;
}

static int switch_flush(struct target *t, struct engine *e)
{
	struct switch_target *s = to_switch(t);

	return engine_sync(e, s->devs, s->nr_devs);
}

/* The path that serves @region, copied out of the table.  -EINVAL past it. */
static int path_of(struct switch_target *s, uint64_t region, struct switch_path *out)
{
	struct switch_table *tb;
	int r = 0;

	rcu_read_begin();
	tb = rcu_load(s->table);
	if (region < tb->nr_regions)
		*out = s->slot[switch_table_get(tb, region)].path;
	else
		r = -EINVAL;
	rcu_read_end();
	return r;
}

/* Each region's piece on its path, one at a time: discard is rare. */
static int switch_discard(struct target *t, struct engine *e, uint64_t off,
			  uint64_t len, enum discard_mode mode)
{
	struct switch_target *s = to_switch(t);
	int r = 0;

	(void)e;
	while (len && !r) {
		uint64_t region = region_of(s, off);
		uint64_t n = (region + 1) * s->region_size - off;
		struct switch_path p;

		r = path_of(s, region, &p);
		if (r)
			return r;
		if (n > len)
			n = len;
		r = target_device_discard(p.dev, p.dev_off + off, n, mode);
		off += n;
		len -= n;
	}
	return r;
}

static void switch_destroy(struct target *t)
{
	struct switch_target *s = to_switch(t);

	switch_table_destroy(atomic_load(&s->table));
	free(s->slot);
	free(s);
}

static const struct target_ops switch_ops = {
	.name = "switch",
	.map = switch_map,
	.fault = target_loads_nothing,
	.fault_release = target_holds_nothing,
	.fault_start = target_faults_inline,
	.write_deferred = target_never_defers,
	.read_failed = target_no_read_retry,
	.write_failed = target_no_write_retry,
	.end_write = target_no_end_write,
	.flush = switch_flush,
	.discard = switch_discard,
	.seek = target_seek_all_data,
	.mapped_bytes = target_all_mapped,
	.destroy = switch_destroy,
};

static int log2_exact(uint64_t n)
{
	int shift = 0;

	if (n & (n - 1))
		return -1;
	while ((1ull << shift) < n)
		shift++;
	return shift;
}

static void add_dev(struct switch_target *s, struct device *dev)
{
	for (unsigned int i = 0; i < s->nr_devs; i++)
		if (s->devs[i] == dev)
			return;
	s->devs[s->nr_devs++] = dev;
}

int switch_create(const struct switch_path *paths, unsigned int nr_paths,
		  uint64_t region_size, struct switch_table *table,
		  struct target **out)
{
	struct switch_target *s;

	if (!region_size || table->nr_paths != nr_paths) {
		switch_table_destroy(table);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (s)
		s->slot = aligned_alloc(64, nr_paths * sizeof(*s->slot));
	if (!s || !s->slot) {
		free(s);
		switch_table_destroy(table);
		return -ENOMEM;
	}
	s->target.ops = &switch_ops;
	s->region_size = region_size;
	s->region_shift = log2_exact(region_size);
	s->nr_paths = nr_paths;
	memset(s->slot, 0, nr_paths * sizeof(*s->slot));
	for (unsigned int i = 0; i < nr_paths; i++) {
		s->slot[i].path = paths[i];
		add_dev(s, paths[i].dev);
	}
	atomic_init(&s->table, table);
	*out = &s->target;
	return 0;
}

int switch_set_table(struct target *t, const struct switch_table *src)
{
	struct switch_target *s = to_switch(t);
	struct switch_table *live = atomic_load(&s->table), *copy;
	int r;

	if (src->nr_paths != s->nr_paths)
		return -EINVAL;
	if (switch_table_same_shape(live, src)) {
		switch_table_copy_words(live, src);
		return 0;
	}
	r = switch_table_clone(src, &copy);
	if (r)
		return r;
	rcu_publish(s->table, copy);
	rcu_wait_readers();
	switch_table_destroy(live);
	return 0;
}

const struct switch_table *switch_table_of(struct target *t)
{
	return atomic_load(&to_switch(t)->table);
}

const struct switch_path_stats *switch_path_stats(struct target *t,
						  unsigned int path)
{
	return &to_switch(t)->slot[path].stats;
}
