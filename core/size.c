#include "size.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char size_units[] = "KMGTPE";

/* log2 of the suffix at *p, advancing past it; -1 for junk. */
static int parse_suffix(const char **p)
{
	const char *u;

	if (!**p)
		return 0;
	u = strchr(size_units, toupper((unsigned char)**p));
	if (!u || u - size_units > 3)
		return -1;
	(*p)++;
	if (!strcasecmp(*p, "iB"))
		*p += 2;
	return 10 * (int)(u - size_units + 1);
}

int parse_size(const char *s, uint64_t *out)
{
	const char *p = s;
	uint64_t v = 0;
	int shift;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		unsigned int d = (unsigned int)(*p - '0');

		if (v > (SIZE_MAX_BYTES - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	shift = parse_suffix(&p);
	if (shift < 0 || *p)
		return -EINVAL;
	if (v > SIZE_MAX_BYTES >> shift)
		return -ERANGE;
	*out = v << shift;
	return 0;
}

char *format_size(uint64_t bytes, char buf[SIZE_STR_LEN])
{
	unsigned int i = 0;

	if (bytes < 1024) {
		snprintf(buf, SIZE_STR_LEN, "%" PRIu64 " B", bytes);
		return buf;
	}
	while (i + 1 < sizeof(size_units) - 1 && bytes >> (10 * (i + 2)))
		i++;
	snprintf(buf, SIZE_STR_LEN, "%.2f %ciB",
		 (double)bytes / (double)(UINT64_C(1) << (10 * (i + 1))),
		 size_units[i]);
	return buf;
}
