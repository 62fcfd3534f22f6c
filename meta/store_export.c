/*
 * meta/store_export.c: the volumes served over NBD (records.h: export_rec),
 * one row per exported volume, deleted with its volume.  The transport is
 * stored as a word ("unix", "tcp") so that the table reads as it means.
 */
#include "store_int.h"

#include <errno.h>
#include <string.h>

static const char *transport_word(enum export_transport t)
{
	return t == EXPORT_TCP ? "tcp" : "unix";
}

static int export_row(sqlite3_stmt *st, void *rec)
{
	struct export_rec *e = rec;
	const unsigned char *word;

	e->volume = sqlite3_column_int64(st, 0);
	word = sqlite3_column_text(st, 1);
	e->transport = word && !strcmp((const char *)word, "tcp") ? EXPORT_TCP : EXPORT_UNIX;
	store_column_text(st, 2, e->address, sizeof(e->address));
	e->read_only = sqlite3_column_int(st, 3) != 0;
	store_column_text(st, 4, e->tls_psk, sizeof(e->tls_psk));
	store_column_text(st, 5, e->tls_identity, sizeof(e->tls_identity));
	return 0;
}

int store_export_list(struct store *s, struct export_rec **out, size_t *nr)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "SELECT volume, transport, address, read_only, tls_psk, tls_identity"
			  " FROM export ORDER BY volume", &st);
	if (r)
		return r;
	return store_collect(s, st, sizeof(**out), export_row, (void **)out, nr);
}

int store_export_insert(struct store *s, const struct export_rec *e)
{
	sqlite3_stmt *st;
	int rc, r;

	r = store_stmt(s, "INSERT INTO export (volume, transport, address, read_only, tls_psk,"
			  " tls_identity) VALUES (?, ?, ?, ?, ?, ?)", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, e->volume);
	sqlite3_bind_text(st, 2, transport_word(e->transport), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, e->address, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 4, e->read_only);
	if (e->tls_psk[0]) {
		sqlite3_bind_text(st, 5, e->tls_psk, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 6, e->tls_identity, -1, SQLITE_STATIC);
	}
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
		r = -ENOENT;		/* no such volume */
	else if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE)
		r = -EEXIST;
	else
		r = rc == SQLITE_DONE ? 0 : store_error(s, rc);
	store_stmt_done(st);
	return r;
}

int store_export_delete(struct store *s, int64_t volume)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "DELETE FROM export WHERE volume = ?", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, volume);
	r = store_step_done(s, st);
	if (!r && sqlite3_changes(s->db) == 0)
		return -ENOENT;
	return r;
}
