/*
 * tests/powercut/sector.h: the content the workload writes, one 512-byte
 * sector at a time, each naming itself.
 *
 * A power cut may tear a write at any 512-byte sector, so every sector
 * must say on its own which write put it there: a tag (magic, write id,
 * the volume offset it was written for) followed by bytes derived from
 * the tag.  A sector read back is then either zeros, exactly the sector
 * of one write at one offset, or garbage; the verifier decides whether
 * that write may be there.  Write id 1 is the external origin image.
 */
#ifndef POWERCUT_SECTOR_H
#define POWERCUT_SECTOR_H

#include <stdint.h>

#define SECTOR		512u
#define SECTOR_ORIGIN_ID	1	/* the origin image's sectors */

enum sector_kind {
	SECTOR_ZEROS,
	SECTOR_TAGGED,			/* id and off set */
	SECTOR_GARBAGE,
};

/* Fills @len bytes (a multiple of SECTOR) for write @id at volume offset @off. */
void sector_fill(void *buf, uint64_t len, uint64_t id, uint64_t off);

/* What one sector holds; *id and *off for SECTOR_TAGGED. */
enum sector_kind sector_parse(const void *sector, uint64_t *id, uint64_t *off);

#endif
