/*
 * core/pool/pool.c: the base of the pool service, what every operation
 * shares: lookups by name and id, the admin lock, the store transaction
 * (pool_record), and publishing a change to memory once it is durable.
 *
 * It calls nothing of the service above it.  The shared operations
 * (pool_device.c, pool_volume.c, pool_check.c ...) and the kinds
 * (pool_linear.c, pool_switch.c, pool_thin.c ...) build on it, and the
 * life cycle (pool_lifecycle.c: open, reload, close) sits on top of them
 * all.  Where the base needs what differs between kinds it goes through
 * the volume's target type (target_type.h) and never names a kind.
 */
#include "pool_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device.h"
#include "log.h"
#include "names.h"
#include "rcu.h"
#include "size.h"
#include "space.h"
#include "thin_pool.h"
#include "volume.h"

int pool_fail(struct pool_error *err, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return r;
}

const char *pool_dir(const struct pool *p)
{
	return p->dir;
}

const struct fsid_user *pool_owner(const struct pool *p)
{
	return &p->owner;
}

/* ---- the admin lock --------------------------------------------------- */

void pool_admin_lock(struct pool *p)
{
	pthread_mutex_lock(&p->admin);
	atomic_store(&p->admin_tid, gettid());
}

void pool_admin_unlock(struct pool *p)
{
	char *layout = p->layout_unwritten;
	size_t len = p->layout_unwritten_len;
	uint64_t seq = p->layout_seq;

	pool_layout_archive_wait(p);	/* of a change that failed before its record */
	p->layout_unwritten = NULL;
	atomic_store(&p->admin_tid, 0);
	pthread_mutex_unlock(&p->admin);
	if (layout)
		pool_layout_flush(p, layout, len, seq);
}

pid_t pool_busy_thread(struct pool *p)
{
	pid_t tid = atomic_load(&p->admin_tid);

	return tid ? tid : atomic_load(&p->dev_lock_tid);
}

/* ---- lookups ---------------------------------------------------------- */

struct pool_volume *pool_volume_by_name(struct pool *p, const char *name)
{
	for (size_t i = 0; i < p->nr_vols; i++)
		if (!strcmp(p->vols[i]->rec.name, name))
			return p->vols[i];
	return NULL;
}

/* p->vols is kept by id: a binary search, since a thin pool's start looks up its pool once per volume. */
static int cmp_volume_id(const void *a, const void *b)
{
	int64_t x = (*(struct pool_volume *const *)a)->rec.id;
	int64_t y = (*(struct pool_volume *const *)b)->rec.id;

	return (x > y) - (x < y);
}

/* The volume of id @id in @sorted (by id, as p->vols is), or NULL.  O(log n). */
static struct pool_volume *find_by_id(struct pool_volume *const *sorted, size_t n, int64_t id)
{
	struct pool_volume key = { .rec.id = id }, *k = &key, *const *found;

	found = n ? bsearch(&k, sorted, n, sizeof(*sorted), cmp_volume_id) : NULL;
	return found ? *found : NULL;
}

struct pool_volume *pool_volume_by_id(struct pool *p, int64_t id)
{
	return find_by_id(p->vols, p->nr_vols, id);
}

struct pool_device *pool_device_by_name(struct pool *p, const char *name)
{
	for (size_t i = 0; i < p->nr_devs; i++)
		if (!strcmp(p->devs[i]->rec.name, name))
			return p->devs[i];
	return NULL;
}

struct pool_device *pool_device_by_id(struct pool *p, int64_t id)
{
	for (size_t i = 0; i < p->nr_devs; i++)
		if (p->devs[i]->rec.id == id)
			return p->devs[i];
	return NULL;
}

/* @t in a sentence: "a thin pool", "a linear volume" (@len >= 64). */
static const char *kind_phrase(const struct target_type *t, char *buf, size_t len)
{
	if (strcmp(t->noun, "volume"))
		snprintf(buf, len, "a %s", t->noun);
	else
		snprintf(buf, len, "a %s volume", t->words);
	return buf;
}

int pool_volume_get(struct pool *p, const char *name,
		    const struct target_type *kind, bool failed_ok,
		    struct pool_volume **out, struct pool_error *err)
{
	*out = NULL;
	if (pool_is_staging_name(name) && pool_volume_by_name(p, name))
		return pool_fail(err, -EBUSY, "'%s' is a receive under way or cut short: run the "
				 "receive again to go on, or 'mapperctl receive %s --abort'", name,
				 name + strlen(POOL_STAGING_PREFIX));
	return pool_volume_get_staged(p, name, kind, failed_ok, out, err);
}

int pool_volume_get_staged(struct pool *p, const char *name,
			   const struct target_type *kind, bool failed_ok,
			   struct pool_volume **out, struct pool_error *err)
{
	struct pool_volume *v = pool_volume_by_name(p, name);
	char is[64], wanted[64];

	*out = NULL;	/* set on every path: gcc -O3 cannot see that pool_fail() is non-zero */
	if (!v)
		return pool_fail(err, -ENOENT, "no volume '%s'", name);
	if (kind && v->type != kind)
		return pool_fail(err, -EINVAL, "volume '%s' is %s, not %s", name,
				 kind_phrase(v->type, is, sizeof(is)),
				 kind_phrase(kind, wanted, sizeof(wanted)));
	if (v->failure && !failed_ok)
		return pool_fail(err, -EIO, "volume '%s' is failed: %s", name, v->failure);
	*out = v;
	return 0;
}

const struct extent_rec *pool_extents_of(struct pool *p, int64_t volume,
					 size_t *nr)
{
	size_t i = 0, n = 0;

	while (i < p->nr_ext && p->ext[i].volume != volume)
		i++;
	while (i + n < p->nr_ext && p->ext[i + n].volume == volume)
		n++;
	*nr = n;
	return n ? &p->ext[i] : NULL;
}

static int push_device(struct pool_device **v, size_t *nr, struct pool_device *d)
{
	for (size_t i = 0; i < *nr; i++)
		if (v[i] == d)
			return 0;
	v[(*nr)++] = d;
	return 0;
}

int pool_devices_named(struct pool *p, char *const *names, size_t nr_names,
		       struct pool_device ***out, size_t *nr,
		       struct pool_error *err)
{
	struct pool_device **v;
	size_t n = 0;
	int r = 0;

	*out = NULL;
	*nr = 0;
	if (!nr_names)
		return 0;
	v = calloc(p->nr_devs + 1, sizeof(*v));
	if (!v)
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; !r && i < nr_names; i++) {
		char *list = strdup(names[i]), *save = NULL, *name;

		if (!list) {
			r = pool_fail(err, -ENOMEM, "out of memory");
			break;
		}
		if (!list[strspn(list, ",")])
			r = pool_fail(err, -EINVAL, "--on needs a device name");
		for (name = strtok_r(list, ",", &save); !r && name;
		     name = strtok_r(NULL, ",", &save)) {
			struct pool_device *d = pool_device_by_name(p, name);

			if (!d)
				r = pool_fail(err, -ENOENT, "no device '%s'", name);
			else if (!d->dev)
				r = pool_fail(err, -ENODEV, "device '%s' is failed: %s", name,
					      d->failure);
			else
				push_device(v, &n, d);
		}
		free(list);
	}
	if (r) {
		free(v);
		return r;
	}
	*out = v;
	*nr = n;
	return 0;
}

int pool_check_new_name(struct pool *p, const char *name, struct pool_error *err)
{
	if (!name_valid(name))
		return pool_fail(err, -EINVAL, "invalid name '%s': " NAME_RULES, name);
	if (pool_volume_by_name(p, name))
		return pool_fail(err, -EEXIST, "volume '%s' exists", name);
	return 0;
}

bool pool_is_staging_name(const char *name)
{
	return !strncmp(name, POOL_STAGING_PREFIX, strlen(POOL_STAGING_PREFIX));
}

int pool_check_new_name_as(struct pool *p, const char *name, bool staging,
			   struct pool_error *err)
{
	if (!staging)
		return pool_check_new_name(p, name, err);
	if (!pool_is_staging_name(name) || !name_valid(name + strlen(POOL_STAGING_PREFIX)) ||
	    strlen(name) > POOL_NAME_MAX)
		return pool_fail(err, -EINVAL, "invalid staging name '%s'", name);
	if (pool_volume_by_name(p, name))
		return pool_fail(err, -EEXIST, "volume '%s' exists", name);
	return 0;
}

void pool_report_line(void (*report)(void *, const char *), void *arg, const char *fmt, ...)
{
	char line[POOL_ERROR_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	report(arg, line);
}

/* ---- the store -------------------------------------------------------- */

int pool_store_fail(struct pool_error *err, int r, const char *doing)
{
	switch (r) {
	case -EBUSY:
		return pool_fail(err, r, "cannot %s: the pool database is locked by another process; nothing changed",
				 doing);
	case -ENOSPC:
		return pool_fail(err, r, "cannot %s: the file system of the pool database is full; nothing changed",
				 doing);
	case -EROFS:
		return pool_fail(err, r, "cannot %s: the pool database is on a read-only file system",
				 doing);
	case -EUCLEAN:
		return pool_fail(err, r, "cannot %s: the pool database is damaged", doing);
	case -ECANCELED:
		return pool_fail(err, r, "cannot %s: SQLite aborted the change to the pool "
				 "database; nothing changed, try again", doing);
	default:
		return pool_fail(err, r, "cannot %s: %s", doing, strerror(-r));
	}
}

/* One transaction: @record, and with @numbered the next layout number. */
static int transaction(struct pool *p, const char *doing,
		       int (*record)(struct pool *p, void *arg), void *arg, bool numbered,
		       struct pool_error *err)
{
	const struct pool_meta_ops *m = p->meta->ops;
	int r;

	if (!numbered)
		pool_layout_forget(p);
	r = m->begin(p->meta);
	if (!r)
		r = record(p, arg);
	if (!r && numbered)
		r = m->layout_seq_set(p->meta, p->layout_seq + 1);
	if (!r)
		r = m->commit(p->meta);
	if (r) {
		m->rollback(p->meta);
		return pool_store_fail(err, r, doing);
	}
	return 0;
}

int pool_record(struct pool *p, const char *doing,
		int (*record)(struct pool *p, void *arg), void *arg,
		struct pool_error *err)
{
	int r;

	if (p->layout_frozen)		/* recover's: nothing kept until it succeeded */
		return transaction(p, doing, record, arg, false, err);
	pool_layout_before(p);
	r = transaction(p, doing, record, arg, true, err);
	if (!r)
		pool_layout_after(p);
	else			/* what failed may have been the commit */
		pool_layout_forget(p);
	return r;
}

int pool_record_unarchived(struct pool *p, const char *doing,
			   int (*record)(struct pool *p, void *arg), void *arg,
			   struct pool_error *err)
{
	return transaction(p, doing, record, arg, false, err);
}

/* ---- publishing ------------------------------------------------------- */

static int grow(void **v, size_t *cap, size_t want, size_t size)
{
	void *n;

	if (want <= *cap)
		return 0;
	want = want < 16 ? 16 : want * 2;
	n = realloc(*v, want * size);
	if (!n)
		return -ENOMEM;
	*v = n;
	*cap = want;
	return 0;
}

int pool_reserve(struct pool *p, size_t vols, size_t ext)
{
	int r = grow((void **)&p->vols, &p->cap_vols, p->nr_vols + vols, sizeof(*p->vols));

	return r ? r : grow((void **)&p->ext, &p->cap_ext, p->nr_ext + ext, sizeof(*p->ext));
}

void pool_volume_publish(struct pool *p, struct pool_volume *v)
{
	pool_volumes_publish(p, &v, 1);
}

/* Into p->vols, kept by id: O(1) for an id past every other, as a new row's is. */
static void insert_by_id(struct pool *p, struct pool_volume *v)
{
	size_t i = p->nr_vols;

	while (i && p->vols[i - 1]->rec.id > v->rec.id) {
		p->vols[i] = p->vols[i - 1];
		i--;
	}
	p->vols[i] = v;
	p->nr_vols++;
}

void pool_volumes_publish(struct pool *p, struct pool_volume *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		insert_by_id(p, v[i]);
	if (pool_volumes_show(p, v, n))
		for (size_t i = 0; i < n; i++)
			if (v[i]->served && !v[i]->published && !v[i]->rec.inactive)
				pool_volume_failed(v[i], "out of memory while publishing it");
	pool_space_update(p);		/* what they use without owning it counts now */
}

static bool showable(const struct pool_volume *v)
{
	return v->served && !v->published && !v->rec.inactive;
}

int pool_volume_show(struct pool *p, struct pool_volume *v)
{
	return showable(v) ? pool_volumes_show(p, &v, 1) : 0;
}

int pool_volumes_show(struct pool *p, struct pool_volume *const *v, size_t n)
{
	struct volume **add = calloc(n + 1, sizeof(*add));
	size_t k = 0;
	int r;

	if (!add)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (showable(v[i]))
			add[k++] = v[i]->served;
	r = volset_add_many(&p->served, add, k);
	for (size_t i = 0; !r && i < n; i++)
		if (showable(v[i]))
			v[i]->published = true;
	free(add);
	return r;
}

void pool_volume_hide(struct pool *p, struct pool_volume *v)
{
	if (!v->published)
		return;
	volset_remove(&p->served, v->served);	/* waits for readers */
	v->published = false;
	pool_stale_name(p, v->rec.name);
}

void pool_volumes_hide(struct pool *p, struct pool_volume *const *v, size_t n)
{
	struct volume **gone = malloc((n + 1) * sizeof(*gone));
	size_t k = 0;

	for (size_t i = 0; gone && i < n; i++)
		if (v[i]->published)
			gone[k++] = v[i]->served;
	if (!gone || volset_remove_many(&p->served, gone, k)) {
		for (size_t i = 0; i < n; i++)	/* out of memory: one by one */
			pool_volume_hide(p, v[i]);
		free(gone);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (!v[i]->published)
			continue;
		v[i]->published = false;
		pool_stale_name(p, v[i]->rec.name);
	}
	free(gone);
}

void pool_volume_recorded(struct pool_volume *v, const struct volume_rec *rec)
{
	v->rec.id = rec->id;
	v->rec.created = rec->created;
	v->rec.modified = rec->modified;
	if (!v->served)
		return;
	v->served->id = rec->id;
	v->served->created = rec->created;
	atomic_store(&v->served->modified, rec->modified ? rec->modified : rec->created);
	atomic_store(&v->served->read_only, v->rec.read_only);
}

static int cmp_extent(const void *a, const void *b)
{
	const struct extent_rec *x = a, *y = b;

	if (x->volume != y->volume)
		return (x->volume > y->volume) - (x->volume < y->volume);
	return (x->seq > y->seq) - (x->seq < y->seq);
}

void pool_extents_publish(struct pool *p, const struct extent_rec *e, size_t nr)
{
	if (nr) {	/* a volume with no extents (a switch on given offsets) */
		memcpy(&p->ext[p->nr_ext], e, nr * sizeof(*e));
		p->nr_ext += nr;
		qsort(p->ext, p->nr_ext, sizeof(*p->ext), cmp_extent);
	}
	pool_space_update(p);
}

void pool_extents_unpublish(struct pool *p, int64_t volume, uint32_t first, uint32_t last)
{
	size_t j = 0;

	for (size_t i = 0; i < p->nr_ext; i++)
		if (p->ext[i].volume != volume || p->ext[i].seq < first || p->ext[i].seq > last)
			p->ext[j++] = p->ext[i];
	p->nr_ext = j;
	pool_space_update(p);
}

void pool_volume_forget(struct pool *p, struct pool_volume *v)
{
	size_t i = 0, j = 0;

	while (i < p->nr_vols && p->vols[i] != v)
		i++;
	if (i < p->nr_vols) {
		memmove(&p->vols[i], &p->vols[i + 1], (p->nr_vols - i - 1) * sizeof(*p->vols));
		p->nr_vols--;
	}
	for (i = 0; i < p->nr_ext; i++)
		if (p->ext[i].volume != v->rec.id)
			p->ext[j++] = p->ext[i];
	p->nr_ext = j;
	pool_volume_free(p, v);
	pool_space_update(p);
}

/* Is @id the id of one of @sorted (by id)? */
static bool among(struct pool_volume *const *sorted, size_t n, int64_t id)
{
	return find_by_id(sorted, n, id) != NULL;
}

void pool_volumes_forget(struct pool *p, struct pool_volume *const *v, size_t n)
{
	struct pool_volume **sorted = malloc((n + 1) * sizeof(*sorted));
	size_t j = 0;

	if (!sorted) {		/* out of memory: one by one, O(V) each */
		for (size_t i = 0; i < n; i++)
			pool_volume_forget(p, v[i]);
		return;
	}
	memcpy(sorted, v, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_volume_id);
	pool_volumes_hide(p, v, n);
	for (size_t i = 0; i < p->nr_vols; i++)
		if (!among(sorted, n, p->vols[i]->rec.id))
			p->vols[j++] = p->vols[i];
	p->nr_vols = j;
	j = 0;
	for (size_t i = 0; i < p->nr_ext; i++)
		if (!among(sorted, n, p->ext[i].volume))
			p->ext[j++] = p->ext[i];
	p->nr_ext = j;
	for (size_t i = 0; i < n; i++)
		pool_volume_free(p, v[i]);
	free(sorted);
	pool_space_update(p);
}

struct used_list {
	struct extent_rec *v;
	size_t nr, cap;
	int r;
};

static void used_push(void *arg, const struct extent_rec *range)
{
	struct used_list *u = arg;

	if (u->r)
		return;
	if (u->nr == u->cap) {
		size_t cap = u->cap ? 2 * u->cap : 16;
		struct extent_rec *v = realloc(u->v, cap * sizeof(*v));

		if (!v) {
			u->r = -ENOMEM;
			return;
		}
		u->v = v;
		u->cap = cap;
	}
	u->v[u->nr++] = *range;
}

int pool_used(struct pool *p, const struct extent_rec *extra, size_t nr_extra,
	      struct extent_rec **out, size_t *nr)
{
	struct used_list u = { 0 };

	for (size_t i = 0; i < p->nr_ext; i++)
		used_push(&u, &p->ext[i]);
	for (size_t i = 0; i < nr_extra; i++)
		used_push(&u, &extra[i]);
	for (size_t i = 0; i < p->nr_vols; i++)
		p->vols[i]->type->placed(p, p->vols[i], used_push, &u);
	if (!u.r && !u.v && !(u.v = malloc(sizeof(*u.v))))
		u.r = -ENOMEM;
	if (u.r) {
		free(u.v);
		return u.r;
	}
	*out = u.v;
	*nr = u.nr;
	return 0;
}

void pool_space_update(struct pool *p)
{
	uint64_t total = 0, free_bytes = 0;
	struct extent_rec *used = NULL;	/* gcc -O3 cannot see pool_used() sets both */
	size_t nr = 0;

	if (pool_used(p, NULL, 0, &used, &nr))
		return;		/* out of memory: the figures stay as they were */
	for (size_t i = 0; i < p->nr_devs; i++) {
		if (p->devs[i]->rec.size > DEVICE_DATA_OFFSET)
			total += p->devs[i]->rec.size - DEVICE_DATA_OFFSET;
		free_bytes += space_free_bytes(used, nr, &p->devs[i]->rec, UINT64_MAX);
	}
	free(used);
	atomic_store(&p->space_total, total);
	atomic_store(&p->space_free, free_bytes);
}


/* ---- volumes ---------------------------------------------------------- */

struct pool_volume *pool_volume_new(const struct volume_rec *rec,
				    const struct target_type *type)
{
	struct pool_volume *v = calloc(1, sizeof(*v));

	if (v) {
		v->rec = *rec;
		v->type = type;
	}
	return v;
}

void pool_volume_free(struct pool *p, struct pool_volume *v)
{
	if (!v)
		return;
	pool_volume_hide(p, v);
	if (v->served)
		volume_destroy(v->served);
	v->type->release(p, v);
	free(v->failure);
	tags_release(&v->tags);
	free(v);
}

void pool_volume_failed(struct pool_volume *v, const char *why)
{
	free(v->failure);
	v->failure = strdup(why);
	log_info("volume '%s' is not served: %s", v->rec.name, why);
}

void pool_volume_broken(struct pool_volume *v, const char *why)
{
	pool_volume_failed(v, why);
	v->broken = true;
}

int pool_volume_serve(struct pool_volume *v, struct target *t)
{
	int r = volume_create(v->rec.id, v->rec.name, v->rec.size, t, &v->served);

	if (r)
		return r;
	atomic_store(&v->served->read_only, v->rec.read_only);
	v->served->created = v->rec.created;
	atomic_store(&v->served->modified, v->rec.modified ? v->rec.modified : v->rec.created);
	return 0;
}

/* ---- operations every kind shares ------------------------------------- */

static int record_deletion(struct pool *p, void *arg)
{
	const struct pool_volume *v = arg;

	return p->meta->ops->volume_delete(p->meta, v->rec.id);
}

int pool_remove_records(struct pool *p, struct pool_volume *v,
			struct pool_error *err)
{
	int r;

	if (v->served && volume_retire(v->served))
		return pool_fail(err, -EBUSY, "volume '%s' is busy (open)", v->rec.name);
	r = pool_record(p, "delete the volume", record_deletion, v, err);
	if (r) {
		if (v->served)
			volume_unretire(v->served);
		return r;
	}
	pool_volume_forget(p, v);
	return 0;
}

void pool_set_mount(struct pool *p, dev_t mount_dev)
{
	p->mount_dev = mount_dev;
}

/* ---- the daemon's view ------------------------------------------------ */

struct volset_array *pool_served(struct pool *p)
{
	return volset_read(&p->served);
}

void pool_space(struct pool *p, struct pool_space *out)
{
	struct pool_thins *t;

	out->total = atomic_load(&p->space_total);
	out->free = atomic_load(&p->space_free);
	out->block_size = 4096;
	rcu_read_begin();
	t = rcu_load(p->thins);
	for (size_t i = 0; t && i < t->nr; i++) {
		struct thin_pool_usage u;

		thin_pool_usage(t->v[i], &u);
		out->free += (u.nr_free + u.nr_pending) * u.block_size;
		if (out->block_size == 4096 || u.block_size < out->block_size)
			out->block_size = u.block_size;
	}
	rcu_read_end();
}

