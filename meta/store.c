/*
 * meta/store.c: opening a pool database, transactions, the statement
 * cache and the one place SQLite errors become -errno.
 *
 * Opening is careful about what it writes.  Without STORE_CREATE the file
 * is opened read-write but never created, and its user_version is read
 * before anything else: a file that is not SQLite fails there (NOTADB), a
 * SQLite file of someone else's has version 0 or no pool row, and only
 * then do we switch it to WAL and migrate.  With STORE_CREATE the file is
 * made by open(O_CREAT | O_EXCL, 0600) first, so the umask cannot widen
 * it and an existing pool is never touched (SQLite gives its -wal and
 * -shm files the mode of the database).  A failed create removes the file.
 *
 * In a process that records its writes for power-cut testing, the file is
 * opened through the recording VFS (store_vfs.h); otherwise as SQLite's
 * default.
 *
 * Corruption shows up as SQLITE_CORRUPT on the queries that meet it, as
 * -EUCLEAN; PRAGMA quick_check (store_quick_check) finds the rest, such
 * as a damaged index page no row read meets: opening a pool runs it once,
 * O(file size), and check again.
 */
#include "store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "log.h"
#include "migrate.h"
#include "store_vfs.h"

#define STORE_BUSY_TIMEOUT_MS	5000

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

int store_quick_check(struct store *s, void (*report)(void *arg, const char *msg),
		      void *arg)
{
	sqlite3_stmt *st;
	int rc, r;

	r = store_stmt(s, "PRAGMA quick_check", &st);
	if (r)
		return r;
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
	store_stmt_done(st);
	return 0;
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

/* Creates @path, mode 0600 whatever the umask; -EEXIST if it exists. */
static int store_create_file(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0600)) {
		int r = -errno;

		close(fd);
		unlink(path);
		return r;
	}
	close(fd);
	return 0;
}

static void store_remove_files(const char *path)
{
	char side[PATH_MAX + 8];

	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
}

/* 0 if the schema has a pool table, -EUCLEAN if not. */
static int store_has_pool_table(struct store *s)
{
	sqlite3_stmt *st;
	int rc, r;

	r = store_stmt(s, "SELECT 1 FROM sqlite_master"
			  " WHERE type = 'table' AND name = 'pool'", &st);
	if (r)
		return r;
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		r = -EUCLEAN;
	else
		r = rc == SQLITE_ROW ? 0 : store_error(s, rc);
	store_stmt_done(st);
	return r;
}

/*
 * Checks that the file is a pool this build can read, before writing to
 * it: a new file only with STORE_CREATE, a pool table from version 1 on.
 */
static int store_check_version(struct store *s, enum store_open_flags flags)
{
	int version;
	int r;

	r = store_user_version(s, &version);
	if (r)
		return r;
	if (version > migrate_latest())
		return -EPROTONOSUPPORT;
	if (version < 0)	/* user_version is any 32-bit number; ours are not negative */
		return -EUCLEAN;
	if (version == 0)
		return flags & STORE_CREATE ? 0 : -EUCLEAN;
	return store_has_pool_table(s);
}

static int store_set_journal_wal(struct store *s)
{
	sqlite3_stmt *st;
	int rc, r;

	r = store_stmt(s, "PRAGMA journal_mode = WAL", &st);
	if (r)
		return r;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW &&
	    strcmp((const char *)sqlite3_column_text(st, 0), "wal"))
		log_warn("pool database: cannot switch to WAL, journal mode is %s",
			 sqlite3_column_text(st, 0));
	r = rc == SQLITE_ROW ? 0 : store_error(s, rc);
	store_stmt_done(st);
	return r;
}

static int store_configure(struct store *s, enum store_open_flags flags)
{
	struct uuid uuid;
	int r;

	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS);
	r = store_check_version(s, flags);
	if (r)
		return r;
	if (flags & STORE_READ_ONLY) {
		int version;

		r = store_user_version(s, &version);
		if (!r && version != migrate_latest())
			r = -EROFS;	/* too old, and it cannot be migrated */
		return r ? r : store_pool_uuid(s, &uuid);
	}
	r = store_exec(s, "PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL");
	if (r)
		return r;
	r = store_set_journal_wal(s);
	if (r)
		return r;
	r = migrate_run(s);
	if (r)
		return r;
	r = store_pool_uuid(s, &uuid);
	return r == -ENOENT ? -EUCLEAN : r;
}

/*
 * On a file system mounted read-only, the database is opened as immutable
 * (no locks, no WAL index to create): nobody can write it there.
 */
static int store_open_db(struct store *s, const char *path, enum store_open_flags flags)
{
	char *uri;
	int rc;

	if (!(flags & STORE_READ_ONLY))
		return sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
				       SQLITE_OPEN_NOFOLLOW, store_vfs_name());
	uri = sqlite3_mprintf("file:%s?immutable=1", path);
	if (!uri)
		return SQLITE_NOMEM;
	rc = sqlite3_open_v2(uri, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX |
			     SQLITE_OPEN_URI | SQLITE_OPEN_NOFOLLOW, store_vfs_name());
	sqlite3_free(uri);
	return rc;
}

int store_open(const char *path, enum store_open_flags flags, struct store **out)
{
	struct statvfs fs;
	struct store *s;
	struct stat sb;
	int rc, r;

	if (flags & STORE_CREATE)
		r = store_create_file(path);
	else
		r = stat(path, &sb) ? -errno : 0;
	if (r)
		return r;
	if (!(flags & STORE_CREATE) && !statvfs(path, &fs) && (fs.f_flag & ST_RDONLY))
		flags |= STORE_READ_ONLY;
	s = calloc(1, sizeof(*s));
	if (!s) {
		r = -ENOMEM;
		goto err_remove;
	}
	rc = store_open_db(s, path, flags);
	if (rc != SQLITE_OK) {
		r = s->db && sqlite3_system_errno(s->db) ?
			-sqlite3_system_errno(s->db) : store_error(s, rc);
		goto err_close;
	}
	r = store_configure(s, flags);
	if (r)
		goto err_close;
	*out = s;
	return 0;

err_close:
	store_close(s);
err_remove:
	if (flags & STORE_CREATE)
		store_remove_files(path);
	return r;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	for (unsigned int i = 0; i < STORE_STMT_CACHE; i++)
		sqlite3_finalize(s->cache[i].st);
	sqlite3_close(s->db);
	free(s);
}
