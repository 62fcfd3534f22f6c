/*
 * core/pool/pool_volume.c: the life cycle every kind of volume shares, in the
 * pool service: rename, read-only, the consent to shrink by a truncate,
 * activation (LVM's lvrename, lvchange -p and -a), a volume file's
 * truncate, and the last-write times that become the files' mtimes.
 *
 * Each is the service's usual shape on the volume's row: validate
 * against memory, record the row in one transaction, then show it.  None
 * stops I/O: a rename swaps the served volume's name under RCU (open
 * files keep their volume, which the kernel found by inode); read-only
 * is a flag the write path loads, so writes in flight finish and later
 * ones fail with EROFS; deactivating takes the file out of the mount
 * (refused while it is open) but keeps the volume's target, so an
 * inactive thin volume still counts its blocks in its pool, can be
 * snapshotted, rolled back to, or read as an external origin.
 *
 * Remove, extend and reduce are here too, as the checks every kind
 * shares (no volume reads the one removed or shrunk as its origin; a new
 * size is larger, or smaller; nobody has a volume open while it shrinks)
 * around the kind's own hook, which does the work.
 *
 * A truncate that shrinks a volume whose administrator allowed it runs
 * the same hook, with one difference: the truncating file has the
 * volume open, so it is held alone but for that file (and no other may
 * be open).  Requests in flight are then the truncating program's own:
 * the kernel keeps a write it has under way and the truncate apart (the
 * inode's lock; asynchronous direct I/O aside), and a read that raced
 * the truncate past the new end fails (volume.c: the size drops before
 * the target stops covering it).
 */
#include "pool_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "size.h"
#include "volume.h"

static int record_row(struct pool *p, void *arg)
{
	return p->meta->ops->volume_update(p->meta, arg);
}

/* A volume that is a file in the mount (not a thin pool). */
static int get_served_kind(struct pool *p, const char *name, bool failed_ok,
			   struct pool_volume **out, struct pool_error *err)
{
	int r = pool_volume_get(p, name, NULL, failed_ok, out, err);

	if (!r && !(*out)->type->served)
		r = pool_fail(err, -EINVAL, "'%s' is a %s, not a volume", name, (*out)->type->words);
	return r;
}

int pool_rename(struct pool *p, const char *name, const char *new_name,
		struct pool_error *err)
{
	struct volume_rec row;
	struct pool_volume *v;
	char *served_name = NULL;
	int r;

	pool_admin_lock(p);
	r = pool_volume_get(p, name, NULL, true, &v, err);
	if (!r)
		r = pool_export_refuse(p, v, err);
	if (!r)
		r = pool_check_new_name(p, new_name, err);
	if (r)
		goto out;
	row = v->rec;
	snprintf(row.name, sizeof(row.name), "%s", new_name);
	if (v->served && !(served_name = strdup(new_name))) {
		r = pool_fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	r = pool_record(p, "record the new name", record_row, &row, err);
	if (r)
		goto out;
	if (v->published)
		pool_stale_name(p, v->rec.name);
	v->rec = row;
	if (v->served)
		volume_rename(v->served, served_name);
	served_name = NULL;
	log_info("renamed volume '%s' to '%s'", name, new_name);
out:
	free(served_name);
	pool_admin_unlock(p);
	return r;
}

/*
 * The access, and a volume made writable forgets the identity it was
 * received as (pool_thin_identity): what it holds may change from now
 * on, so no stream may take it as the sender's snapshot any more.
 */
static int record_access(struct pool *p, void *arg)
{
	const struct volume_rec *row = arg;
	int r = p->meta->ops->volume_update(p->meta, row);

	return r || row->read_only ? r : p->meta->ops->received_drop(p->meta, row->id);
}

int pool_set_read_only(struct pool *p, const char *name, bool read_only,
		       struct pool_error *err)
{
	struct volume_rec row;
	struct pool_volume *v;
	int r;

	pool_admin_lock(p);
	r = get_served_kind(p, name, true, &v, err);
	if (r || v->rec.read_only == read_only)
		goto out;
	row = v->rec;
	row.read_only = read_only;
	r = pool_record(p, "record the access", record_access, &row, err);
	if (r)
		goto out;
	v->rec = row;
	if (v->served)
		atomic_store(&v->served->read_only, read_only);
	pool_stale_file(p, v->rec.id);		/* its mode */
	log_info("volume '%s' is %s now", name, read_only ? "read-only" : "writable");
out:
	pool_admin_unlock(p);
	return r;
}

int pool_set_allow_shrink(struct pool *p, const char *name, bool allow,
			  struct pool_error *err)
{
	struct volume_rec row;
	struct pool_volume *v;
	int r;

	pool_admin_lock(p);
	r = get_served_kind(p, name, true, &v, err);
	if (!r && allow && pool_volume_legs(p, v) > 1)	/* else a consent every truncate refuses */
		r = pool_fail(err, -EOPNOTSUPP, "volume '%s' is a mirror: a truncate cannot shrink "
			      "it; " POOL_MIRROR_SHRINK_INSTEAD, name, pool_volume_legs(p, v) - 1);
	if (r || v->rec.allow_shrink == allow)
		goto out;
	row = v->rec;
	row.allow_shrink = allow;
	r = pool_record(p, "record the consent to shrink", record_row, &row, err);
	if (r)
		goto out;
	v->rec = row;
	log_info("a truncate of volume '%s' %s now", name,
		 allow ? "may shrink it" : "only grows it");
out:
	pool_admin_unlock(p);
	return r;
}

int pool_activate(struct pool *p, const char *name, bool active, struct pool_error *err)
{
	struct volume_rec row;
	struct pool_volume *v;
	bool retired = false;
	int r;

	pool_admin_lock(p);
	r = get_served_kind(p, name, false, &v, err);
	if (r || v->rec.inactive == !active)
		goto out;
	if (!active && (r = pool_export_refuse(p, v, err)))
		goto out;
	if (!active && v->served) {
		if (volume_retire(v->served)) {
			r = pool_fail(err, -EBUSY, "volume '%s' is busy (open)", name);
			goto out;
		}
		retired = true;
	}
	row = v->rec;
	row.inactive = !active;
	r = pool_record(p, active ? "record the activation" : "record the deactivation",
			record_row, &row, err);
	if (!r) {
		v->rec = row;
		if (!active)
			pool_volume_hide(p, v);
		else if (pool_volume_show(p, v))
			pool_volume_failed(v, "out of memory while activating it");
		log_info("%s volume '%s'", active ? "activated" : "deactivated", name);
	}
	if (retired)
		volume_unretire(v->served);
out:
	pool_admin_unlock(p);
	return r;
}

/* The volumes whose last write is newer than their row says. */
static int record_modified(struct pool *p, void *arg)
{
	int r = 0;

	(void)arg;
	for (size_t i = 0; !r && i < p->nr_vols; i++) {
		struct pool_volume *v = p->vols[i];
		int64_t t = v->served ? atomic_load(&v->served->modified) : 0;
		struct volume_rec row = v->rec;

		if (!t || t == (v->rec.modified ? v->rec.modified : v->rec.created))
			continue;
		row.modified = t;
		r = p->meta->ops->volume_update(p->meta, &row);
	}
	return r;
}

static bool times_changed(struct pool *p)
{
	for (size_t i = 0; i < p->nr_vols; i++) {
		struct pool_volume *v = p->vols[i];
		int64_t t = v->served ? atomic_load(&v->served->modified) : 0;

		if (t && t != (v->rec.modified ? v->rec.modified : v->rec.created))
			return true;
	}
	return false;
}

void pool_record_times(struct pool *p)
{
	struct pool_error err;

	pool_admin_lock(p);
	if (!times_changed(p)) {
		pool_admin_unlock(p);
		return;
	}
	if (pool_record_unarchived(p, "record when volumes were last written", record_modified,
				   NULL, &err))
		log_warn("%s", err.msg);
	else
		for (size_t i = 0; i < p->nr_vols; i++)
			if (p->vols[i]->served)
				p->vols[i]->rec.modified = atomic_load(&p->vols[i]->served->modified);
	pool_admin_unlock(p);
}

/* ---- remove, extend and reduce: the kind does the work ----------------- */

/* The thin volume that reads @v as its external origin, or NULL. */
static struct pool_volume *origin_user(struct pool *p, const struct pool_volume *v)
{
	for (size_t i = 0; i < p->nr_vols; i++) {
		struct pool_volume *u = p->vols[i];

		if (u->type == &thin_type && u->thin.origin &&
		    u->thin.origin->origin_volume == v->rec.id)
			return u;
	}
	return NULL;
}

/* pool_remove, of a staging volume too if @staging. */
static int remove_named(struct pool *p, const char *name, bool staging, struct pool_error *err)
{
	struct pool_volume *v, *user;
	char vname[POOL_NAME_MAX + 1];
	int r;

	pool_admin_lock(p);
	if (staging)
		r = pool_volume_get_staged(p, name, NULL, true, &v, err);
	else
		r = pool_volume_get(p, name, NULL, true, &v, err);
	if (!r) {
		user = origin_user(p, v);
		if (user)
			r = pool_fail(err, -EBUSY, "volume '%s' is the origin of thin volume '%s'",
				      name, user->rec.name);
	}
	if (!r)
		r = pool_export_refuse(p, v, err);
	if (!r) {
		snprintf(vname, sizeof(vname), "%s", v->rec.name);
		r = v->type->remove(p, v, err);
		if (!r)
			log_info("removed volume '%s'", vname);
	}
	pool_admin_unlock(p);
	return r;
}

int pool_remove(struct pool *p, const char *name, struct pool_error *err)
{
	return remove_named(p, name, false, err);
}

int pool_remove_staging(struct pool *p, const char *name, struct pool_error *err)
{
	return remove_named(p, name, true, err);
}

/* Grows @v, found by its caller.  Admin lock held. */
static int extend_volume(struct pool *p, struct pool_volume *v, uint64_t size,
			 char *const *on, size_t nr_on, struct volume_rec *out,
			 struct pool_error *err)
{
	char cur[SIZE_STR_LEN];
	int r = 0;

	if (size <= v->rec.size)
		r = pool_fail(err, -EINVAL, "new size must be larger than %s",
			      format_size(v->rec.size, cur));
	if (!r)
		r = v->type->extend(p, v, size, on, nr_on, err);
	if (!r) {
		if (out)
			*out = v->rec;
		log_info("extended volume '%s' to %s", v->rec.name, format_size(v->rec.size, cur));
	}
	return r;
}

int pool_extend(struct pool *p, const char *name, uint64_t size,
		char *const *on, size_t nr_on, struct volume_rec *out,
		struct pool_error *err)
{
	struct pool_volume *v;
	int r;

	pool_admin_lock(p);
	r = pool_volume_get(p, name, NULL, false, &v, err);
	if (!r)
		r = extend_volume(p, v, size, on, nr_on, out, err);
	pool_admin_unlock(p);
	return r;
}

/* Refuses shrinking @v to @size for what every kind shares. */
static int check_reduce(struct pool *p, struct pool_volume *v, uint64_t size,
			struct pool_error *err)
{
	struct pool_volume *user = origin_user(p, v);
	char cur[SIZE_STR_LEN];

	if (!size || size >= v->rec.size)
		return pool_fail(err, -EINVAL, "the new size must be smaller than %s and larger than 0",
				 format_size(v->rec.size, cur));
	if (size % 4096)
		return pool_fail(err, -EINVAL, "the new size is not a multiple of 4 KiB");
	if (user)
		return pool_fail(err, -EBUSY, "volume '%s' is the origin of thin volume '%s'",
				 v->rec.name, user->rec.name);
	if (v->rec.read_only)
		return pool_fail(err, -EROFS, "volume '%s' is read-only (see 'mapperctl set --read-write')",
				 v->rec.name);
	return 0;
}

/* Shrinks @v, found by its caller.  Admin lock held. */
static int reduce_volume(struct pool *p, struct pool_volume *v, uint64_t size,
			 struct volume_rec *out, struct pool_error *err)
{
	char cur[SIZE_STR_LEN];
	int r = v->type->served ? check_reduce(p, v, size, err) : 0;

	if (r)
		return r;
	if (!v->served)		/* a thin pool: its kind refuses */
		return v->type->reduce(p, v, size, err);
	/* Nobody reads or writes it meanwhile, nor opens it. */
	if (volume_hold_alone(v->served))
		return pool_fail(err, -EBUSY, "volume '%s' is busy (open)", v->rec.name);
	r = v->type->reduce(p, v, size, err);
	volume_unhold_alone(v->served);
	if (!r) {
		if (out)
			*out = v->rec;
		log_info("reduced volume '%s' to %s", v->rec.name, format_size(v->rec.size, cur));
	}
	return r;
}

int pool_reduce(struct pool *p, const char *name, uint64_t size, struct volume_rec *out,
		struct pool_error *err)
{
	struct pool_volume *v;
	int r;

	pool_admin_lock(p);
	r = pool_volume_get(p, name, NULL, false, &v, err);
	if (!r)
		r = reduce_volume(p, v, size, out, err);
	pool_admin_unlock(p);
	return r;
}

int pool_resize_staging(struct pool *p, const char *name, uint64_t size,
			struct pool_error *err)
{
	struct pool_volume *v;
	int r;

	pool_admin_lock(p);
	r = pool_volume_get_staged(p, name, NULL, false, &v, err);
	if (!r && size > v->rec.size)
		r = extend_volume(p, v, size, NULL, 0, NULL, err);
	else if (!r && size < v->rec.size)
		r = reduce_volume(p, v, size, NULL, err);
	pool_admin_unlock(p);
	return r;
}

/* ---- a volume file's truncate ------------------------------------------ */

/*
 * Refuses a size that is not whole stripe rows of striped @v, to grow or
 * to shrink: a truncate gets the size it asked for, or nothing, where
 * extend and reduce round up to whole rows and say so.
 */
static int check_truncate_rows(const struct pool_volume *v, uint64_t size,
			       struct pool_error *err)
{
	char row[SIZE_STR_LEN], chunk[SIZE_STR_LEN];
	uint64_t row_bytes;

	if (v->type != &striped_type)
		return 0;
	row_bytes = (uint64_t)v->stripe.stripes * v->stripe.stripe_size;
	if (size % row_bytes)
		return pool_fail(err, -EINVAL, "volume '%s' is striped: a truncate takes it to whole "
				 "rows of %s (%u stripes x %s) only", v->rec.name,
				 format_size(row_bytes, row), v->stripe.stripes,
				 format_size(v->stripe.stripe_size, chunk));
	return 0;
}

/*
 * Refuses what a truncate cannot shrink, though reduce may, or would do
 * otherwise: a truncate gets the size it asked for, or nothing.
 */
static int check_truncate_shrink(struct pool *p, struct pool_volume *v, uint64_t size,
				 struct pool_error *err)
{
	if (pool_volume_legs(p, v) > 1)	/* set refuses the consent; an old record has it */
		return pool_fail(err, -EOPNOTSUPP, "volume '%s' is a mirror: a truncate cannot shrink "
				 "it; " POOL_MIRROR_SHRINK_INSTEAD, v->rec.name,
				 pool_volume_legs(p, v) - 1);
	if (pool_move_source_of(p, v) >= 0)
		return pool_fail(err, -EBUSY, "volume '%s' is being moved: a truncate can shrink it once the move is done",
				 v->rec.name);
	return check_truncate_rows(v, size, err);
}

/*
 * Makes @err's message start with "volume 'NAME'", as the daemon's other
 * log lines about a volume do: the checks shared with reduce and extend
 * leave out the name their command line gave.
 */
static void name_first(const struct pool_volume *v, struct pool_error *err)
{
	char head[POOL_NAME_MAX + 16], msg[POOL_ERROR_LEN];
	int n = snprintf(head, sizeof(head), "volume '%s'", v->rec.name);

	if (!strncmp(err->msg, head, (size_t)n))
		return;
	memcpy(msg, err->msg, sizeof(msg));
	if (snprintf(err->msg, sizeof(err->msg), "%s: %s", head, msg) >= (int)sizeof(err->msg))
		memcpy(err->msg + sizeof(err->msg) - 4, "...", 4);
}

/* Grows @v to exactly @size for a truncate of its file, as pool_extend does. */
static int truncate_grow(struct pool *p, struct pool_volume *v, uint64_t size,
			 struct pool_error *err)
{
	int r = check_truncate_rows(v, size, err);

	return r ? r : v->type->extend(p, v, size, NULL, 0, err);
}

/*
 * Shrinks @v to @size for a truncate of its file, @holds of its holders
 * the truncate's own, as pool_reduce does.
 */
static int truncate_shrink(struct pool *p, struct pool_volume *v, uint64_t size, int holds,
			   struct pool_error *err)
{
	int r = check_reduce(p, v, size, err);

	if (!r)
		r = check_truncate_shrink(p, v, size, err);
	if (r)
		return r;
	/* No other file has it open, nor opens it meanwhile. */
	if (volume_hold_alone_with(v->served, holds))
		return pool_fail(err, -EBUSY, "volume '%s' is open elsewhere: a truncate shrinks it only from its one open file",
				 v->rec.name);
	r = v->type->reduce(p, v, size, err);
	volume_unhold_alone(v->served);
	return r;
}

int pool_truncate(struct pool *p, int64_t id, uint64_t size, int holds,
		  struct pool_error *err)
{
	char cur[SIZE_STR_LEN];
	struct pool_volume *v;
	const char *done = "extended";
	int r = 0;

	pool_admin_lock(p);
	v = pool_volume_by_id(p, id);
	if (!v || !v->published) {
		r = pool_fail(err, -ENOENT, "no volume %lld in the mount", (long long)id);
		goto out;
	}
	if (size == v->rec.size)
		goto out;
	/* Not to shrink, and it would cut off only zeros: the volume keeps them. */
	if (size < v->rec.size && !v->rec.allow_shrink &&
	    atomic_load(&v->served->zeros_from) <= size)
		goto out;
	if (size < v->rec.size)
		done = "reduced";
	if (v->rec.read_only)
		r = pool_fail(err, -EROFS, "volume '%s' is read-only", v->rec.name);
	else if (size > v->rec.size)
		r = truncate_grow(p, v, size, err);
	else if (v->rec.allow_shrink)
		r = truncate_shrink(p, v, size, holds, err);
	else
		r = pool_fail(err, -EPERM, "volume '%s' cannot shrink below %s by a truncate unless allowed ('mapperctl set %s --allow-shrink on'); 'mapperctl reduce' shrinks a closed volume",
			      v->rec.name, format_size(v->rec.size, cur), v->rec.name);
	if (!r)
		log_info("%s volume '%s' to %s (truncate of its file)", done, v->rec.name,
			 format_size(size, cur));
	else
		name_first(v, err);
out:
	pool_admin_unlock(p);
	return r;
}
