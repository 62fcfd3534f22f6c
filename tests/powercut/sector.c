#include "sector.h"

#include <string.h>

#define SECTOR_MAGIC	0x524f544345534350ull	/* "PCSECTOR" */

struct sector_tag {
	uint64_t magic;
	uint64_t id;
	uint64_t off;			/* bytes: volume offset it was written for */
};

static uint64_t splitmix(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill_one(unsigned char *p, uint64_t id, uint64_t off)
{
	struct sector_tag tag = { SECTOR_MAGIC, id, off };
	uint64_t state = id * 0x2545f4914f6cdd1dull ^ off;

	memcpy(p, &tag, sizeof(tag));
	for (unsigned int i = sizeof(tag); i < SECTOR; i += 8) {
		uint64_t v = splitmix(&state);

		memcpy(p + i, &v, 8);
	}
}

void sector_fill(void *buf, uint64_t len, uint64_t id, uint64_t off)
{
	for (uint64_t i = 0; i < len; i += SECTOR)
		fill_one((unsigned char *)buf + i, id, off + i);
}

enum sector_kind sector_parse(const void *sector, uint64_t *id, uint64_t *off)
{
	unsigned char want[SECTOR];
	struct sector_tag tag;
	const unsigned char *p = sector;
	unsigned int i;

	for (i = 0; i < SECTOR && !p[i]; i++)
		;
	if (i == SECTOR)
		return SECTOR_ZEROS;
	memcpy(&tag, p, sizeof(tag));
	if (tag.magic != SECTOR_MAGIC)
		return SECTOR_GARBAGE;
	fill_one(want, tag.id, tag.off);
	if (memcmp(want, p, SECTOR))
		return SECTOR_GARBAGE;
	*id = tag.id;
	*off = tag.off;
	return SECTOR_TAGGED;
}
