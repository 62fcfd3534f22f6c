#include "uuid.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

int uuid_generate(struct uuid *u)
{
	if (getrandom(u->b, sizeof(u->b), 0) != sizeof(u->b))
		return -EIO;
	u->b[6] = (u->b[6] & 0x0f) | 0x40;	/* version 4 */
	u->b[8] = (u->b[8] & 0x3f) | 0x80;	/* RFC 4122 variant */
	return 0;
}

void uuid_format(const struct uuid *u, char out[UUID_STR_LEN])
{
	const uint8_t *b = u->b;

	snprintf(out, UUID_STR_LEN,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
		 b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

int uuid_parse(const char *s, struct uuid *u)
{
	unsigned int i = 0;

	if (strlen(s) != UUID_STR_LEN - 1)
		return -EINVAL;
	for (; *s && i < 16; s++) {
		unsigned int byte;

		if (*s == '-')
			continue;
		if (sscanf(s, "%2x", &byte) != 1)
			return -EINVAL;
		u->b[i++] = (uint8_t)byte;
		s++;
	}
	return i == 16 ? 0 : -EINVAL;
}

int uuid_equal(const struct uuid *a, const struct uuid *b)
{
	return memcmp(a->b, b->b, sizeof(a->b)) == 0;
}
