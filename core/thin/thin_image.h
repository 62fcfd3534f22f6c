/*
 * core/thin/thin_image.h: a thin pool's mappings as thin-provisioning-tools
 * sees them, for dump and restore.
 *
 * thin_dump's XML is what dm-thin administrators back up, inspect, edit
 * and migrate with:
 *
 *   <superblock uuid="" time="1" transaction="1" flags="0" version="2"
 *               data_block_size="128" nr_data_blocks="3200">
 *     <device dev_id="3" mapped_blocks="4" transaction="0"
 *             creation_time="0" snap_time="1">
 *       <range_mapping origin_begin="0" data_begin="10" length="3" time="0"/>
 *       <single_mapping origin_block="9" data_block="2" time="0"/>
 *     </device>
 *   </superblock>
 *
 * data_block_size is in 512-byte sectors; origin blocks are a device's
 * virtual blocks, data blocks the pool's.  The format has no names and no
 * virtual sizes (LVM keeps those): mapperfs writes its own as more
 * attributes of <device>, name="vm1" size="BYTES", and snapshot_of="ID"
 * (the dev_id of the device it is a snapshot of, when that is in the
 * dump too), which thin_restore ignores and restore reads when present.
 *
 * dm-thin's times say which mappings may be shared (a mapping older than
 * its device's last snapshot is): dump writes time 0 on every mapping,
 * and snap_time 1 on devices that share a block, 0 on the others, so a
 * pool restored by thin_restore copies exactly the shared blocks on write.
 */
#ifndef MAPPERFS_THIN_IMAGE_H
#define MAPPERFS_THIN_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "records.h"

/* A run: virtual blocks [origin, origin + len) on data blocks [data, ...). */
struct thin_image_run {
	uint64_t origin, data, len;
};

struct thin_image_dev {
	uint64_t dev_id;
	char name[POOL_NAME_MAX + 1];	/* "" when the XML has none */
	uint64_t size;			/* bytes; 0 when the XML has none */
	bool is_snapshot;		/* snapshot_of is given */
	uint64_t snapshot_of;		/* dev_id of its origin in the same image */
	size_t origin;			/* its index in devs: set by thin_image_check */
	uint64_t mapped_blocks;
	uint64_t transaction;
	uint32_t creation_time, snap_time;
	struct thin_image_run *runs;	/* by origin */
	size_t nr_runs, cap_runs;
};

/* Device devs[dev], in the index of the image's devices by dev_id. */
struct thin_image_id {
	uint64_t dev_id;		/* the sort key */
	size_t dev;
};

/* A run of device devs[dev], in the index of the image's runs by data block. */
struct thin_image_ref {
	uint64_t data;			/* devs[dev].runs[run].data, the sort key */
	size_t dev, run;
};

struct thin_image {
	uint32_t block_size;		/* bytes */
	uint64_t nr_blocks;		/* data blocks */
	uint64_t time, transaction;
	struct thin_image_dev *devs;
	size_t nr_devs, cap_devs;
	/* Indexes that thin_image_check builds (NULL before): */
	struct thin_image_id *by_id;	/* every device, by dev_id */
	struct thin_image_ref *by_data;	/* every run, by data block (then document order) */
	size_t nr_refs;
};

void thin_image_release(struct thin_image *img);
/* Appends a device (zeroed but for @dev_id); NULL on ENOMEM. */
struct thin_image_dev *thin_image_add_dev(struct thin_image *img, uint64_t dev_id);
/* Appends a run, merged with the last one when it continues it. 0/-ENOMEM. */
int thin_image_add_run(struct thin_image_dev *d, uint64_t origin, uint64_t data,
		       uint64_t len);

/* Writers: a superblock, then each device with its runs, then the end. */
enum thin_image_format {
	THIN_IMAGE_XML,			/* thin_dump's */
	THIN_IMAGE_JSON,		/* the same tree, as JSON */
};

struct thin_image_writer;

/* 0 or -ENOMEM.  Writes to @f as it goes; errors show in ferror(@f). */
int thin_image_writer_open(FILE *f, enum thin_image_format format,
			   const struct thin_image *sb, struct thin_image_writer **out);
/* @d's attributes (not its runs, which follow through write_run). */
void thin_image_write_dev(struct thin_image_writer *w, const struct thin_image_dev *d);
void thin_image_write_run(struct thin_image_writer *w, const struct thin_image_run *r);
/* Ends the device, the document, and frees @w. */
void thin_image_write_dev_end(struct thin_image_writer *w);
void thin_image_writer_close(struct thin_image_writer *w);

/*
 * Reads thin_dump XML from @f into @out (runs in document order).  On a
 * document that is not well formed or not thin_dump's: -EINVAL and a
 * one-line reason with its line number in @why (a JSON dump is named as
 * such).  -ENOMEM, -EIO.
 */
int thin_image_read_xml(FILE *f, struct thin_image *out, char *why, size_t why_len);

/*
 * Checks what @img says of itself, with no pool to compare it with, and
 * builds its indexes (by_id, by_data, each device's origin):
 *   - each dev_id once;
 *   - per device, no virtual block twice, none past the largest thin
 *     volume's map (THIN_DIR_SLOTS_MAX leaves); sorts its runs by virtual
 *     block;
 *   - no data block past the image's own nr_blocks, and every data block
 *     at one virtual block, in whichever devices map it (mapperfs shares a
 *     block only by sharing a page, always at the same virtual block);
 *   - every snapshot_of names a device of the image, and no chain of them
 *     comes back to where it began.
 * O(R log R + D log D) for R runs and D devices, no I/O.  0, or -EINVAL
 * (-EFBIG past the largest volume) and a one-line reason in @why naming
 * the devices and blocks, or -ENOMEM.
 */
int thin_image_check(struct thin_image *img, char *why, size_t why_len);
/* The device with @dev_id, or NULL.  O(log D); after thin_image_check. */
struct thin_image_dev *thin_image_find(const struct thin_image *img, uint64_t dev_id);

#endif
