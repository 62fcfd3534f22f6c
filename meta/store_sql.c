/*
 * meta/store_sql.c: the statements of the store: the statement cache,
 * stepping and collecting rows, transactions, and the one place SQLite
 * errors become -errno.  Every other file of the store, the migrations
 * and the opening in store.c included, runs its SQL through these; they
 * call nothing of the store above them.
 */
#include "store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

int store_error(struct store *s, int rc)
{
	static struct log_limit limit;

	switch (rc) {
	case SQLITE_DONE:
		return -ENOENT;
	case SQLITE_CONSTRAINT_UNIQUE:
	case SQLITE_CONSTRAINT_PRIMARYKEY:
		return -EEXIST;
	case SQLITE_CONSTRAINT_FOREIGNKEY:
		return -EBUSY;
	case SQLITE_CONSTRAINT_CHECK:
	case SQLITE_CONSTRAINT_NOTNULL:
		return -EINVAL;
	}
	switch (rc & 0xff) {
	case SQLITE_NOTADB:
	case SQLITE_CORRUPT:
		return -EUCLEAN;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_ABORT:		/* its transaction was rolled back under it */
	case SQLITE_INTERRUPT:
		return -ECANCELED;
	case SQLITE_CANTOPEN:		/* the WAL or -shm file refused (store_sys_open) */
		if (sqlite3_system_errno(s->db) == EINVAL || sqlite3_system_errno(s->db) == EMLINK)
			return -sqlite3_system_errno(s->db);
		break;
	}
	/* Every retried commit of a failing database fails alike: once is news. */
	log_error_limited(&limit, "pool database: %s (SQLite code %d)", sqlite3_errmsg(s->db), rc);
	return -EIO;
}

int store_stmt(struct store *s, const char *sql, sqlite3_stmt **out)
{
	struct store_stmt *slot = NULL;
	int rc;

	for (unsigned int i = 0; i < STORE_STMT_CACHE; i++) {
		if (s->cache[i].sql == sql) {
			*out = s->cache[i].st;
			return 0;
		}
		if (!slot && !s->cache[i].sql)
			slot = &s->cache[i];
	}
	if (!slot) {
		slot = &s->cache[s->next_victim];
		s->next_victim = (s->next_victim + 1) % STORE_STMT_CACHE;
		sqlite3_finalize(slot->st);
		slot->sql = NULL;
	}
	rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
				&slot->st, NULL);
	if (rc != SQLITE_OK)
		return store_error(s, rc);
	slot->sql = sql;
	*out = slot->st;
	return 0;
}

void store_stmt_done(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

int store_step_done(struct store *s, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);
	int r = rc == SQLITE_DONE ? 0 : store_error(s, rc);

	store_stmt_done(st);
	return r;
}

int store_exec(struct store *s, const char *sql)
{
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : store_error(s, rc);
}

int store_fetch(struct store *s, sqlite3_stmt *st, store_row_fn row, void *rec)
{
	int rc = sqlite3_step(st);
	int r = rc == SQLITE_ROW ? row(st, rec) : store_error(s, rc);

	store_stmt_done(st);
	return r;
}

int store_collect(struct store *s, sqlite3_stmt *st, size_t rec_size,
		  store_row_fn row, void **out, size_t *nr)
{
	char *recs = NULL;
	size_t n = 0, cap = 0;
	int rc, r = 0;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			size_t new_cap = cap ? 2 * cap : 16;
			char *p = realloc(recs, new_cap * rec_size);

			if (!p) {
				r = -ENOMEM;
				break;
			}
			recs = p;
			cap = new_cap;
		}
		r = row(st, recs + n * rec_size);
		if (r)
			break;
		n++;
	}
	if (!r && rc != SQLITE_DONE)
		r = store_error(s, rc);
	store_stmt_done(st);
	if (r) {
		free(recs);
		return r;
	}
	*out = n ? recs : NULL;
	if (!n)
		free(recs);
	*nr = n;
	return 0;
}

void store_column_text(sqlite3_stmt *st, int col, char *dst, size_t size)
{
	const unsigned char *text = sqlite3_column_text(st, col);

	snprintf(dst, size, "%s", text ? (const char *)text : "");
}

int store_user_version(struct store *s, int *out)
{
	sqlite3_stmt *st;
	int rc, r;

	r = store_stmt(s, "PRAGMA user_version", &st);
	if (r)
		return r;
	rc = sqlite3_step(st);
	*out = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
	r = rc == SQLITE_ROW ? 0 : store_error(s, rc);
	store_stmt_done(st);
	return r;
}

int store_schema_version(struct store *s, int *out)
{
	return store_user_version(s, out);
}

int store_pool_uuid(struct store *s, struct uuid *out)
{
	sqlite3_stmt *st;
	int rc, r;

	r = store_stmt(s, "SELECT uuid FROM pool WHERE id = 1", &st);
	if (r)
		return r;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const unsigned char *text = sqlite3_column_text(st, 0);

		r = text && !uuid_parse((const char *)text, out) ? 0 : -EUCLEAN;
	} else {
		r = store_error(s, rc);
	}
	store_stmt_done(st);
	return r;
}

int store_layout_seq(struct store *s, uint64_t *out)
{
	sqlite3_stmt *st;
	int rc, r;

	r = store_stmt(s, "SELECT layout_seq FROM pool WHERE id = 1", &st);
	if (r)
		return r;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*out = (uint64_t)sqlite3_column_int64(st, 0);
	else
		r = store_error(s, rc);
	store_stmt_done(st);
	return r;
}

int store_layout_seq_set(struct store *s, uint64_t seq)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "UPDATE pool SET layout_seq = ? WHERE id = 1", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)seq);
	return store_step_done(s, st);
}

int store_pool_uuid_set(struct store *s, const struct uuid *u)
{
	char text[UUID_STR_LEN];
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "UPDATE pool SET uuid = ? WHERE id = 1", &st);
	if (r)
		return r;
	uuid_format(u, text);
	sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
	return store_step_done(s, st);
}

/*
 * One problem of quick_check's may be several lines, headed by "*** in
 * database main ***": each other line is a problem of its own.
 */
static void report_lines(const char *msg, void (*report)(void *arg, const char *msg),
			 void *arg)
{
	char line[256];

	while (*msg) {
		size_t n = strcspn(msg, "\n");

		snprintf(line, sizeof(line), "%.*s", (int)n, msg);
		if (n && strncmp(line, "*** in database ", 16))
			report(arg, line);
		msg += n + (msg[n] == '\n');
	}
}

/* Steps a quick_check statement, reporting each problem.  0. */
static int run_quick_check(struct store *s, sqlite3_stmt *st,
			   void (*report)(void *arg, const char *msg), void *arg)
{
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *msg = (const char *)sqlite3_column_text(st, 0);

		if (msg && strcmp(msg, "ok"))
			report_lines(msg, report, arg);
	}
	if (rc != SQLITE_DONE) {
		char msg[256];

		snprintf(msg, sizeof(msg), "cannot be read: %s", sqlite3_errmsg(s->db));
		report(arg, msg);
	}
	return 0;
}

/* quick_check of each table but the map's pages. */
static int quick_check_tables(struct store *s, void (*report)(void *arg, const char *msg),
			      void *arg)
{
	sqlite3_stmt *tables;
	int rc, r;

	r = store_stmt(s, "SELECT name FROM sqlite_schema WHERE type = 'table'"
			  " AND name NOT IN ('thin_leaf', 'thin_space')", &tables);
	if (r)
		return r;
	while (!r && (rc = sqlite3_step(tables)) == SQLITE_ROW) {
		char *sql = sqlite3_mprintf("PRAGMA quick_check(%Q)",
					    (const char *)sqlite3_column_text(tables, 0));
		sqlite3_stmt *st = NULL;

		if (!sql)
			r = -ENOMEM;
		else if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
			r = store_error(s, sqlite3_errcode(s->db));
		else
			r = run_quick_check(s, st, report, arg);
		sqlite3_finalize(st);
		sqlite3_free(sql);
	}
	if (!r && rc != SQLITE_DONE) {
		char msg[256];

		snprintf(msg, sizeof(msg), "cannot be read: %s", sqlite3_errmsg(s->db));
		report(arg, msg);
	}
	store_stmt_done(tables);
	return r;
}

int store_quick_check(struct store *s, bool whole,
		      void (*report)(void *arg, const char *msg), void *arg)
{
	sqlite3_stmt *st;
	int r;

	if (!whole)
		return quick_check_tables(s, report, arg);
	r = store_stmt(s, "PRAGMA quick_check", &st);
	if (r)
		return r;
	r = run_quick_check(s, st, report, arg);
	store_stmt_done(st);
	return r;
}

int store_begin(struct store *s)
{
	return store_exec(s, "BEGIN IMMEDIATE");
}

int store_commit(struct store *s)
{
	return store_exec(s, "COMMIT");
}

void store_rollback(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

int store_read_begin(struct store *s)
{
	return store_exec(s, "BEGIN");
}

void store_read_end(struct store *s)
{
	store_rollback(s);	/* it wrote nothing: ending it is all there is */
}
