/*
 * meta/store_extent.c: the pieces of raw devices that volumes own.
 *
 * An extent names its volume and device by id; foreign keys make sure
 * both exist, so an insert that names a missing one is -ENOENT.  Free
 * space is whatever no extent covers (core/io/space.c, over the extents the
 * pool service loaded).
 */
#include "store_int.h"

#include <errno.h>

#define EXTENT_COLUMNS	"volume, seq, device, dev_offset, length"

static int extent_row(sqlite3_stmt *st, void *rec)
{
	struct extent_rec *e = rec;

	e->volume = sqlite3_column_int64(st, 0);
	e->seq = (uint32_t)sqlite3_column_int64(st, 1);
	e->device = sqlite3_column_int64(st, 2);
	e->dev_offset = (uint64_t)sqlite3_column_int64(st, 3);
	e->length = (uint64_t)sqlite3_column_int64(st, 4);
	return 0;
}

int store_extent_insert(struct store *s, const struct extent_rec *e)
{
	sqlite3_stmt *st;
	int rc, r;

	r = store_stmt(s, "INSERT INTO extent (" EXTENT_COLUMNS ")"
			  " VALUES (?, ?, ?, ?, ?)", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, e->volume);
	sqlite3_bind_int64(st, 2, e->seq);
	sqlite3_bind_int64(st, 3, e->device);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)e->dev_offset);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)e->length);
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
		r = -ENOENT;		/* no such volume or device */
	else
		r = rc == SQLITE_DONE ? 0 : store_error(s, rc);
	store_stmt_done(st);
	return r;
}

int store_extent_delete(struct store *s, int64_t volume, uint32_t first, uint32_t last)
{
	sqlite3_stmt *st;
	int rc, r;

	r = store_stmt(s, "DELETE FROM extent WHERE volume = ? AND seq BETWEEN ? AND ?", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, volume);
	sqlite3_bind_int64(st, 2, first);
	sqlite3_bind_int64(st, 3, last);
	rc = sqlite3_step(st);
	r = rc == SQLITE_DONE ? 0 : store_error(s, rc);
	store_stmt_done(st);
	return r;
}

int store_extent_list(struct store *s, struct extent_rec **out, size_t *nr)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "SELECT " EXTENT_COLUMNS " FROM extent ORDER BY volume, seq", &st);
	if (r)
		return r;
	return store_collect(s, st, sizeof(**out), extent_row, (void **)out, nr);
}

/* 0 if the statement changed a row, else -ENOENT. */
static int changed_one(struct store *s, sqlite3_stmt *st)
{
	int r = store_step_done(s, st);

	return !r && sqlite3_changes(s->db) == 0 ? -ENOENT : r;
}

int store_extent_set_length(struct store *s, int64_t volume, uint32_t seq, uint64_t length)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "UPDATE extent SET length = ? WHERE volume = ? AND seq = ?", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)length);
	sqlite3_bind_int64(st, 2, volume);
	sqlite3_bind_int64(st, 3, seq);
	return changed_one(s, st);
}
