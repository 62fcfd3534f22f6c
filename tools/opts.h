/*
 * tools/opts.h: the values commands take, parsed: sizes, segments,
 * switch paths, thin pool policies.  Each returns 0, or -EINVAL (-ERANGE
 * for a size too large) with a one-line reason naming the value in @err;
 * the command prints it.
 */
#ifndef MAPPERFS_OPTS_H
#define MAPPERFS_OPTS_H

#include <stdint.h>

#include "pool.h"

/* A size ("64M"): see size.h; "size 'x' is negative" ... */
int opts_size(const char *arg, uint64_t *out, struct pool_error *err);
/* A positive size, a multiple of 4 KiB (volume sizes and offsets). */
int opts_block_size(const char *arg, uint64_t *out, struct pool_error *err);

/*
 * "DEVICE:OFFSET:LENGTH" into @out (pointing into @copy, a strdup of
 * @arg that the caller frees).
 */
int opts_segment(const char *arg, char **copy, struct pool_segment *out,
		 struct pool_error *err);
/* "DEVICE" (its space allocated) or "DEVICE:OFFSET", likewise. */
int opts_switch_path(const char *arg, char **copy, struct pool_switch_path *out,
		     struct pool_error *err);

/* --when-full "error" or "wait:SECONDS" (1..86400) into @p. */
int opts_when_full(const char *arg, struct thin_pool_rec *p, struct pool_error *err);
/*
 * A percentage @min..100; the message gives that range, as the service's
 * own check of the value does.
 */
int opts_percent(const char *arg, const char *what, uint32_t min, uint32_t *out,
		 struct pool_error *err);

/* A whole number @min..@max: "WHAT 'ARG' must be a number MIN..MAX". */
int opts_number(const char *arg, const char *what, uint32_t min, uint32_t max, uint32_t *out,
		struct pool_error *err);

#endif
