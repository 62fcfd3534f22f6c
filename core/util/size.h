/*
 * core/util/size.h: sizes as people type and read them.
 *
 * Input is what lvcreate -L takes: a number, with a decimal fraction if
 * it comes to a whole number of bytes ("1.5G"), and an optional unit: K,
 * M, G, T, P, E in any case, as "K", "KB" or "KiB" alike (powers of 1024),
 * "s" for 512-byte sectors, "B" for bytes.  Nothing is rounded: "1.3K"
 * is refused.  Output is the largest unit that keeps the number at least
 * 1, with two decimals ("1.50 GiB"), bytes below 1 KiB.
 */
#ifndef MAPPERFS_SIZE_H
#define MAPPERFS_SIZE_H

#include <stdint.h>

#define SIZE_MAX_BYTES	((uint64_t)INT64_MAX)	/* largest size accepted */
#define SIZE_STR_LEN	32			/* room for format_size() */

/*
 * Parses @s into *out.  Returns 0, -EINVAL if it is not a number with a
 * known unit (empty, negative, junk), -EDOM if it is not a whole number of
 * bytes ("1.3K"), or -ERANGE if it exceeds SIZE_MAX_BYTES.  Zero is
 * accepted: callers that need a positive size say so in their own words.
 */
int parse_size(const char *s, uint64_t *out);

/* Writes @bytes for people into @buf and returns @buf, for printf. */
char *format_size(uint64_t bytes, char buf[SIZE_STR_LEN]);

enum size_rounding {
	SIZE_NEAREST,			/* what format_size() does */
	SIZE_DOWN,			/* never more than @bytes: free space */
	SIZE_UP,			/* never less than @bytes: space used */
};

/*
 * format_size(), the last decimal rounded as @how says, so that a figure
 * shown beside a total it is not quite ("63.99 MiB" free of 64 MiB) does
 * not read as the total.
 */
char *format_size_rounded(uint64_t bytes, enum size_rounding how, char buf[SIZE_STR_LEN]);

#endif
