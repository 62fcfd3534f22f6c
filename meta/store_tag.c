/*
 * meta/store_tag.c: the tags of volumes and devices (tags.h), a table per
 * owner (volume_tag, device_tag) whose foreign key deletes an owner's
 * tags with it.  An insert that names a missing owner is -ENOENT.
 */
#include "store_int.h"

#include <errno.h>

static int tag_row(sqlite3_stmt *st, void *rec)
{
	struct tag_rec *t = rec;

	t->on = sqlite3_column_int(st, 0) ? TAG_ON_DEVICE : TAG_ON_VOLUME;
	t->owner = sqlite3_column_int64(st, 1);
	store_column_text(st, 2, t->tag, sizeof(t->tag));
	return 0;
}

int store_tag_list(struct store *s, struct tag_rec **out, size_t *nr)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "SELECT 0, volume, tag FROM volume_tag"
			  " UNION ALL SELECT 1, device, tag FROM device_tag"
			  " ORDER BY 1, 2, 3", &st);
	if (r)
		return r;
	return store_collect(s, st, sizeof(**out), tag_row, (void **)out, nr);
}

/* Binds @t to the owner (1) and the tag (2) of @st and runs it. */
static int tag_change(struct store *s, sqlite3_stmt *st, const struct tag_rec *t)
{
	int rc, r;

	sqlite3_bind_int64(st, 1, t->owner);
	sqlite3_bind_text(st, 2, t->tag, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
		r = -ENOENT;		/* no such volume or device */
	else
		r = rc == SQLITE_DONE ? 0 : store_error(s, rc);
	store_stmt_done(st);
	return r;
}

int store_tag_add(struct store *s, const struct tag_rec *t)
{
	sqlite3_stmt *st;
	int r;

	if (t->on == TAG_ON_DEVICE)
		r = store_stmt(s, "INSERT OR IGNORE INTO device_tag (device, tag) VALUES (?, ?)",
			       &st);
	else
		r = store_stmt(s, "INSERT OR IGNORE INTO volume_tag (volume, tag) VALUES (?, ?)",
			       &st);
	return r ? r : tag_change(s, st, t);
}

int store_tag_delete(struct store *s, const struct tag_rec *t)
{
	sqlite3_stmt *st;
	int r;

	if (t->on == TAG_ON_DEVICE)
		r = store_stmt(s, "DELETE FROM device_tag WHERE device = ? AND tag = ?", &st);
	else
		r = store_stmt(s, "DELETE FROM volume_tag WHERE volume = ? AND tag = ?", &st);
	return r ? r : tag_change(s, st, t);
}
