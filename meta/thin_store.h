/*
 * meta/thin_store.h: thin pools and thin volumes in the store.
 *
 * Rows: thin_pool (one per pool volume: block size and policies), thin
 * (one per thin volume: its pool and its map's directory), thin_origin
 * (a thin volume's external origin), thin_dir and thin_leaf (the map
 * pages, thin_meta.h).  Like store.h: every call blocks on SQLite,
 * returns 0 or -errno, and is its own transaction unless inside
 * store_begin/store_commit.  Lists are by volume id; *out malloc'ed.
 */
#ifndef MAPPERFS_THIN_STORE_H
#define MAPPERFS_THIN_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

int store_thin_pool_insert(struct store *s, const struct thin_pool_rec *p);
int store_thin_pool_list(struct store *s, struct thin_pool_rec **out, size_t *nr);
/* Writes every policy but the block size: all that change can set. */
int store_thin_pool_update(struct store *s, const struct thin_pool_rec *p);

/*
 * Inserts or replaces.  -ENOENT if it names a volume, pool or origin
 * (snapshot_of) that does not exist.
 */
int store_thin_put(struct store *s, const struct thin_rec *t);
/* Points an existing thin row at directory @dir (none: nothing). */
int store_thin_set_dir(struct store *s, int64_t volume, int64_t dir);
int store_thin_list(struct store *s, struct thin_rec **out, size_t *nr);
/* The thin rows of pool @pool (volume, dir). */
int store_thin_vols_of(struct store *s, int64_t pool, struct thin_vol_rec **out, size_t *nr);
/* Deletes every map page of @pool. */
int store_thin_pages_delete(struct store *s, int64_t pool);

int store_thin_origin_put(struct store *s, const struct thin_origin_rec *o);
int store_thin_origin_list(struct store *s, struct thin_origin_rec **out, size_t *nr);

/*
 * Pages.  out->leaves of a directory is malloc'ed.  A directory's put
 * writes its row in place if it has one: when the row keeps its size,
 * only the database pages whose bytes change are written.
 */
int store_thin_dir_put(struct store *s, int64_t pool, const struct thin_dir_rec *d);
/*
 * Writes only the chunks of THIN_DIR_CHUNK slots of @d that @changed
 * marks (a bit each; the other slots of d->leaves are not read) into the
 * row @d->id has, then its mapped count if known (else the row keeps
 * its count).  -EUCLEAN if there is no such row or it has another number
 * of slots.
 */
int store_thin_dir_put_changed(struct store *s, int64_t pool, const struct thin_dir_rec *d,
			       const uint64_t *changed);
int store_thin_dir_get(struct store *s, int64_t pool, int64_t id,
		       struct thin_dir_rec *out);
int store_thin_dir_delete(struct store *s, int64_t pool, int64_t id);
/* Sets the count of blocks directory @id maps (NULL after a put without it). */
int store_thin_dir_set_mapped(struct store *s, int64_t pool, int64_t id, uint64_t mapped);
int store_thin_leaf_put(struct store *s, int64_t pool, const struct thin_leaf_rec *l);

/*
 * The space map of @pool (thin_meta.h).  space_valid: 1 if its chunks
 * match the leaves, 0 if stale.  each: every chunk by chunk number, to
 * @each (rec->overflow valid during the call only); a non-zero return
 * stops the walk and is handed back; -EUCLEAN for a chunk of another
 * length or an overflow of odd length.  put: inserts or replaces one
 * chunk.  clear: drops every chunk.  set_valid: marks the map (not)
 * stale; the leaf triggers clear it, so set it last in a transaction.
 */
int store_thin_space_valid(struct store *s, int64_t pool, bool *valid);
int store_thin_space_each(struct store *s, int64_t pool,
			  int (*each)(void *ctx, const struct thin_space_rec *rec), void *ctx);
int store_thin_space_put(struct store *s, int64_t pool, const struct thin_space_rec *rec);
int store_thin_space_clear(struct store *s, int64_t pool);
int store_thin_space_set_valid(struct store *s, int64_t pool, bool valid);
int store_thin_leaf_get(struct store *s, int64_t pool, int64_t id,
			struct thin_leaf_rec *out);
int store_thin_leaf_delete(struct store *s, int64_t pool, int64_t id);
/* Page ids of @pool; *out malloc'ed. */
int store_thin_dir_ids(struct store *s, int64_t pool, int64_t **out, size_t *nr);
int store_thin_leaf_ids(struct store *s, int64_t pool, int64_t **out, size_t *nr);
/* How many directories and leaves @pool has: a count of its rows, no page read. */
int store_thin_page_count(struct store *s, int64_t pool, uint64_t *dirs, uint64_t *leaves);
/* The largest page id of @pool, 0 if none. */
int store_thin_max_page(struct store *s, int64_t pool, int64_t *out);

#endif
