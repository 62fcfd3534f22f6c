/*
 * tools/thin_util.h: what the thin commands share: finding a thin volume
 * or pool by name, and walking a pool's committed metadata (after asking
 * the daemon, if one runs, to commit what it serves).
 */
#ifndef MAPPERFS_THIN_UTIL_H
#define MAPPERFS_THIN_UTIL_H

#include "cmd.h"
#include "store.h"
#include "thin_store.h"
#include "thin_walk.h"

#define THIN_DEFAULT_BLOCK	(64u << 10)	/* bytes */
#define THIN_DEFAULT_LOW_WATER	10		/* percent free */

/*
 * Looks up volume @name, which must be of @kind ("thin" or "thin-pool").
 * For "thin", fills @t too (may be NULL otherwise).  0 or CMD_FAIL after
 * printing the error.
 */
int thin_util_get(struct cmd_ctx *ctx, const char *what, const char *name,
		  const char *kind, struct volume_rec *v, struct thin_rec *t);

/* Commits the daemon's view of @pool (if live), then walks it. */
int thin_util_walk(struct cmd_ctx *ctx, const char *what, int64_t pool,
		   struct thin_walk *w);

/*
 * Creates thin volume @name of @size bytes in @pool: empty, or a snapshot
 * of @origin (NULL: none).  Offline, the volume row, its thin row and (if
 * empty) an empty directory page are one transaction, with the external
 * origin @ext (NULL: none) recorded in it.  With the daemon,
 * the volume row commits first and the daemon's pool commits the map
 * (a crash between the two leaves a row the daemon deletes at start-up:
 * the command never answered).  Sets @v.  0 or CMD_FAIL.
 */
int thin_util_create(struct cmd_ctx *ctx, const char *what, const char *name,
		     uint64_t size, int64_t pool, const struct thin_rec *origin,
		     const struct thin_origin_rec *ext, struct volume_rec *v);

/* Offline: deletes the pages of @pool that no volume reaches any more. */
int thin_util_gc(struct cmd_ctx *ctx, const char *what, int64_t pool);

#endif
