/*
 * meta/store_stripe.c: striped linear volumes in the store.
 *
 * A striped volume is a volume row of kind "linear", its extents (the
 * stripe in each seq's high bits: records.h), and one stripe row giving
 * the number of stripes and the chunk size.  The row cascades from the
 * volume; a linear volume without one is not striped, which is every
 * linear volume made before version 9.
 */
#include "store_int.h"

#include <errno.h>

int store_stripe_insert(struct store *s, const struct stripe_rec *rec)
{
	sqlite3_stmt *st;
	int rc, r;

	r = store_stmt(s, "INSERT INTO stripe (volume, stripes, stripe_size) VALUES (?, ?, ?)",
		       &st);
	if (r)
		return r;
	sqlite3_bind_int64(st, 1, rec->volume);
	sqlite3_bind_int64(st, 2, rec->stripes);
	sqlite3_bind_int64(st, 3, rec->stripe_size);
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
		r = -ENOENT;		/* no such volume */
	else
		r = rc == SQLITE_DONE ? 0 : store_error(s, rc);
	store_stmt_done(st);
	return r;
}

static int stripe_row(sqlite3_stmt *st, void *rec)
{
	struct stripe_rec *r = rec;

	r->volume = sqlite3_column_int64(st, 0);
	r->stripes = (uint32_t)sqlite3_column_int64(st, 1);
	r->stripe_size = (uint32_t)sqlite3_column_int64(st, 2);
	return 0;
}

int store_stripe_list(struct store *s, struct stripe_rec **out, size_t *nr)
{
	sqlite3_stmt *st;
	int r;

	r = store_stmt(s, "SELECT volume, stripes, stripe_size FROM stripe ORDER BY volume", &st);
	if (r)
		return r;
	return store_collect(s, st, sizeof(**out), stripe_row, (void **)out, nr);
}
