/*
 * meta/store_thin.c: the thin tables (thin_store.h).
 *
 * Blobs are little-endian whatever the host, so a pool file can move.
 */
#include "thin_store.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

int store_thin_pool_insert(struct store *s, const struct thin_pool_rec *p)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "INSERT INTO thin_pool (volume, block_size, zero, when_full,"
			  " wait_seconds, low_water, discard_passdown, autoextend_threshold,"
			  " autoextend_percent, metadata_limit, on_event)"
			  " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", &st);
	if (r)
		return r;
	sqlite3_bind_int(st, 7, p->discard_passdown);
	sqlite3_bind_int64(st, 8, p->autoextend_threshold);
	sqlite3_bind_int64(st, 9, p->autoextend_percent);
	sqlite3_bind_int64(st, 10, (sqlite3_int64)p->metadata_limit);
	if (p->on_event[0])
		sqlite3_bind_text(st, 11, p->on_event, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 1, p->volume);
	sqlite3_bind_int64(st, 2, p->block_size);
	sqlite3_bind_int(st, 3, p->zero);
	sqlite3_bind_text(st, 4, p->wait ? "wait" : "error", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, p->wait_seconds);
	sqlite3_bind_int64(st, 6, p->low_water);
	return store_step_done(s, st);
}

int store_thin_pool_update(struct store *s, const struct thin_pool_rec *p)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "UPDATE thin_pool SET discard_passdown = ?, autoextend_threshold = ?,"
			  " autoextend_percent = ?, metadata_limit = ?, on_event = ?, zero = ?,"
			  " when_full = ?, wait_seconds = ?, low_water = ?"
			  " WHERE volume = ?", &st);
	if (r)
		return r;
	sqlite3_bind_int(st, 1, p->discard_passdown);
	sqlite3_bind_int64(st, 2, p->autoextend_threshold);
	sqlite3_bind_int64(st, 3, p->autoextend_percent);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)p->metadata_limit);
	if (p->on_event[0])
		sqlite3_bind_text(st, 5, p->on_event, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 6, p->zero);
	sqlite3_bind_text(st, 7, p->wait ? "wait" : "error", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 8, p->wait_seconds);
	sqlite3_bind_int64(st, 9, p->low_water);
	sqlite3_bind_int64(st, 10, p->volume);
	return store_step_done(s, st);
}

static int thin_pool_row(sqlite3_stmt *st, void *rec)
{
	struct thin_pool_rec *p = rec;
	const unsigned char *when_full = sqlite3_column_text(st, 3);

	p->volume = sqlite3_column_int64(st, 0);
	p->block_size = (uint32_t)sqlite3_column_int64(st, 1);
	p->zero = sqlite3_column_int(st, 2) != 0;
	p->wait = when_full && !strcmp((const char *)when_full, "wait");
	p->wait_seconds = (uint32_t)sqlite3_column_int64(st, 4);
	p->low_water = (uint32_t)sqlite3_column_int64(st, 5);
	p->discard_passdown = sqlite3_column_int(st, 6) != 0;
	p->autoextend_threshold = (uint32_t)sqlite3_column_int64(st, 7);
	p->autoextend_percent = (uint32_t)sqlite3_column_int64(st, 8);
	p->metadata_limit = (uint64_t)sqlite3_column_int64(st, 9);
	store_column_text(st, 10, p->on_event, sizeof(p->on_event));
	return 0;
}

int store_thin_pool_list(struct store *s, struct thin_pool_rec **out, size_t *nr)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "SELECT volume, block_size, zero, when_full, wait_seconds, low_water,"
			  " discard_passdown, autoextend_threshold, autoextend_percent,"
			  " metadata_limit, on_event FROM thin_pool ORDER BY volume", &st);
	if (r)
		return r;
	return store_collect(s, st, sizeof(**out), thin_pool_row, (void **)out, nr);
}

int store_thin_put(struct store *s, const struct thin_rec *t)
{
	sqlite3_stmt *st;
	int rc, r;

	r = store_stmt(s, "INSERT OR REPLACE INTO thin (volume, pool, dir, snapshot_of)"
			  " VALUES (?, ?, ?, ?)", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, t->volume);
	sqlite3_bind_int64(st, 2, t->pool);
	sqlite3_bind_int64(st, 3, t->dir);
	if (t->snapshot_of)
		sqlite3_bind_int64(st, 4, t->snapshot_of);
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
		r = -ENOENT;		/* no such volume, pool or origin */
	else
		r = rc == SQLITE_DONE ? 0 : store_error(s, rc);
	store_stmt_done(st);
	return r;
}

static int thin_row(sqlite3_stmt *st, void *rec)
{
	struct thin_rec *t = rec;

	t->volume = sqlite3_column_int64(st, 0);
	t->pool = sqlite3_column_int64(st, 1);
	t->dir = sqlite3_column_int64(st, 2);
	t->snapshot_of = sqlite3_column_int64(st, 3);
	return 0;
}

int store_thin_set_dir(struct store *s, int64_t volume, int64_t dir)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "UPDATE thin SET dir = ? WHERE volume = ?", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, dir);
	sqlite3_bind_int64(st, 2, volume);
	return store_step_done(s, st);
}

int store_thin_list(struct store *s, struct thin_rec **out, size_t *nr)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "SELECT volume, pool, dir, snapshot_of FROM thin ORDER BY volume", &st);
	if (r)
		return r;
	return store_collect(s, st, sizeof(**out), thin_row, (void **)out, nr);
}

static int vol_row(sqlite3_stmt *st, void *rec)
{
	struct thin_vol_rec *v = rec;

	v->volume = sqlite3_column_int64(st, 0);
	v->dir = sqlite3_column_int64(st, 1);
	return 0;
}

int store_thin_vols_of(struct store *s, int64_t pool, struct thin_vol_rec **out, size_t *nr)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "SELECT volume, dir FROM thin WHERE pool = ? ORDER BY volume", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, pool);
	return store_collect(s, st, sizeof(**out), vol_row, (void **)out, nr);
}

int store_thin_pages_delete(struct store *s, int64_t pool)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "DELETE FROM thin_leaf WHERE pool = ?", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, pool);
	r = store_step_done(s, st);
	if (r)
		return r;
	r = store_stmt(s, "DELETE FROM thin_dir WHERE pool = ?", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, pool);
	return store_step_done(s, st);
}

/*
 * The slots as the row holds them: @d's own array on a little-endian host
 * (no copy of a 1.5 MB map), else a malloc'ed one in *@copy.  NULL when
 * out of memory.
 */
static const void *dir_blob(const struct thin_dir_rec *d, unsigned char **copy)
{
	*copy = NULL;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (d->nr)
		return d->leaves;
#endif
	*copy = malloc(d->nr ? (size_t)d->nr * 8 : 1);
	if (*copy)
		for (uint32_t i = 0; i < d->nr; i++)
			put_le64(*copy + 8 * i, (uint64_t)d->leaves[i]);
	return *copy;
}

/* Binds the row's blob (?1), its count (?2), its pool (?3) and id (?4). */
static void dir_bind(sqlite3_stmt *st, int64_t pool, const struct thin_dir_rec *d,
		     const void *blob)
{
	sqlite3_bind_blob64(st, 1, blob, (sqlite3_uint64)d->nr * 8, SQLITE_STATIC);
	if (d->mapped_known)
		sqlite3_bind_int64(st, 2, (sqlite3_int64)d->mapped);
	else
		sqlite3_bind_null(st, 2);
	sqlite3_bind_int64(st, 3, pool);
	sqlite3_bind_int64(st, 4, d->id);
}

/*
 * A directory that has a row is updated in place: a row that keeps its
 * size is overwritten where its bytes differ, so a commit that changed a
 * few slots of a 1e8-block map writes a few of its 370 pages, where
 * INSERT OR REPLACE would free them all and write them all again.  A new
 * directory is inserted.
 */
int store_thin_dir_put(struct store *s, int64_t pool, const struct thin_dir_rec *d)
{
	unsigned char *copy;
	const void *blob = dir_blob(d, &copy);
	sqlite3_stmt *st;
	int r;

	if (!blob)
		return -ENOMEM;
	r = store_stmt(s, "UPDATE thin_dir SET leaves = ?1, mapped = ?2 WHERE pool = ?3 AND id = ?4",
		       &st);
	if (!r) {
		dir_bind(st, pool, d, blob);
		r = store_step_done(s, st);
	}
	if (!r && sqlite3_changes(s->db) == 0) {
		r = store_stmt(s, "INSERT INTO thin_dir (leaves, mapped, pool, id)"
				  " VALUES (?1, ?2, ?3, ?4)", &st);
		if (!r) {
			dir_bind(st, pool, d, blob);
			r = store_step_done(s, st);
		}
	}
	free(copy);
	return r;
}

/*
 * Through SQLite's incremental blob I/O, which reads the row's chain of
 * overflow pages to find the bytes and writes only the pages under them,
 * where an UPDATE of the whole blob builds the 1.5 MB record of a 1e8-block
 * map again and compares it with the old one page by page.
 */
int store_thin_dir_put_changed(struct store *s, int64_t pool, const struct thin_dir_rec *d,
			       const uint64_t *changed)
{
	unsigned char buf[THIN_DIR_CHUNK * 8];
	sqlite3_blob *blob = NULL;
	sqlite3_int64 rowid;
	sqlite3_stmt *st;
	int r, rc;

	r = store_stmt(s, "SELECT rowid FROM thin_dir WHERE pool = ? AND id = ?", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, pool);
	sqlite3_bind_int64(st, 2, d->id);
	rc = sqlite3_step(st);
	rowid = sqlite3_column_int64(st, 0);
	store_stmt_done(st);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? -EUCLEAN : store_error(s, rc);
	rc = sqlite3_blob_open(s->db, "main", "thin_dir", "leaves", rowid, 1, &blob);
	if (rc != SQLITE_OK)
		return store_error(s, rc);
	if ((uint64_t)sqlite3_blob_bytes(blob) != (uint64_t)d->nr * 8)
		r = -EUCLEAN;
	for (uint32_t c = 0; !r && c * THIN_DIR_CHUNK < d->nr; c++) {
		uint32_t lo = c * THIN_DIR_CHUNK;
		uint32_t n = d->nr - lo < THIN_DIR_CHUNK ? d->nr - lo : THIN_DIR_CHUNK;

		if (!thin_dir_chunk_changed(changed, c))
			continue;
		for (uint32_t j = 0; j < n; j++)
			put_le64(buf + 8 * j, (uint64_t)d->leaves[lo + j]);
		rc = sqlite3_blob_write(blob, buf, (int)n * 8, (int)lo * 8);
		if (rc != SQLITE_OK)
			r = store_error(s, rc);
	}
	sqlite3_blob_close(blob);
	if (!r && d->mapped_known)
		r = store_thin_dir_set_mapped(s, pool, d->id, d->mapped);
	return r;
}

/*
 * A directory is one little-endian int64 per slot, and a volume has at
 * least one slot: any other length is damage, not a map that reads as
 * holes.  (Whether the slots fit the volume's size is core's to check.)
 */
static bool dir_blob_well_formed(int len)
{
	return len > 0 && len % 8 == 0 && (unsigned int)len / 8 <= THIN_DIR_SLOTS_MAX;
}

int store_thin_dir_set_mapped(struct store *s, int64_t pool, int64_t id, uint64_t mapped)
{
	sqlite3_stmt *st;
	int r = store_stmt(s, "UPDATE thin_dir SET mapped = ? WHERE pool = ? AND id = ?", &st);

	if (r)
		return r;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)mapped);
	sqlite3_bind_int64(st, 2, pool);
	sqlite3_bind_int64(st, 3, id);
	return store_step_done(s, st);
}

int store_thin_dir_get(struct store *s, int64_t pool, int64_t id,
		       struct thin_dir_rec *out)
{
	const unsigned char *blob;
	sqlite3_stmt *st;
	int rc, r, len;

	r = store_stmt(s, "SELECT leaves, mapped FROM thin_dir WHERE pool = ? AND id = ?", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, pool);
	sqlite3_bind_int64(st, 2, id);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		r = store_error(s, rc);
		goto out;
	}
	blob = sqlite3_column_blob(st, 0);
	len = sqlite3_column_bytes(st, 0);
	if (!dir_blob_well_formed(len)) {
		r = -EUCLEAN;
		goto out;
	}
	out->id = id;
	out->nr = (uint32_t)(len / 8);
	/* A count no map of these slots can reach is not trusted: counted again. */
	out->mapped_known = sqlite3_column_type(st, 1) == SQLITE_INTEGER &&
			    sqlite3_column_int64(st, 1) >= 0 &&
			    (uint64_t)sqlite3_column_int64(st, 1) <=
			    (uint64_t)out->nr * THIN_LEAF_ENTRIES;
	out->mapped = out->mapped_known ? (uint64_t)sqlite3_column_int64(st, 1) : 0;
	out->leaves = calloc(out->nr ? out->nr : 1, sizeof(*out->leaves));
	if (!out->leaves) {
		r = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < out->nr; i++)
		out->leaves[i] = (int64_t)get_le64(blob + 8 * i);
out:
	store_stmt_done(st);
	return r;
}

int store_thin_leaf_put(struct store *s, int64_t pool, const struct thin_leaf_rec *l)
{
	unsigned char blob[THIN_LEAF_ENTRIES * 4];
	sqlite3_stmt *st;
	int r;

	for (unsigned int i = 0; i < THIN_LEAF_ENTRIES; i++)
		put_le32(blob + 4 * i, l->map[i]);
	r = store_stmt(s, "INSERT OR REPLACE INTO thin_leaf (pool, id, map) VALUES (?, ?, ?)",
		       &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, pool);
	sqlite3_bind_int64(st, 2, l->id);
	sqlite3_bind_blob(st, 3, blob, sizeof(blob), SQLITE_STATIC);
	return store_step_done(s, st);
}

int store_thin_leaf_get(struct store *s, int64_t pool, int64_t id,
			struct thin_leaf_rec *out)
{
	const unsigned char *blob;
	sqlite3_stmt *st;
	int rc, r;

	r = store_stmt(s, "SELECT map FROM thin_leaf WHERE pool = ? AND id = ?", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, pool);
	sqlite3_bind_int64(st, 2, id);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		r = store_error(s, rc);
	} else if (sqlite3_column_bytes(st, 0) != THIN_LEAF_ENTRIES * 4) {
		r = -EUCLEAN;
	} else {
		blob = sqlite3_column_blob(st, 0);
		out->id = id;
		for (unsigned int i = 0; i < THIN_LEAF_ENTRIES; i++)
			out->map[i] = get_le32(blob + 4 * i);
	}
	store_stmt_done(st);
	return r;
}

static int delete_page(struct store *s, sqlite3_stmt *st, int64_t pool, int64_t id)
{
	sqlite3_bind_int64(st, 1, pool);
	sqlite3_bind_int64(st, 2, id);
	return store_step_done(s, st);
}

int store_thin_dir_delete(struct store *s, int64_t pool, int64_t id)
{
	sqlite3_stmt *st;
	int r = store_stmt(s, "DELETE FROM thin_dir WHERE pool = ? AND id = ?", &st);

	return r ? r : delete_page(s, st, pool, id);
}

int store_thin_leaf_delete(struct store *s, int64_t pool, int64_t id)
{
	sqlite3_stmt *st;
	int r = store_stmt(s, "DELETE FROM thin_leaf WHERE pool = ? AND id = ?", &st);

	return r ? r : delete_page(s, st, pool, id);
}

static int id_row(sqlite3_stmt *st, void *rec)
{
	*(int64_t *)rec = sqlite3_column_int64(st, 0);
	return 0;
}

int store_thin_dir_ids(struct store *s, int64_t pool, int64_t **out, size_t *nr)
{
	sqlite3_stmt *st;
	int r = store_stmt(s, "SELECT id FROM thin_dir WHERE pool = ? ORDER BY id", &st);

	if (r)
		return r;
	sqlite3_bind_int64(st, 1, pool);
	return store_collect(s, st, sizeof(**out), id_row, (void **)out, nr);
}

int store_thin_leaf_ids(struct store *s, int64_t pool, int64_t **out, size_t *nr)
{
	sqlite3_stmt *st;
	int r = store_stmt(s, "SELECT id FROM thin_leaf WHERE pool = ? ORDER BY id", &st);

	if (r)
		return r;
	sqlite3_bind_int64(st, 1, pool);
	return store_collect(s, st, sizeof(**out), id_row, (void **)out, nr);
}

int store_thin_page_count(struct store *s, int64_t pool, uint64_t *dirs, uint64_t *leaves)
{
	int64_t n[2];
	int r = 0;

	for (int i = 0; i < 2 && !r; i++) {
		sqlite3_stmt *st;

		r = store_stmt(s, i ? "SELECT count(*) FROM thin_leaf WHERE pool = ?" :
				      "SELECT count(*) FROM thin_dir WHERE pool = ?", &st);
		if (r)
			return r;
		sqlite3_bind_int64(st, 1, pool);
		r = store_fetch(s, st, id_row, &n[i]);
	}
	if (!r) {
		*dirs = (uint64_t)n[0];
		*leaves = (uint64_t)n[1];
	}
	return r;
}

int store_thin_max_page(struct store *s, int64_t pool, int64_t *out)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "SELECT max(coalesce((SELECT max(id) FROM thin_dir WHERE pool = ?1), 0),"
			  " coalesce((SELECT max(id) FROM thin_leaf WHERE pool = ?1), 0))", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, pool);
	return store_fetch(s, st, id_row, out);
}

int store_thin_origin_put(struct store *s, const struct thin_origin_rec *o)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "INSERT OR REPLACE INTO thin_origin (volume, origin_volume, origin_path,"
			  " origin_size, origin_mtime_ns) VALUES (?, ?, ?, ?, ?)", &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, o->volume);
	if (o->origin_volume)
		sqlite3_bind_int64(st, 2, o->origin_volume);
	else
		sqlite3_bind_text(st, 3, o->origin_path, -1, SQLITE_STATIC);
	if (o->origin_size)
		sqlite3_bind_int64(st, 4, (sqlite3_int64)o->origin_size);
	if (o->origin_mtime_ns)
		sqlite3_bind_int64(st, 5, o->origin_mtime_ns);
	return store_step_done(s, st);
}

static int origin_row(sqlite3_stmt *st, void *rec)
{
	struct thin_origin_rec *o = rec;

	o->volume = sqlite3_column_int64(st, 0);
	o->origin_volume = sqlite3_column_int64(st, 1);
	store_column_text(st, 2, o->origin_path, sizeof(o->origin_path));
	o->origin_size = (uint64_t)sqlite3_column_int64(st, 3);	/* NULL reads 0 */
	o->origin_mtime_ns = sqlite3_column_int64(st, 4);
	return 0;
}

int store_thin_origin_list(struct store *s, struct thin_origin_rec **out, size_t *nr)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "SELECT volume, origin_volume, origin_path, origin_size, origin_mtime_ns"
			  " FROM thin_origin ORDER BY volume", &st);
	if (r)
		return r;
	return store_collect(s, st, sizeof(**out), origin_row, (void **)out, nr);
}
