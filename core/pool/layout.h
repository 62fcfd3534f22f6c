/*
 * core/pool/layout.h: a pool's layout as text, LVM's metadata text format
 * in spirit: what `backup` writes, what the archive keeps before every
 * change, what each raw device carries a copy of (layout_area.h), and what
 * `restore-layout` and `recover` read back.
 *
 * The layout is every record of the pool but the thin maps: the pool's
 * uuid, devices, volumes and their extents, striped volumes' stripe count
 * and chunk size (their extents carry the stripe in their seq: records.h;
 * a layout written before stripes has no stripe record and still
 * parses), switch volumes with their paths and region tables, thin pools
 * with their policies, thin volumes (pool, snapshot origin, external
 * origin), and the tags of all of them.  A volume written before
 * allow_shrink (schema version 10) has no allow_shrink= and may not
 * shrink by a truncate.  A thin volume's map is not in
 * it (it may be millions of pages, and changes on every commit): `dump`
 * keeps maps, and a layout alone brings a thin volume back only where its
 * map still exists.
 *
 * One record per line, a keyword then key=value pairs; a value that is not
 * a plain token ([A-Za-z0-9_./:+-]) is double-quoted with \" \\ and \xHH
 * escapes.  Lines starting with '#' are comments.  A region table is its
 * packed bytes in hex, runs written "HH*COUNT", items separated by '.':
 * round-robin tables of any size take a few bytes.
 *
 *   layout version=1 pool=UUID seq=12 time=1796236800 command="remove lv1"
 *   device id=1 name=d0 uuid=UUID size=268435456 path=/srv/d0.img
 *   volume id=2 name=lv1 kind=linear size=67108864 created=... modified=0 read_only=0 active=1 allow_shrink=0
 *   extent volume=2 seq=0 device=1 offset=1048576 length=67108864
 *   stripe volume=6 stripes=2 stripe_size=65536
 *   switch volume=3 region_size=65536 regions=1024 paths=2 entry_bits=1 table=aa*128
 *   path volume=3 idx=0 device=1 offset=68157440
 *   thin_pool volume=4 block_size=65536 zero=1 when_full=error wait_seconds=0 ...
 *   thin volume=5 pool=4 snapshot_of=0
 *   origin volume=5 origin_volume=0 path=/srv/base.img size=... mtime_ns=...
 *   tag on=volume owner=5 tag=vm
 *
 * Pure: no I/O but the FILE handed in.
 */
#ifndef MAPPERFS_LAYOUT_H
#define MAPPERFS_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pool_meta.h"

#define LAYOUT_VERSION	1

struct layout {
	/* The records, in the store's order (by id; extents by volume, seq). */
	struct pool_meta_image img;
	/* img.switches[i]'s packed region table: tables[i], table_lens[i] bytes. */
	uint8_t **tables;
	size_t *table_lens;
	uint64_t seq;			/* the pool's layout sequence number */
	int64_t time;			/* seconds since the epoch, when written */
	char *command;			/* what was about to run, or NULL */
};

/*
 * Writes @l as text to @f.  0, or -EIO if @f failed (ferror).  O(records
 * + table bytes).
 */
int layout_write(const struct layout *l, FILE *f);
/*
 * Writes only the lines of @l before its records: the comment and the
 * "layout" line (version, the pool's uuid from l->img, seq, time,
 * command).  The records are what follows them.  0, or -EIO.  O(1).
 */
int layout_write_header(const struct layout *l, FILE *f);

/*
 * Parses @len bytes of @text into @out (everything malloc'ed; release with
 * layout_release).  Returns 0, or -EINVAL with the line and the reason in
 * @why ("line 7: unknown key 'sizee'"), or -ENOMEM.  Checks the shape
 * only: every reference (an extent's device, a thin volume's pool) names a
 * record of the layout, sizes are plausible, ids distinct.
 */
int layout_parse(const char *text, size_t len, struct layout *out, char *why,
		 size_t why_len);

void layout_release(struct layout *l);

/* The volume of id @id in @m, or NULL.  O(volumes). */
const struct volume_rec *layout_volume(const struct pool_meta_image *m, int64_t id);

#endif
