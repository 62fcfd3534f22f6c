/*
 * meta/store.h: the pool's metadata in SQLite, behind plain C calls.
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
 *   -EIO       anything else (logged once with SQLite's message)
 *
 * Every call blocks on SQLite: never call one on the I/O path.  A store is
 * used by one thread at a time.  Writes outside store_begin/store_commit
 * are their own transaction.
 */
#ifndef MAPPERFS_STORE_H
#define MAPPERFS_STORE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "uuid.h"

#define STORE_NAME_MAX	64		/* bytes of a device or volume name */

struct store;

enum store_open_flags {
	STORE_CREATE = (1 << 0),	/* create a new pool; -EEXIST if it exists */
};

int store_open(const char *path, enum store_open_flags flags, struct store **out);
/*
 * What a store_open() error means for a person, to follow the path:
 * "pool database '/p/pool.db' " + "is corrupt or not a mapperfs pool".
 */
const char *store_open_strerror(int r);
void store_close(struct store *s);

/*
 * Takes the pool's single-writer lock, POOL_DIR/lock (flock, exclusive,
 * non-blocking; the file is made 0600): the daemon holds it for its life,
 * an offline mapperctl for one command.  Returns the descriptor to keep
 * open, -EBUSY if another process holds it, or the -errno of opening it.
 */
int store_lock_pool(const char *pool_dir);

int store_begin(struct store *s);	/* BEGIN IMMEDIATE */
int store_commit(struct store *s);
void store_rollback(struct store *s);	/* no-op outside a transaction */

int store_pool_uuid(struct store *s, struct uuid *out);
int store_schema_version(struct store *s, int *out);

/* A registered raw device. */
struct device_rec {
	int64_t id;
	char name[STORE_NAME_MAX + 1];
	char path[PATH_MAX];
	struct uuid uuid;
	uint64_t size;			/* bytes, when registered */
};

/* Sets d->id.  -EEXIST if the name or the path is registered already. */
int store_device_insert(struct store *s, struct device_rec *d);
int store_device_get(struct store *s, const char *name, struct device_rec *out);
int store_device_get_by_id(struct store *s, int64_t id, struct device_rec *out);
/* All devices by id; *out is malloc'ed (NULL if none). */
int store_device_list(struct store *s, struct device_rec **out, size_t *nr);
/* -EBUSY if an extent or a path still uses it. */
int store_device_delete(struct store *s, int64_t id);

/*
 * A volume, or a thin pool (LVM's way: a pool is a hidden volume).  kind is
 * one of "linear", "thin", "thin-pool", "switch".
 */
struct volume_rec {
	int64_t id;			/* never reused: inode numbers derive from it */
	char name[STORE_NAME_MAX + 1];
	char kind[16];
	uint64_t size;			/* bytes */
};

/* Sets v->id.  -EEXIST if the name is taken. */
int store_volume_insert(struct store *s, struct volume_rec *v);
int store_volume_get(struct store *s, const char *name, struct volume_rec *out);
int store_volume_get_by_id(struct store *s, int64_t id, struct volume_rec *out);
int store_volume_list(struct store *s, struct volume_rec **out, size_t *nr);
int store_volume_set_size(struct store *s, int64_t id, uint64_t size);
/* Deletes the volume and everything that belongs to it (extents ...). */
int store_volume_delete(struct store *s, int64_t id);

/* A piece of a raw device that a volume (or thin pool) owns. */
struct extent_rec {
	int64_t volume;
	uint32_t seq;			/* order within the volume, from 0 */
	int64_t device;
	uint64_t dev_offset;		/* bytes, >= DEVICE_DATA_OFFSET */
	uint64_t length;		/* bytes */
};

int store_extent_insert(struct store *s, const struct extent_rec *e);
/* A volume's extents by seq. */
int store_extents_of_volume(struct store *s, int64_t volume,
			    struct extent_rec **out, size_t *nr);
/* Every extent on a device by dev_offset. */
int store_extents_on_device(struct store *s, int64_t device,
			    struct extent_rec **out, size_t *nr);

#endif
