/*
 * core/target/switch.h: the switch target (dm-switch): the volume is cut into
 * fixed-size regions, and each region is served by one of N paths, as the
 * region table says.
 *
 * A path is a raw device and an offset on it, and reaches the whole
 * volume: byte x of the volume, in a region routed to path p, is byte
 * paths[p].dev_off + x of paths[p].dev (dm-switch's layout).  Several
 * paths may reach the same storage (the multipath case), or each its own.
 *
 * map() finds the table under RCU, splits the request at region
 * boundaries and routes each piece with one atomic load of the table
 * (switch_table.h); it takes no lock and never waits for a table change.
 * The table changes in place, word by word, when a message keeps its
 * shape, and is swapped with RCU when it does not.
 */
#ifndef MAPPERFS_SWITCH_H
#define MAPPERFS_SWITCH_H

#include <stdatomic.h>
#include <stdint.h>

#include "target.h"

struct device;
struct switch_table;

struct switch_path {
	struct device *dev;
	uint64_t dev_off;		/* bytes: where volume byte 0 would be */
};

/* I/O routed to one path, counted in map(); relaxed atomics. */
struct switch_path_stats {
	_Atomic uint64_t reads, writes;			/* requests (pieces) */
	_Atomic uint64_t read_bytes, write_bytes;	/* bytes */
};

/* Regions of @region_size bytes that cover @size bytes. */
uint64_t switch_nr_regions(uint64_t size, uint64_t region_size);

/*
 * A switch target over @nr_paths paths (copied) with regions of
 * @region_size bytes (> 0; a power of two is served with a shift, any
 * other size with a division) and the table @table, which it takes over,
 * also on failure.  The paths must reach nr_regions * region_size bytes.
 * 0, -EINVAL (path count or size disagree with the table), or -ENOMEM.
 */
int switch_create(const struct switch_path *paths, unsigned int nr_paths,
		  uint64_t region_size, struct switch_table *table,
		  struct target **out);

/*
 * Makes the live table equal @src.  Of the same shape: the differing
 * words are stored in place, and readers see each word old or new; a
 * request that is being mapped may use either.  Of another shape (the
 * volume grew): a copy is published with RCU, and this waits for the
 * grace period (admin path).  The single writer only.  0, -EINVAL if @src
 * has another path count, or -ENOMEM.
 */
int switch_set_table(struct target *t, const struct switch_table *src);

/*
 * The live table, for its single writer (the admin path) to copy and
 * count: readers of it are the I/O path's, under RCU.
 */
const struct switch_table *switch_table_of(struct target *t);
/* Per-path counters: @path < nr_paths.  Valid as long as the target. */
const struct switch_path_stats *switch_path_stats(struct target *t,
						  unsigned int path);

#endif
