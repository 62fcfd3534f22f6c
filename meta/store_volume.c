/*
 * meta/store_volume.c: volumes and thin pools.
 *
 * Volume ids come from AUTOINCREMENT, so a deleted volume's id is never
 * handed out again: the daemon derives inode numbers from them.  Deleting
 * a volume deletes what belongs to it through ON DELETE CASCADE.
 */
#include "store_int.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#define VOLUME_COLUMNS	"id, name, kind, size, created, coalesce(modified, 0), read_only, active," \
			" allow_shrink, stale_legs"

static int volume_row(sqlite3_stmt *st, void *rec)
{
	struct volume_rec *v = rec;

	v->id = sqlite3_column_int64(st, 0);
	store_column_text(st, 1, v->name, sizeof(v->name));
	store_column_text(st, 2, v->kind, sizeof(v->kind));
	v->size = (uint64_t)sqlite3_column_int64(st, 3);
	v->created = sqlite3_column_int64(st, 4);
	v->modified = sqlite3_column_int64(st, 5);
	v->read_only = sqlite3_column_int(st, 6) != 0;
	v->inactive = sqlite3_column_int(st, 7) == 0;
	v->allow_shrink = sqlite3_column_int(st, 8) != 0;
	v->stale_legs = (uint8_t)sqlite3_column_int(st, 9);
	return 0;
}

/* Steps a bound UPDATE or DELETE of one row; -ENOENT if it matched none. */
static int volume_change(struct store *s, sqlite3_stmt *st)
{
	int r = store_step_done(s, st);

	if (!r && sqlite3_changes(s->db) == 0)
		return -ENOENT;
	return r;
}

/* Inserts @v with its id, or with a new one when @id is NULL. */
static int insert_volume(struct store *s, const struct volume_rec *v, const int64_t *id)
{
	sqlite3_stmt *st;
	int r;

	if (strnlen(v->name, sizeof(v->name)) == sizeof(v->name))
		return -ENAMETOOLONG;
	if (strnlen(v->kind, sizeof(v->kind)) == sizeof(v->kind))
		return -EINVAL;
	r = store_stmt(s, "INSERT INTO volume (id, name, kind, size, created, read_only, active,"
			  " modified, allow_shrink, stale_legs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		       &st);
	if (r)
		return r;
	if (id)
		sqlite3_bind_int64(st, 1, *id);
	else
		sqlite3_bind_null(st, 1);	/* AUTOINCREMENT picks it */
	sqlite3_bind_text(st, 2, v->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, v->kind, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)v->size);
	sqlite3_bind_int64(st, 5, v->created);
	sqlite3_bind_int(st, 6, v->read_only);
	sqlite3_bind_int(st, 7, !v->inactive);
	if (v->modified)
		sqlite3_bind_int64(st, 8, v->modified);
	else
		sqlite3_bind_null(st, 8);
	sqlite3_bind_int(st, 9, v->allow_shrink);
	sqlite3_bind_int(st, 10, v->stale_legs);
	return store_step_done(s, st);
}

int store_volume_insert(struct store *s, struct volume_rec *v)
{
	int r;

	v->created = (int64_t)time(NULL);
	v->modified = 0;
	r = insert_volume(s, v, NULL);
	if (!r)
		v->id = sqlite3_last_insert_rowid(s->db);
	return r;
}

int store_volume_restore(struct store *s, const struct volume_rec *v)
{
	return insert_volume(s, v, &v->id);
}

int store_volume_list(struct store *s, struct volume_rec **out, size_t *nr)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "SELECT " VOLUME_COLUMNS " FROM volume ORDER BY id",
		       &st);
	if (r)
		return r;
	return store_collect(s, st, sizeof(**out), volume_row, (void **)out, nr);
}

int store_volume_set_size(struct store *s, int64_t id, uint64_t size)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "UPDATE volume SET size = ? WHERE id = ?", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)size);
	sqlite3_bind_int64(st, 2, id);
	return volume_change(s, st);
}

int store_volume_update(struct store *s, const struct volume_rec *v)
{
	sqlite3_stmt *st;
	int r;

	if (strnlen(v->name, sizeof(v->name)) == sizeof(v->name))
		return -ENAMETOOLONG;
	r = store_stmt(s, "UPDATE volume SET name = ?, read_only = ?, active = ?,"
			  " modified = nullif(?, 0), allow_shrink = ?, stale_legs = ? WHERE id = ?",
		       &st);
	if (r)
		return r;
	sqlite3_bind_text(st, 1, v->name, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, v->read_only);
	sqlite3_bind_int(st, 3, !v->inactive);
	sqlite3_bind_int64(st, 4, v->modified);
	sqlite3_bind_int(st, 5, v->allow_shrink);
	sqlite3_bind_int(st, 6, v->stale_legs);
	sqlite3_bind_int64(st, 7, v->id);
	return volume_change(s, st);
}

int store_volume_delete(struct store *s, int64_t id)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "DELETE FROM volume WHERE id = ?", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, id);
	return volume_change(s, st);
}
