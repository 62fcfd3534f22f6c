/*
 * meta/store_switch.h: switch volumes in the store.
 *
 * A switch volume is a volume row of kind "switch", one switch row (the
 * region size and the region table) and one switch_path row per path.
 * The table is kept as one blob: the packed words of core's switch_table
 * (switch_table_export), little-endian, entry_bits per entry, so a
 * million regions over 3 paths is a 256 KiB row that loads in one step
 * and the daemon can publish without conversion.  Rows cascade from the
 * volume; a device that a path names cannot be deleted (-EBUSY).
 *
 * A path that was given a device alone owns the range it reaches as an
 * extent of the volume (seq = path index); a path given DEVICE:OFFSET
 * owns nothing, and may share storage with other paths (multipath).
 *
 * Every call blocks on SQLite: admin path only.  Errors as in store.h.
 */
#ifndef MAPPERFS_STORE_SWITCH_H
#define MAPPERFS_STORE_SWITCH_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/*
 * Records the switch part of volume @sw->volume (inserted already): the
 * paths and the table.  -ENOENT if the volume or a device is missing.
 */
int store_switch_insert(struct store *s, const struct switch_rec *sw,
			const struct switch_path_rec *paths, const void *table,
			size_t table_len);
/* Every switch row / path, by volume (and idx); *out malloc'ed. */
int store_switch_list(struct store *s, struct switch_rec **out, size_t *nr);
int store_switch_path_list(struct store *s, struct switch_path_rec **out, size_t *nr);
/* The table blob; *out malloc'ed. */
int store_switch_table_get(struct store *s, int64_t volume, void **out,
			   size_t *len);
/* The new region count and table of a switch volume that grew.  -ENOENT: none. */
int store_switch_resize(struct store *s, int64_t volume, uint64_t nr_regions,
			const void *table, size_t len);
int store_switch_table_set(struct store *s, int64_t volume, const void *table,
			   size_t len);
/*
 * Puts path @idx of switch volume @volume at @dev_offset of device
 * @device (a move carried it there).  -ENOENT if the path or the device
 * is missing.
 */
int store_switch_path_set(struct store *s, int64_t volume, uint32_t idx, int64_t device,
			  uint64_t dev_offset);

#endif
