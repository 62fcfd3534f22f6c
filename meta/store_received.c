/*
 * meta/store_received.c: thin volumes received from another pool
 * (records.h: thin_received_rec), one row per volume in thin_received,
 * deleted with the volume.  The uuid is kept as text, as the pool's and
 * the devices' are.
 */
#include "store_int.h"

#include <errno.h>

int store_received_put(struct store *s, const struct thin_received_rec *r)
{
	char uuid[UUID_STR_LEN];
	sqlite3_stmt *st;
	int rc, e;

	e = store_stmt(s, "INSERT OR REPLACE INTO thin_received (volume, source_uuid, source_name,"
			  " stream_pos, stream_crc, stream_records, stream_data_bytes, stream_next,"
			  " stream_header_crc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", &st);
	if (e)
		return e;
	uuid_format(&r->source, uuid);
	sqlite3_bind_int64(st, 1, r->volume);
	sqlite3_bind_text(st, 2, uuid, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 3, r->source_name, -1, SQLITE_STATIC);
	if (r->staged) {
		sqlite3_bind_int64(st, 4, (sqlite3_int64)r->pos);
		sqlite3_bind_int64(st, 5, r->crc);
		sqlite3_bind_int64(st, 6, (sqlite3_int64)r->records);
		sqlite3_bind_int64(st, 7, (sqlite3_int64)r->data_bytes);
		sqlite3_bind_int64(st, 8, (sqlite3_int64)r->next);
		sqlite3_bind_int64(st, 9, r->header_crc);
	}
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
		e = -ENOENT;
	else
		e = rc == SQLITE_DONE ? 0 : store_error(s, rc);
	store_stmt_done(st);
	return e;
}

static int received_row(sqlite3_stmt *st, void *rec)
{
	struct thin_received_rec *r = rec;
	char uuid[UUID_STR_LEN];

	r->volume = sqlite3_column_int64(st, 0);
	store_column_text(st, 1, uuid, sizeof(uuid));
	if (uuid_parse(uuid, &r->source))
		return -EUCLEAN;
	store_column_text(st, 2, r->source_name, sizeof(r->source_name));
	r->staged = sqlite3_column_type(st, 3) != SQLITE_NULL;
	r->pos = (uint64_t)sqlite3_column_int64(st, 3);
	r->crc = (uint32_t)sqlite3_column_int64(st, 4);
	r->records = (uint64_t)sqlite3_column_int64(st, 5);
	r->data_bytes = (uint64_t)sqlite3_column_int64(st, 6);
	r->next = (uint64_t)sqlite3_column_int64(st, 7);
	r->header_crc = (uint32_t)sqlite3_column_int64(st, 8);
	return 0;
}

int store_received_get(struct store *s, int64_t volume, struct thin_received_rec *out)
{
	sqlite3_stmt *st;
	int e;

	e = store_stmt(s, "SELECT volume, source_uuid, source_name, stream_pos, stream_crc,"
			  " stream_records, stream_data_bytes, stream_next, stream_header_crc"
			  " FROM thin_received WHERE volume = ?", &st);
	if (e)
		return e;
	sqlite3_bind_int64(st, 1, volume);
	return store_fetch(s, st, received_row, out);
}

int store_received_drop(struct store *s, int64_t volume)
{
	sqlite3_stmt *st;
	int rc, e;

	e = store_stmt(s, "DELETE FROM thin_received WHERE volume = ?", &st);
	if (e)
		return e;
	sqlite3_bind_int64(st, 1, volume);
	rc = sqlite3_step(st);
	e = rc == SQLITE_DONE ? 0 : store_error(s, rc);
	store_stmt_done(st);
	return e;
}
