/*
 * meta/thin_store.h: thin pools and thin volumes in the store.
 *
 * Rows: thin_pool (one per pool volume: block size and policies), thin
 * (one per thin volume: its pool and its map's directory), thin_dir and
 * thin_leaf (the map pages, thin_meta.h).  Like store.h: every call
 * blocks on SQLite, returns 0 or -errno, and is its own transaction
 * unless inside store_begin/store_commit.
 */
#ifndef MAPPERFS_THIN_STORE_H
#define MAPPERFS_THIN_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "thin_meta.h"

struct thin_pool_rec {
	int64_t volume;			/* the pool's volume id */
	uint32_t block_size;		/* bytes */
	bool zero;			/* zero new blocks */
	bool wait;			/* when full: wait (else error) */
	uint32_t wait_seconds;
	uint32_t low_water;		/* percent free */
};

struct thin_rec {
	int64_t volume;
	int64_t pool;			/* the pool's volume id */
	int64_t dir;			/* page id of its directory */
};

/* A thin volume's external origin: a volume (id), or an image file. */
struct thin_origin_rec {
	int64_t volume;			/* the thin volume */
	int64_t origin_volume;		/* 0 if a file */
	char origin_path[PATH_MAX];	/* "" if a volume */
};

int store_thin_pool_insert(struct store *s, const struct thin_pool_rec *p);
int store_thin_pool_get(struct store *s, int64_t volume, struct thin_pool_rec *out);

/* Inserts or replaces. */
int store_thin_put(struct store *s, const struct thin_rec *t);
int store_thin_get(struct store *s, int64_t volume, struct thin_rec *out);
int store_thin_delete(struct store *s, int64_t volume);
/* Thin volumes of @pool by id; *out malloc'ed. */
int store_thin_list(struct store *s, int64_t pool, struct thin_rec **out,
		    size_t *nr);

int store_thin_origin_put(struct store *s, const struct thin_origin_rec *o);
/* -ENOENT if the volume has no external origin. */
int store_thin_origin_get(struct store *s, int64_t volume, struct thin_origin_rec *out);
/* A thin volume whose origin is @origin_volume, -ENOENT if none. */
int store_thin_origin_user(struct store *s, int64_t origin_volume, int64_t *volume);

/* Pages.  out->leaves of a directory is malloc'ed. */
int store_thin_dir_put(struct store *s, int64_t pool, const struct thin_dir_rec *d);
int store_thin_dir_get(struct store *s, int64_t pool, int64_t id,
		       struct thin_dir_rec *out);
int store_thin_dir_delete(struct store *s, int64_t pool, int64_t id);
int store_thin_leaf_put(struct store *s, int64_t pool, const struct thin_leaf_rec *l);
int store_thin_leaf_get(struct store *s, int64_t pool, int64_t id,
			struct thin_leaf_rec *out);
int store_thin_leaf_delete(struct store *s, int64_t pool, int64_t id);
/* Page ids of @pool; *out malloc'ed. */
int store_thin_dir_ids(struct store *s, int64_t pool, int64_t **out, size_t *nr);
int store_thin_leaf_ids(struct store *s, int64_t pool, int64_t **out, size_t *nr);
/* The largest page id of @pool, 0 if none. */
int store_thin_max_page(struct store *s, int64_t pool, int64_t *out);

#endif
