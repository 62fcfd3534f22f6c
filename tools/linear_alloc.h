/*
 * tools/linear_alloc.h: giving a linear volume more space, shared by
 * `create linear --size` and `extend`.
 */
#ifndef MAPPERFS_LINEAR_ALLOC_H
#define MAPPERFS_LINEAR_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "cmd.h"

/*
 * Carves @length bytes out of the devices @devs (all devices when
 * @nr_devs is 0) with space_allocate() and records them as extents
 * @seq, @seq + 1, ... of volume @volume, inside the caller's transaction.
 * Returns 0, or CMD_FAIL after printing the error, e.g. "not enough free
 * space for 10.00 GiB on device(s) d0 (5.00 GiB free)"; the caller rolls
 * back.
 */
int linear_alloc_append(struct cmd_ctx *ctx, const char *what, int64_t volume,
			uint32_t seq, uint64_t length, const int64_t *devs,
			size_t nr_devs);

#endif
