/*
 * core/size.h: sizes as people type and read them.
 *
 * Input is a whole number of bytes with an optional K, M, G or T suffix
 * (powers of 1024, any case, "KiB" spelled out also accepted), as lvcreate
 * and qemu-img take it.  Decimals are refused rather than rounded: a
 * volume's size must be exact.  Output is the largest unit that keeps the
 * number at least 1, with two decimals ("1.50 GiB"), bytes below 1 KiB.
 */
#ifndef MAPPERFS_SIZE_H
#define MAPPERFS_SIZE_H

#include <stdint.h>

#define SIZE_MAX_BYTES	((uint64_t)INT64_MAX)	/* largest size accepted */
#define SIZE_STR_LEN	32			/* room for format_size() */

/*
 * Parses @s into *out.  Returns 0, -EINVAL if it is not a whole number
 * with a known suffix (empty, negative, decimal, junk), or -ERANGE if it
 * exceeds SIZE_MAX_BYTES.  Zero is accepted: callers that need a positive
 * size say so in their own words.
 */
int parse_size(const char *s, uint64_t *out);

/* Writes @bytes for people into @buf and returns @buf, for printf. */
char *format_size(uint64_t bytes, char buf[SIZE_STR_LEN]);

#endif
