/*
 * core/target/linear.h: the linear target (dm-linear): the volume is its
 * segments, concatenated in order.
 *
 * The segment table is immutable once published.  extend builds a new
 * table and swaps the pointer; readers that still hold the old one finish
 * with it, and it is freed after an RCU grace period.  map() is a binary
 * search over the table's start offsets: no lock.
 */
#ifndef MAPPERFS_LINEAR_H
#define MAPPERFS_LINEAR_H

#include <stdint.h>

#include "target.h"

struct device;

struct linear_seg {
	struct device *dev;
	uint64_t dev_off;		/* bytes */
	uint64_t len;			/* bytes, > 0 */
};

/* 0, -EINVAL for an empty table, or -ENOMEM. */
int linear_create(const struct linear_seg *v, unsigned int nr,
		  struct target **out);

struct linear_table;

/* A table of @nr segments, to publish later.  0, -EINVAL, -ENOMEM. */
int linear_table_new(const struct linear_seg *v, unsigned int nr,
		     struct linear_table **out);
void linear_table_free(struct linear_table *tb);
/*
 * Publishes @tb (taken) as @t's table.  Readers never wait; this waits
 * for the grace period that frees the old table (admin path).  Cannot
 * fail, so an admin change can publish after it committed.
 */
void linear_publish(struct target *t, struct linear_table *tb);

#endif
