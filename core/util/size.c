#include "size.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char size_units[] = "KMGTPE";

/*
 * log2 of the unit at *p (none: bytes; "s": 512-byte sectors; K, M, G,
 * T, P, E in any case, with an optional "iB" or "B"), advancing past it;
 * -1 for junk.
 */
static int parse_unit(const char **p)
{
	const char *u;

	if (!**p)
		return 0;
	if (**p == 's' || **p == 'S') {
		(*p)++;
		return 9;
	}
	if (**p == 'b' || **p == 'B') {
		(*p)++;
		return 0;
	}
	u = strchr(size_units, toupper((unsigned char)**p));
	if (!u)
		return -1;
	(*p)++;
	if (!strcasecmp(*p, "iB"))
		*p += 2;
	else if (!strcasecmp(*p, "B"))
		*p += 1;
	return 10 * (int)(u - size_units + 1);
}

int parse_size(const char *s, uint64_t *out)
{
	unsigned __int128 whole = 0, frac = 0, scale = 1, v;
	const char *p = s;
	int shift;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		whole = whole * 10 + (unsigned int)(*p - '0');
		if (whole > SIZE_MAX_BYTES)
			return -ERANGE;
	}
	if (*p == '.') {
		if (!isdigit((unsigned char)*++p))
			return -EINVAL;
		for (; isdigit((unsigned char)*p); p++) {
			if (scale > UINT64_MAX)
				return -EDOM;		/* finer than any unit */
			frac = frac * 10 + (unsigned int)(*p - '0');
			scale *= 10;
		}
	}
	shift = parse_unit(&p);
	if (shift < 0 || *p)
		return -EINVAL;
	if (whole > SIZE_MAX_BYTES >> shift)
		return -ERANGE;
	if ((frac << shift) % scale)
		return -EDOM;
	v = (whole << shift) + (frac << shift) / scale;
	if (v > SIZE_MAX_BYTES)
		return -ERANGE;
	*out = (uint64_t)v;
	return 0;
}

/* log2 of the unit @bytes (at least 1 KiB) is shown in: 10 (KiB) to 60 (EiB). */
static unsigned int unit_shift(uint64_t bytes)
{
	unsigned int i = 0;

	while (i + 1 < sizeof(size_units) - 1 && bytes >> (10 * (i + 2)))
		i++;
	return 10 * (i + 1);
}

char *format_size(uint64_t bytes, char buf[SIZE_STR_LEN])
{
	unsigned int shift;

	if (bytes < 1024) {
		snprintf(buf, SIZE_STR_LEN, "%" PRIu64 " B", bytes);
		return buf;
	}
	shift = unit_shift(bytes);
	snprintf(buf, SIZE_STR_LEN, "%.2f %ciB", (double)bytes / (double)(UINT64_C(1) << shift),
		 size_units[shift / 10 - 1]);
	return buf;
}

char *format_size_rounded(uint64_t bytes, enum size_rounding how, char buf[SIZE_STR_LEN])
{
	unsigned int shift;
	unsigned __int128 hundredths;

	if (how == SIZE_NEAREST || bytes < 1024)
		return format_size(bytes, buf);
	shift = unit_shift(bytes);
	hundredths = (unsigned __int128)bytes * 100;
	if (how == SIZE_UP)
		hundredths += (UINT64_C(1) << shift) - 1;
	hundredths >>= shift;
	snprintf(buf, SIZE_STR_LEN, "%" PRIu64 ".%02u %ciB", (uint64_t)(hundredths / 100),
		 (unsigned int)(hundredths % 100), size_units[shift / 10 - 1]);
	return buf;
}
