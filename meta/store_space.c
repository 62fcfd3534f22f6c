/*
 * meta/store_space.c: a thin pool's space map (thin_store.h), one row per
 * chunk of THIN_SPACE_CHUNK_BLOCKS data blocks in thin_space, and its
 * validity in thin_pool.space_valid.  A chunk missing is all zeros.
 *
 * Blobs are little-endian whatever the host, as the map pages are: the
 * fields as 64-bit words, the overflow as 32-bit (block, count) pairs.
 *
 * The fields are kept as they are (THIN_SPACE_CHUNK_WORDS words, 1024
 * bytes) or, when shorter, as runs of equal words: a byte of count, then
 * the word, RUN_BYTES each; the length tells them apart, 1024 being no
 * multiple of 9.  Counts come in long equal stretches (blocks allocated
 * once, by the thousand; free space), so a chunk is mostly one run of 9
 * bytes: at 1e8 blocks a start reads some 0.5 MB of rows, where the 1024
 * bytes a chunk, three rows to a 4 KiB page, made 39 MB of pages to read
 * in the order of the table's b-tree (a cold start went from 0.62-0.71 s
 * to 0.27-0.36).
 * Rows written before (schema 15) stay as they are until their chunk
 * changes.
 */
#include "thin_store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

int store_thin_space_valid(struct store *s, int64_t pool, bool *valid)
{
	sqlite3_stmt *st;
	int rc, r;

	r = store_stmt(s, "SELECT space_valid FROM thin_pool WHERE volume = ?", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, pool);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*valid = sqlite3_column_int(st, 0) != 0;
	else
		r = rc == SQLITE_DONE ? -ENOENT : store_error(s, rc);
	store_stmt_done(st);
	return r;
}

#define FIELDS_BYTES	(THIN_SPACE_CHUNK_WORDS * 8)
#define RUN_BYTES	9	/* a count of 1..THIN_SPACE_CHUNK_WORDS, a word */

/* @words as runs into @out (FIELDS_BYTES); their length, 0 if not shorter. */
static size_t encode_runs(const uint64_t *words, unsigned char *out)
{
	size_t len = 0;

	for (unsigned int i = 0, n; i < THIN_SPACE_CHUNK_WORDS; i += n) {
		for (n = 1; i + n < THIN_SPACE_CHUNK_WORDS && words[i + n] == words[i]; n++)
			;
		if (len + RUN_BYTES >= FIELDS_BYTES)
			return 0;
		out[len] = (unsigned char)n;
		put_le64(out + len + 1, words[i]);
		len += RUN_BYTES;
	}
	return len;
}

/* A row's fields, @len bytes of @blob, into @words; -EUCLEAN if damaged. */
static int decode_fields(const unsigned char *blob, int len, uint64_t *words)
{
	unsigned int at = 0;

	if (len == FIELDS_BYTES) {
		for (unsigned int i = 0; i < THIN_SPACE_CHUNK_WORDS; i++)
			words[i] = get_le64(blob + 8 * i);
		return 0;
	}
	if (len <= 0 || len % RUN_BYTES)
		return -EUCLEAN;
	for (int off = 0; off < len; off += RUN_BYTES) {
		unsigned int n = blob[off];
		uint64_t word = get_le64(blob + off + 1);

		if (!n || n > THIN_SPACE_CHUNK_WORDS - at)
			return -EUCLEAN;
		while (n--)
			words[at++] = word;
	}
	return at == THIN_SPACE_CHUNK_WORDS ? 0 : -EUCLEAN;
}

/*
 * The current row of @st as a chunk into @rec, its fields in @buf
 * (THIN_SPACE_CHUNK_WORDS); rec->overflow malloc'ed.
 */
static int space_row(sqlite3_stmt *st, struct thin_space_rec *rec, uint64_t *buf)
{
	const unsigned char *fields = sqlite3_column_blob(st, 1);
	const unsigned char *over = sqlite3_column_blob(st, 2);
	int nf = sqlite3_column_bytes(st, 1), no = sqlite3_column_bytes(st, 2);

	if (no % 8 || decode_fields(fields, nf, buf))
		return -EUCLEAN;
	rec->chunk = (uint64_t)sqlite3_column_int64(st, 0);
	rec->fields = buf;
	rec->nr_overflow = (size_t)no / 8;
	rec->overflow = malloc((rec->nr_overflow ? rec->nr_overflow : 1) * 2 * sizeof(uint32_t));
	if (!rec->overflow)
		return -ENOMEM;
	for (size_t i = 0; i < 2 * rec->nr_overflow; i++)
		rec->overflow[i] = get_le32(over + 4 * i);
	return 0;
}

int store_thin_space_each(struct store *s, int64_t pool,
			  int (*each)(void *ctx, const struct thin_space_rec *rec), void *ctx)
{
	uint64_t buf[THIN_SPACE_CHUNK_WORDS];
	struct thin_space_rec rec;
	sqlite3_stmt *st;
	int rc, r;

	r = store_stmt(s, "SELECT chunk, fields, overflow FROM thin_space WHERE pool = ?"
			  " ORDER BY chunk", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, pool);
	while (!r && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		r = space_row(st, &rec, buf);
		if (!r) {
			r = each(ctx, &rec);
			free(rec.overflow);
		}
	}
	if (!r && rc != SQLITE_DONE)
		r = store_error(s, rc);
	store_stmt_done(st);
	return r;
}

int store_thin_space_put(struct store *s, int64_t pool, const struct thin_space_rec *rec)
{
	unsigned char fields[FIELDS_BYTES], *over;
	size_t len = encode_runs(rec->fields, fields);
	sqlite3_stmt *st;
	int r;

	over = malloc(rec->nr_overflow ? rec->nr_overflow * 8 : 1);
	if (!over)
		return -ENOMEM;
	for (unsigned int i = 0; !len && i < THIN_SPACE_CHUNK_WORDS; i++)
		put_le64(fields + 8 * i, rec->fields[i]);
	for (size_t i = 0; i < 2 * rec->nr_overflow; i++)
		put_le32(over + 4 * i, rec->overflow[i]);
	r = store_stmt(s, "INSERT OR REPLACE INTO thin_space (pool, chunk, fields, overflow)"
			  " VALUES (?, ?, ?, ?)", &st);
	if (!r) {
		sqlite3_bind_int64(st, 1, pool);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)rec->chunk);
		sqlite3_bind_blob(st, 3, fields, len ? (int)len : (int)FIELDS_BYTES, SQLITE_STATIC);
		if (rec->nr_overflow)
			sqlite3_bind_blob(st, 4, over, (int)rec->nr_overflow * 8, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 4);
		r = store_step_done(s, st);
	}
	free(over);
	return r;
}

int store_thin_space_clear(struct store *s, int64_t pool)
{
	sqlite3_stmt *st;
	int r = store_stmt(s, "DELETE FROM thin_space WHERE pool = ?", &st);

	if (r)
		return r;
	sqlite3_bind_int64(st, 1, pool);
	return store_step_done(s, st);
}

int store_thin_space_set_valid(struct store *s, int64_t pool, bool valid)
{
	sqlite3_stmt *st;
	int r = store_stmt(s, "UPDATE thin_pool SET space_valid = ? WHERE volume = ?", &st);

	if (r)
		return r;
	sqlite3_bind_int(st, 1, valid);
	sqlite3_bind_int64(st, 2, pool);
	return store_step_done(s, st);
}
