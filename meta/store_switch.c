#include "store_switch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

/* A failed step: a missing volume or device is -ENOENT. */
static int insert_error(struct store *s, int rc)
{
	if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
		return -ENOENT;
	return store_error(s, rc);
}

static int insert_switch(struct store *s, const struct switch_rec *sw,
			 const void *table, size_t table_len)
{
	sqlite3_stmt *st;
	int rc, r;

	r = store_stmt(s, "INSERT INTO switch (volume, region_size, nr_regions,"
			  " nr_paths, entry_bits, regions) VALUES (?, ?, ?, ?, ?, ?)",
		       &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, sw->volume);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)sw->region_size);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)sw->nr_regions);
	sqlite3_bind_int64(st, 4, sw->nr_paths);
	sqlite3_bind_int64(st, 5, sw->entry_bits);
	sqlite3_bind_blob64(st, 6, table, table_len, SQLITE_STATIC);
	rc = sqlite3_step(st);
	r = rc == SQLITE_DONE ? 0 : insert_error(s, rc);
	store_stmt_done(st);
	return r;
}

static int insert_path(struct store *s, int64_t volume,
		       const struct switch_path_rec *p)
{
	sqlite3_stmt *st;
	int rc, r;

	r = store_stmt(s, "INSERT INTO switch_path (volume, idx, device, dev_offset)"
			  " VALUES (?, ?, ?, ?)", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, volume);
	sqlite3_bind_int64(st, 2, p->idx);
	sqlite3_bind_int64(st, 3, p->device);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)p->dev_offset);
	rc = sqlite3_step(st);
	r = rc == SQLITE_DONE ? 0 : insert_error(s, rc);
	store_stmt_done(st);
	return r;
}

int store_switch_insert(struct store *s, const struct switch_rec *sw,
			const struct switch_path_rec *paths, const void *table,
			size_t table_len)
{
	int r = insert_switch(s, sw, table, table_len);

	for (uint32_t i = 0; i < sw->nr_paths && !r; i++)
		r = insert_path(s, sw->volume, &paths[i]);
	return r;
}

static int switch_row(sqlite3_stmt *st, void *rec)
{
	struct switch_rec *sw = rec;

	sw->volume = sqlite3_column_int64(st, 0);
	sw->region_size = (uint64_t)sqlite3_column_int64(st, 1);
	sw->nr_regions = (uint64_t)sqlite3_column_int64(st, 2);
	sw->nr_paths = (uint32_t)sqlite3_column_int64(st, 3);
	sw->entry_bits = (uint32_t)sqlite3_column_int64(st, 4);
	return 0;
}

int store_switch_list(struct store *s, struct switch_rec **out, size_t *nr)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "SELECT volume, region_size, nr_regions, nr_paths, entry_bits"
			  " FROM switch ORDER BY volume", &st);
	if (r)
		return r;
	return store_collect(s, st, sizeof(**out), switch_row, (void **)out, nr);
}

static int path_row(sqlite3_stmt *st, void *rec)
{
	struct switch_path_rec *p = rec;

	p->volume = sqlite3_column_int64(st, 0);
	p->idx = (uint32_t)sqlite3_column_int64(st, 1);
	p->device = sqlite3_column_int64(st, 2);
	p->dev_offset = (uint64_t)sqlite3_column_int64(st, 3);
	return 0;
}

int store_switch_path_list(struct store *s, struct switch_path_rec **out, size_t *nr)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "SELECT volume, idx, device, dev_offset FROM switch_path"
			  " ORDER BY volume, idx", &st);
	if (r)
		return r;
	return store_collect(s, st, sizeof(**out), path_row, (void **)out, nr);
}

int store_switch_table_get(struct store *s, int64_t volume, void **out,
			   size_t *len)
{
	sqlite3_stmt *st;
	int rc, r;

	r = store_stmt(s, "SELECT regions FROM switch WHERE volume = ?", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, volume);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const void *blob = sqlite3_column_blob(st, 0);
		size_t n = (size_t)sqlite3_column_bytes(st, 0);

		*out = malloc(n ? n : 1);
		if (*out) {
			if (n)	/* SQLite gives NULL for an empty blob */
				memcpy(*out, blob, n);
			*len = n;
		}
		r = *out ? 0 : -ENOMEM;
	} else {
		r = store_error(s, rc);
	}
	store_stmt_done(st);
	return r;
}

int store_switch_table_set(struct store *s, int64_t volume, const void *table,
			   size_t len)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "UPDATE switch SET regions = ? WHERE volume = ?", &st);
	if (r)
		return r;
	sqlite3_bind_blob64(st, 1, table, len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, volume);
	r = store_step_done(s, st);
	if (!r && sqlite3_changes(s->db) == 0)
		return -ENOENT;
	return r;
}

int store_switch_resize(struct store *s, int64_t volume, uint64_t nr_regions,
			const void *table, size_t len)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "UPDATE switch SET nr_regions = ?, regions = ? WHERE volume = ?", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)nr_regions);
	sqlite3_bind_blob64(st, 2, table, len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, volume);
	r = store_step_done(s, st);
	if (!r && sqlite3_changes(s->db) == 0)
		return -ENOENT;
	return r;
}

int store_switch_path_set(struct store *s, int64_t volume, uint32_t idx, int64_t device,
			  uint64_t dev_offset)
{
	sqlite3_stmt *st;
	int rc, r;

	r = store_stmt(s, "UPDATE switch_path SET device = ?, dev_offset = ?"
			  " WHERE volume = ? AND idx = ?", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, device);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)dev_offset);
	sqlite3_bind_int64(st, 3, volume);
	sqlite3_bind_int64(st, 4, idx);
	rc = sqlite3_step(st);
	r = rc == SQLITE_DONE ? 0 : insert_error(s, rc);
	store_stmt_done(st);
	if (!r && sqlite3_changes(s->db) == 0)
		return -ENOENT;
	return r;
}
