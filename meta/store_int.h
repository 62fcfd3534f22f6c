/*
 * meta/store_int.h: what the store's own files share, and nobody else.
 *
 * Every SQL statement goes through store_stmt(), which hands out a
 * prepared statement from a small per-store cache, reset and unbound.  The
 * caller binds, steps and calls store_stmt_done() on every path: a
 * statement left un-reset would hold a read transaction open and keep the
 * connection on a stale snapshot.
 */
#ifndef MAPPERFS_STORE_INT_H
#define MAPPERFS_STORE_INT_H

#include <sqlite3.h>
#include <stddef.h>

#include "store.h"

#define STORE_STMT_CACHE	32	/* statements kept prepared */

struct store_stmt {
	const char *sql;		/* the caller's literal; the key */
	sqlite3_stmt *st;
};

struct store {
	sqlite3 *db;
	unsigned int next_victim;	/* cache slot to reuse when full */
	struct store_stmt cache[STORE_STMT_CACHE];
};

/*
 * Turns an SQLite result code (extended codes are on) into -errno, as
 * listed in store.h; SQLITE_DONE, where a row was expected, is -ENOENT.
 * Logs SQLite's message for the codes that become -EIO.
 */
int store_error(struct store *s, int rc);

/* A ready statement for @sql (a string literal).  0 or -errno. */
int store_stmt(struct store *s, const char *sql, sqlite3_stmt **out);
void store_stmt_done(sqlite3_stmt *st);

/* Steps @st once, expecting no row, and resets it.  0 or -errno. */
int store_step_done(struct store *s, sqlite3_stmt *st);

/* Runs SQL that returns no rows (one or more statements).  0 or -errno. */
int store_exec(struct store *s, const char *sql);

/* Fills one record from the current row of a statement. */
typedef int (*store_row_fn)(sqlite3_stmt *st, void *rec);

/*
 * Steps @st to the end, filling a malloc'ed array of @rec_size records
 * with @row, and resets it.  *out is NULL and *nr 0 when there is no row;
 * on error nothing is returned.
 */
int store_collect(struct store *s, sqlite3_stmt *st, size_t rec_size,
		  store_row_fn row, void **out, size_t *nr);

/*
 * Steps @st once, fills @rec from its row with @row, and resets it.
 * 0, -ENOENT when there is no row, or -errno.
 */
int store_fetch(struct store *s, sqlite3_stmt *st, store_row_fn row, void *rec);

/* Copies text column @col into @dst (@size bytes, always terminated). */
void store_column_text(sqlite3_stmt *st, int col, char *dst, size_t size);

/* Reads PRAGMA user_version.  0 or -errno. */
int store_user_version(struct store *s, int *out);

/* Little-endian blob fields, whatever the host (thin pages, space map). */
static inline void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint64_t get_le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static inline void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

#endif
