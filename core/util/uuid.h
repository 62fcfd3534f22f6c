/*
 * core/util/uuid.h: random 128-bit identifiers for pools and raw devices.
 */
#ifndef MAPPERFS_UUID_H
#define MAPPERFS_UUID_H

#include <stdint.h>

#define UUID_STR_LEN 37			/* 36 characters and the NUL */

struct uuid {
	uint8_t b[16];
};

int uuid_generate(struct uuid *u);			/* 0 or -errno */
void uuid_format(const struct uuid *u, char out[UUID_STR_LEN]);
int uuid_parse(const char *s, struct uuid *u);		/* 0 or -EINVAL */
int uuid_equal(const struct uuid *a, const struct uuid *b);

#endif
