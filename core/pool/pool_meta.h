/*
 * core/pool/pool_meta.h: what the pool service (pool.h) needs from the store
 * that keeps a pool's metadata, in core's terms.  meta/ implements it on
 * SQLite; core never sees SQL.
 *
 * Everything but the thin map pages is small (a row per device, volume,
 * extent, path), so the service reads it whole when it opens the pool
 * (load), keeps it in memory, checks every change against that copy, and
 * makes a change durable as one transaction of records (begin, the record
 * calls, commit) before it lets memory show it.  A change that fails to
 * commit is rolled back and memory was never touched.  The control path
 * never holds a transaction across device I/O: labels are written before
 * begin.
 *
 * A thin pool's map pages have their own port (thin_meta.h), opened here
 * per thin pool, on a connection of its own so that its commits (from the
 * pool's worker, or a thread answering fsync) never share one with the
 * service.
 *
 * Every op blocks on the store: admin path only.  Each returns 0 or
 * -errno:
 *   -ENOENT    no such row
 *   -EEXIST    a unique name or path is taken
 *   -EBUSY     another process holds the database's write lock past the
 *              busy timeout (transient: try again later)
 *   -ENOSPC    the file system holding the database is full
 *   -EUCLEAN   the database is damaged
 *   -EIO       anything else
 */
#ifndef MAPPERFS_POOL_META_H
#define MAPPERFS_POOL_META_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "records.h"
#include "thin_meta.h"

/*
 * The whole pool but for the map pages and switch tables, as load()
 * returns it: every array malloc'ed (NULL when empty), rows by id (extents
 * and switch paths by volume, then seq or idx).
 */
struct pool_meta_image {
	struct uuid uuid;
	uint64_t layout_seq;		/* the number of this layout (pool_layout.c) */
	struct device_rec *devices;
	size_t nr_devices;
	struct volume_rec *volumes;
	size_t nr_volumes;
	struct extent_rec *extents;
	size_t nr_extents;
	struct stripe_rec *stripes;	/* striped linear volumes */
	size_t nr_stripes;
	struct switch_rec *switches;
	size_t nr_switches;
	struct switch_path_rec *switch_paths;
	size_t nr_switch_paths;
	struct thin_pool_rec *thin_pools;
	size_t nr_thin_pools;
	struct thin_rec *thins;
	size_t nr_thins;
	struct thin_origin_rec *origins;
	size_t nr_origins;
	struct tag_rec *tags;		/* volumes' then devices', by owner and tag */
	size_t nr_tags;
	struct export_rec *exports;	/* by volume */
	size_t nr_exports;
};

void pool_meta_image_release(struct pool_meta_image *img);

struct pool_meta;

struct pool_meta_ops {
	int (*load)(struct pool_meta *m, struct pool_meta_image *out);
	/*
	 * Checks the database's own pages (PRAGMA quick_check), calling
	 * @report with each problem found: @whole, all of them, O(file);
	 * else all but the thin map's pages, which a load that reads one
	 * finds damaged (the cost of an open must not grow with the map).
	 * 0, or -errno if it cannot look.
	 */
	int (*integrity)(struct pool_meta *m, bool whole,
			 void (*report)(void *arg, const char *msg), void *arg);
	/* Switch volume @volume's region table as stored; *blob malloc'ed. */
	int (*switch_table)(struct pool_meta *m, int64_t volume, void **blob,
			    size_t *len);

	/* A write transaction (BEGIN IMMEDIATE); the calls below go in it. */
	int (*begin)(struct pool_meta *m);
	int (*commit)(struct pool_meta *m);
	void (*rollback)(struct pool_meta *m);	/* no-op outside one */

	int (*device_insert)(struct pool_meta *m, struct device_rec *d);	/* sets id */
	/*
	 * A layout brought back (restore-layout, recover): the row as given,
	 * its id included; a volume's created and modified too.
	 */
	int (*device_restore)(struct pool_meta *m, const struct device_rec *d);
	int (*volume_restore)(struct pool_meta *m, const struct volume_rec *v);
	/* Gives the pool the uuid @u: a pool rebuilt from its devices. */
	int (*uuid_set)(struct pool_meta *m, const struct uuid *u);
	/* Numbers the layout the transaction makes (pool_layout.c). */
	int (*layout_seq_set)(struct pool_meta *m, uint64_t seq);
	int (*device_delete)(struct pool_meta *m, int64_t id);
	int (*volume_insert)(struct pool_meta *m, struct volume_rec *v);	/* sets id */
	int (*volume_set_size)(struct pool_meta *m, int64_t id, uint64_t size);
	/*
 * Writes the name, read_only, inactive, modified, allow_shrink and
 * stale_legs of @v (by id).
 */
	int (*volume_update)(struct pool_meta *m, const struct volume_rec *v);
	/* Deletes the volume and all that hangs on it (extents, kind rows). */
	int (*volume_delete)(struct pool_meta *m, int64_t id);
	int (*extent_insert)(struct pool_meta *m, const struct extent_rec *e);
	/* Deletes volume @volume's extents numbered [@first, @last]. */
	int (*extent_delete)(struct pool_meta *m, int64_t volume, uint32_t first,
			     uint32_t last);
	/* Sets the length of extent @seq of @volume (reduce, a switch path that grows). */
	int (*extent_set_length)(struct pool_meta *m, int64_t volume, uint32_t seq,
				 uint64_t length);
	/* The stripe row of a striped linear volume (inserted already). */
	int (*stripe_insert)(struct pool_meta *m, const struct stripe_rec *s);
	int (*switch_insert)(struct pool_meta *m, const struct switch_rec *sw,
			     const struct switch_path_rec *paths, const void *table,
			     size_t len);
	int (*switch_table_set)(struct pool_meta *m, int64_t volume,
				const void *table, size_t len);
	/* A switch volume's new region count and its table (extend). */
	int (*switch_resize)(struct pool_meta *m, int64_t volume, uint64_t nr_regions,
			     const void *table, size_t len);
	/* Puts path @idx of switch volume @volume at a new place (a move's end). */
	int (*switch_path_set)(struct pool_meta *m, int64_t volume, uint32_t idx,
			       int64_t device, uint64_t dev_offset);
	int (*thin_pool_insert)(struct pool_meta *m, const struct thin_pool_rec *p);
	/* Writes every policy but the block size: all that change can set. */
	int (*thin_pool_update)(struct pool_meta *m, const struct thin_pool_rec *p);
	/* Inserts or replaces a thin volume's row. */
	int (*thin_put)(struct pool_meta *m, const struct thin_rec *t);
	int (*thin_origin_put)(struct pool_meta *m, const struct thin_origin_rec *o);
	/*
	 * Adds a tag to its owner, or takes it away; adding one it carries,
	 * or deleting one it does not, changes nothing.  -ENOENT: no such
	 * owner (add).
	 */
	int (*tag_add)(struct pool_meta *m, const struct tag_rec *t);
	int (*tag_delete)(struct pool_meta *m, const struct tag_rec *t);
	/*
	 * Exports a volume over NBD, or stops exporting it.  -EEXIST: the
	 * volume or the address is exported already; -ENOENT: no such volume
	 * (insert), no export (delete).
	 */
	int (*export_insert)(struct pool_meta *m, const struct export_rec *e);
	int (*export_delete)(struct pool_meta *m, int64_t volume);
	/*
	 * Thin volumes received from another pool (records.h): put inserts
	 * or replaces r->volume's row (in a transaction); get reads one
	 * (-ENOENT: the volume was not received), outside a transaction
	 * too; drop deletes it (in a transaction; 0 if there was none).
	 */
	int (*received_put)(struct pool_meta *m, const struct thin_received_rec *r);
	int (*received_get)(struct pool_meta *m, int64_t volume, struct thin_received_rec *out);
	int (*received_drop)(struct pool_meta *m, int64_t volume);
	/* Writes a directory page of thin pool @pool. */
	int (*thin_dir_put)(struct pool_meta *m, int64_t pool,
			    const struct thin_dir_rec *d);
	/* Writes a leaf page of thin pool @pool. */
	int (*thin_leaf_put)(struct pool_meta *m, int64_t pool,
			     const struct thin_leaf_rec *l);
	/* Deletes every map page of thin pool @pool (repair writes them anew). */
	int (*thin_pages_delete)(struct pool_meta *m, int64_t pool);

	/*
	 * Opens the map pages of thin pool @pool on a connection of their
	 * own: *arg is what @ops take, until thin_close().
	 */
	int (*thin_open)(struct pool_meta *m, int64_t pool,
			 const struct thin_meta_ops **ops, void **arg);
	void (*thin_close)(struct pool_meta *m, void *arg);

	void (*close)(struct pool_meta *m);
};

/* meta/'s implementations embed this first. */
struct pool_meta {
	const struct pool_meta_ops *ops;
};

/*
 * Opens (or with @create, creates: -EEXIST if it exists) the store at
 * @db_path.  The hosts (mapperctl, mapperfs) pass meta's opener to the
 * service; core calls it, never names it.
 */
typedef int pool_meta_open_fn(const char *db_path, bool create,
			      struct pool_meta **out);

#endif
