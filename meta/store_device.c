/*
 * meta/store_device.c: the raw devices registered in a pool.
 *
 * A device row is referenced by extents (and later by switch paths);
 * foreign keys refuse to delete one that is in use, which store_error()
 * reports as -EBUSY.
 */
#include "store_int.h"

#include <errno.h>
#include <string.h>

#define DEVICE_COLUMNS	"id, name, path, uuid, size"

static int device_row(sqlite3_stmt *st, void *rec)
{
	struct device_rec *d = rec;
	const unsigned char *uuid = sqlite3_column_text(st, 3);

	d->id = sqlite3_column_int64(st, 0);
	store_column_text(st, 1, d->name, sizeof(d->name));
	store_column_text(st, 2, d->path, sizeof(d->path));
	if (!uuid || uuid_parse((const char *)uuid, &d->uuid))
		return -EUCLEAN;
	d->size = (uint64_t)sqlite3_column_int64(st, 4);
	return 0;
}

/* Steps a bound single-row query into @out and resets it. */
/* Inserts @d with its id, or with a new one when @id is NULL. */
static int insert_device(struct store *s, const struct device_rec *d, const int64_t *id)
{
	char uuid[UUID_STR_LEN];
	sqlite3_stmt *st;
	int r;

	if (strnlen(d->name, sizeof(d->name)) == sizeof(d->name) ||
	    strnlen(d->path, sizeof(d->path)) == sizeof(d->path))
		return -ENAMETOOLONG;
	r = store_stmt(s, "INSERT INTO device (id, name, path, uuid, size)"
			  " VALUES (?, ?, ?, ?, ?)", &st);
	if (r)
		return r;
	uuid_format(&d->uuid, uuid);
	if (id)
		sqlite3_bind_int64(st, 1, *id);
	else
		sqlite3_bind_null(st, 1);	/* AUTOINCREMENT picks it */
	sqlite3_bind_text(st, 2, d->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, d->path, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, uuid, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)d->size);
	return store_step_done(s, st);
}

int store_device_insert(struct store *s, struct device_rec *d)
{
	int r = insert_device(s, d, NULL);

	if (!r)
		d->id = sqlite3_last_insert_rowid(s->db);
	return r;
}

int store_device_restore(struct store *s, const struct device_rec *d)
{
	return insert_device(s, d, &d->id);
}

int store_device_list(struct store *s, struct device_rec **out, size_t *nr)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "SELECT " DEVICE_COLUMNS " FROM device ORDER BY id",
		       &st);
	if (r)
		return r;
	return store_collect(s, st, sizeof(**out), device_row, (void **)out, nr);
}

int store_device_delete(struct store *s, int64_t id)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "DELETE FROM device WHERE id = ?", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, id);
	r = store_step_done(s, st);
	if (!r && sqlite3_changes(s->db) == 0)
		return -ENOENT;
	return r;
}
