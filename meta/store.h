/*
 * meta/store.h: the pool's metadata in SQLite, behind plain C calls; the
 * pool service reaches it through the port pool_port.c makes of them.
 *
 * One database file per pool (POOL_DIR/pool.db, mode 0600, WAL).  Its
 * schema is versioned with PRAGMA user_version and brought up to date by
 * store_open(), one migration step per version (migrate.c).  All SQL of
 * the project lives in meta/; every SQLite error leaves as -errno:
 *   -ENOENT    no such database / row
 *   -EEXIST    a unique name or path taken
 *   -EUCLEAN   the file is corrupt or not a mapperfs pool database
 *   -EPROTONOSUPPORT  the schema is newer than this build
 *   -EBUSY     locked by another writer past the busy timeout
 *   -ENOSPC    the file system is full
 *   -EROFS     the database cannot be written: it is on a read-only file
 *              system, or its header asks for a newer write format
 *              (opened for reading: every write fails so)
 *   -ECANCELED SQLite aborted the statement (SQLITE_ABORT: its transaction
 *              was rolled back; SQLITE_INTERRUPT): nothing of it is kept
 *   -EIO       anything else (logged once with SQLite's message)
 *
 * Every call blocks on SQLite: never call one on the I/O path.  A store is
 * used by one thread at a time.  Writes outside store_begin/store_commit
 * are their own transaction.
 */
#ifndef MAPPERFS_STORE_H
#define MAPPERFS_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pool_meta.h"

struct store;

enum store_open_flags {
	STORE_CREATE = (1 << 0),	/* create a new pool; -EEXIST if it exists */
	STORE_READ_ONLY = (1 << 1),	/* set by store_open on a read-only file system */
};

/*
 * Opens the pool database at @path into *out.  It and its WAL and -shm
 * files must be regular files of their own, opened through no link
 * (core/util/regfile.h): -EINVAL, -EMLINK or -ELOOP otherwise, without
 * blocking on a FIFO.  Also -ENOENT, -EUCLEAN (not a pool),
 * -EPROTONOSUPPORT (newer), -EEXIST (STORE_CREATE), or another -errno.
 */
int store_open(const char *path, enum store_open_flags flags, struct store **out);
void store_close(struct store *s);

int store_begin(struct store *s);	/* BEGIN IMMEDIATE */
int store_commit(struct store *s);
void store_rollback(struct store *s);	/* no-op outside a transaction */
/* A read transaction (BEGIN): the reads until store_read_end see one snapshot. */
int store_read_begin(struct store *s);
void store_read_end(struct store *s);

int store_pool_uuid(struct store *s, struct uuid *out);
/* The number of the pool's layout (pool_layout.c), and setting it. */
int store_layout_seq(struct store *s, uint64_t *out);
int store_layout_seq_set(struct store *s, uint64_t seq);
/* Gives the pool the uuid @u (a pool rebuilt from its devices). */
int store_pool_uuid_set(struct store *s, const struct uuid *u);
/*
 * PRAGMA quick_check: calls @report with each problem SQLite finds in the
 * file's pages, one line each ("Page 8: btreeInitPage() returns error
 * code 11").  @whole: the file, O(file size); else every table but the
 * thin map's leaves and space map (quick_check(TABLE) each), O(what is
 * not the map), since SQLite finds a damaged page of those when a load
 * reads it.  0, or -errno if it cannot run.
 */
int store_quick_check(struct store *s, bool whole,
		      void (*report)(void *arg, const char *msg), void *arg);
int store_schema_version(struct store *s, int *out);

/* The rows of pool_meta.h.  Lists are by id (extents by volume, seq). */

/* Sets d->id.  -EEXIST if the name or the path is registered already. */
int store_device_insert(struct store *s, struct device_rec *d);
/* Inserts @d with its id (a layout brought back).  -EEXIST as above. */
int store_device_restore(struct store *s, const struct device_rec *d);
/* All devices by id; *out is malloc'ed (NULL if none). */
int store_device_list(struct store *s, struct device_rec **out, size_t *nr);
/* -EBUSY if an extent or a path still uses it. */
int store_device_delete(struct store *s, int64_t id);

/* Sets v->id.  -EEXIST if the name is taken. */
int store_volume_insert(struct store *s, struct volume_rec *v);
/* Inserts @v with its id, created and modified (a layout brought back). */
int store_volume_restore(struct store *s, const struct volume_rec *v);
int store_volume_list(struct store *s, struct volume_rec **out, size_t *nr);
int store_volume_set_size(struct store *s, int64_t id, uint64_t size);
/*
 * Name, read_only, active, modified, allow_shrink, stale_legs.  -ENOENT,
 * -EEXIST (name taken).
 */
int store_volume_update(struct store *s, const struct volume_rec *v);
/* Deletes the volume and everything that belongs to it (extents ...). */
int store_volume_delete(struct store *s, int64_t id);

int store_extent_insert(struct store *s, const struct extent_rec *e);
/* Deletes volume @volume's extents numbered [@first, @last].  0 or -errno. */
int store_extent_delete(struct store *s, int64_t volume, uint32_t first, uint32_t last);
/* Every extent, by volume and seq. */
int store_extent_list(struct store *s, struct extent_rec **out, size_t *nr);
/* Extent @seq of @volume: its new length, or gone.  -ENOENT if there is none. */
int store_extent_set_length(struct store *s, int64_t volume, uint32_t seq, uint64_t length);

/* A striped volume's row (records.h).  -ENOENT if the volume is missing. */
int store_stripe_insert(struct store *s, const struct stripe_rec *r);
/* Every stripe row, by volume. */
int store_stripe_list(struct store *s, struct stripe_rec **out, size_t *nr);

/* Every tag: volumes' first, then devices', each by owner id and tag. */
int store_tag_list(struct store *s, struct tag_rec **out, size_t *nr);
/* Adds @t; one its owner carries already is left as it is.  -ENOENT: no such owner. */
int store_tag_add(struct store *s, const struct tag_rec *t);
/* Removes @t; one its owner does not carry is no error. */
int store_tag_delete(struct store *s, const struct tag_rec *t);

/* Every export, by volume. */
int store_export_list(struct store *s, struct export_rec **out, size_t *nr);
/*
 * Adds @e.  -ENOENT: no such volume; -EEXIST: the volume is exported, or
 * another export has its address.
 */
int store_export_insert(struct store *s, const struct export_rec *e);
/* Removes volume @volume's export.  -ENOENT if it has none. */
int store_export_delete(struct store *s, int64_t volume);

/*
 * Writes (inserts or replaces) the row of received volume r->volume.
 * -ENOENT: no such volume.
 */
int store_received_put(struct store *s, const struct thin_received_rec *r);
/* The row of received volume @volume.  0, -ENOENT if it has none, or -errno. */
int store_received_get(struct store *s, int64_t volume, struct thin_received_rec *out);
/*
 * Forgets that volume @volume was received: it keeps its data, not the
 * sender's identity.  0 (also if it had none), or -errno.
 */
int store_received_drop(struct store *s, int64_t volume);

#endif
