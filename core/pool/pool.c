/*
 * core/pool.c: the pool service's life cycle and the pieces every
 * operation shares: lookups, the store transaction, publishing.
 *
 * Opening builds the pool from the store in the order the volumes need
 * each other: raw devices first, then each kind in its type's build order
 * (thin pools, then linear and switch volumes, then thin volumes, whose
 * external origins may be any of those).  Whatever fails is kept, failed,
 * with its reason; nothing is deleted because something else failed.
 */
#include "pool_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device.h"
#include "label.h"
#include "log.h"
#include "names.h"
#include "proc.h"
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

/* Writes "PID WHO" in the lock file, for pool_lock_holder(); best effort. */
static void note_holder(int fd, const char *who)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "%d %s\n", (int)getpid(), who);

	if (ftruncate(fd, 0) == 0 && pwrite(fd, line, (size_t)n, 0) != n)
		log_debug("cannot note the pool lock's holder: %s", strerror(errno));
}

int pool_lock(const char *dir, const char *who)
{
	char path[PATH_MAX];
	bool writable = true;
	int fd, r;

	if (snprintf(path, sizeof(path), "%s/lock", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == EROFS) {	/* a read-only pool: reading it is fine */
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		writable = false;
	}
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		r = errno == EWOULDBLOCK ? -EBUSY : -errno;
		close(fd);
		return r;
	}
	if (writable)
		note_holder(fd, who);
	return fd;
}

pid_t pool_lock_holder(const char *dir, char *buf, size_t len)
{
	char path[PATH_MAX], line[128] = "", comm[64], *end;
	const char *who = NULL;
	struct stat st;
	pid_t pid = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/lock", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && fstat(fd, &st) == 0)
		pid = proc_flock_holder(&st);
	/* What the file says counts only if the holder wrote it (not the last one). */
	if (fd >= 0 && pid && pread(fd, line, sizeof(line) - 1, 0) > 0 &&
	    strtol(line, &end, 10) == pid && *end == ' ' && end[1] != '\n') {
		line[strcspn(line, "\n")] = '\0';
		who = end + 1;
	}
	if (fd >= 0)
		close(fd);
	if (pid && !who)
		who = *proc_comm(pid, comm, sizeof(comm)) ? comm : "another process";
	if (pid)
		snprintf(buf, len, "%s (pid %d)", who, (int)pid);
	else
		snprintf(buf, len, "another process");
	return pid;
}

static int db_path(const char *dir, char *buf, size_t len, struct pool_error *err)
{
	if ((size_t)snprintf(buf, len, "%s/pool.db", dir) >= len)
		return pool_fail(err, -ENAMETOOLONG, "pool path '%s' is too long", dir);
	return 0;
}

static const char *open_strerror(int r)
{
	switch (r) {
	case -ENOENT:
		return "does not exist (run 'mapperctl init')";
	case -EUCLEAN:
		return "is corrupt or not a mapperfs pool";
	case -EPROTONOSUPPORT:
		return "was written by a newer mapperfs";
	case -EBUSY:
		return "is locked by another process";
	case -ECANCELED:
		return "could not be read: SQLite aborted the read; try again";
	case -EEXIST:
		return "exists already";
	default:
		return strerror(-r);
	}
}

/*
 * The pool directory holds the database, the lock, the control socket and
 * the daemon's log and pid files, which a root daemon opens: anyone else
 * who can write in it could swap them for links to other files.  So
 * nobody but its owner may write it, and a new pool's directory must be
 * this user's (@own).  An existing pool may be another user's: root may
 * serve it for them, opening its files without following links.
 */
static int check_dir(const char *dir, bool own, struct pool_error *err)
{
	struct stat st;

	if (lstat(dir, &st) < 0)
		return pool_fail(err, -errno, "no pool at '%s': %s%s", dir, strerror(errno),
				 errno == ENOENT ? " (run 'mapperctl init')" : "");
	if (!S_ISDIR(st.st_mode))
		return pool_fail(err, -ENOTDIR, "pool '%s' is not a directory", dir);
	if (own && st.st_uid != geteuid())
		return pool_fail(err, -EPERM, "pool directory '%s' belongs to user %u, not to this user (%u)",
				 dir, (unsigned int)st.st_uid, (unsigned int)geteuid());
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return pool_fail(err, -EPERM, "pool directory '%s' can be written by others (mode %04o): allow only its owner (chmod 0700)",
				 dir, (unsigned int)(st.st_mode & 07777));
	return 0;
}

/* mkdir -p, mode 0700 for what it creates. */
static int make_dirs(const char *dir, struct pool_error *err)
{
	char path[PATH_MAX];
	size_t len = strlen(dir);

	if (len >= sizeof(path))
		return pool_fail(err, -ENAMETOOLONG, "pool path '%s' is too long", dir);
	memcpy(path, dir, len + 1);
	for (char *p = path + 1;; p++) {
		char c = *p;

		if (c && c != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return pool_fail(err, -errno, "cannot create directory '%s': %s", path,
					 strerror(errno));
		*p = c;
		if (!c)
			return 0;
	}
}

int pool_create(const char *dir, pool_meta_open_fn *open_meta,
		struct pool_error *err)
{
	struct pool_meta *m;
	char db[PATH_MAX];
	int r;

	r = make_dirs(dir, err);
	if (!r)
		r = check_dir(dir, true, err);
	if (r)
		return r;
	r = db_path(dir, db, sizeof(db), err);
	if (r)
		return r;
	r = open_meta(db, true, &m);
	if (r == -EEXIST)
		return pool_fail(err, r, "'%s' holds a pool already", dir);
	if (r)
		return pool_fail(err, r, "cannot create pool database '%s': %s", db,
				 strerror(-r));
	m->ops->close(m);
	return 0;
}

const char *pool_dir(const struct pool *p)
{
	return p->dir;
}

/* ---- the admin lock --------------------------------------------------- */

void pool_admin_lock(struct pool *p)
{
	pthread_mutex_lock(&p->admin);
	atomic_store(&p->admin_tid, gettid());
}

void pool_admin_unlock(struct pool *p)
{
	atomic_store(&p->admin_tid, 0);
	pthread_mutex_unlock(&p->admin);
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

struct pool_volume *pool_volume_by_id(struct pool *p, int64_t id)
{
	for (size_t i = 0; i < p->nr_vols; i++)
		if (p->vols[i]->rec.id == id)
			return p->vols[i];
	return NULL;
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

int pool_volume_get(struct pool *p, const char *name,
		    const struct target_type *kind, bool failed_ok,
		    struct pool_volume **out, struct pool_error *err)
{
	struct pool_volume *v = pool_volume_by_name(p, name);

	*out = NULL;	/* set on every path: gcc -O3 cannot see that pool_fail() is non-zero */
	if (!v)
		return pool_fail(err, -ENOENT, "no volume '%s'", name);
	if (kind && v->type != kind)
		return pool_fail(err, -EINVAL, "volume '%s' is %s, not %s", name,
				 v->type->name, kind->name);
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

int pool_record(struct pool *p, const char *doing,
		int (*record)(struct pool *p, void *arg), void *arg,
		struct pool_error *err)
{
	const struct pool_meta_ops *m = p->meta->ops;
	int r;

	r = m->begin(p->meta);
	if (!r)
		r = record(p, arg);
	if (!r)
		r = m->commit(p->meta);
	if (r) {
		m->rollback(p->meta);
		return pool_store_fail(err, r, doing);
	}
	return 0;
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
	size_t i = p->nr_vols;

	while (i && p->vols[i - 1]->rec.id > v->rec.id) {
		p->vols[i] = p->vols[i - 1];
		i--;
	}
	p->vols[i] = v;
	p->nr_vols++;
	if (pool_volume_show(p, v))
		pool_volume_failed(v, "out of memory while publishing it");
	pool_space_update(p);		/* what it uses without owning it counts now */
}

int pool_volume_show(struct pool *p, struct pool_volume *v)
{
	if (!v->served || v->published || v->rec.inactive)
		return 0;
	if (volset_add(&p->served, v->served))
		return -ENOMEM;
	v->published = true;
	return 0;
}

void pool_volume_hide(struct pool *p, struct pool_volume *v)
{
	if (!v->published)
		return;
	volset_remove(&p->served, v->served);	/* waits for readers */
	v->published = false;
	pool_stale_name(p, v->rec.name);
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

int pool_thins_update(struct pool *p)
{
	struct pool_thins *t, *old;
	size_t n = 0;

	t = malloc(sizeof(*t) + (p->nr_vols + 1) * sizeof(t->v[0]));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_vols; i++)
		if (p->vols[i]->type == &thin_pool_type && p->vols[i]->tp.pool)
			t->v[n++] = p->vols[i]->tp.pool;
	t->nr = n;
	old = rcu_publish(p->thins, t);
	rcu_wait_readers();
	free(old);
	return 0;
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

int pool_remove(struct pool *p, const char *name, struct pool_error *err)
{
	struct pool_volume *v, *user;
	char vname[POOL_NAME_MAX + 1];
	int r;

	pool_admin_lock(p);
	r = pool_volume_get(p, name, NULL, true, &v, err);
	if (!r) {
		user = origin_user(p, v);
		if (user)
			r = pool_fail(err, -EBUSY, "volume '%s' is the origin of thin volume '%s'",
				      name, user->rec.name);
	}
	if (!r) {
		snprintf(vname, sizeof(vname), "%s", v->rec.name);
		r = v->type->remove(p, v, err);
		if (!r)
			log_info("removed volume '%s'", vname);
	}
	pool_admin_unlock(p);
	return r;
}

int pool_extend(struct pool *p, const char *name, uint64_t size,
		char *const *on, size_t nr_on, struct volume_rec *out,
		struct pool_error *err)
{
	char cur[SIZE_STR_LEN];
	struct pool_volume *v;
	int r;

	pool_admin_lock(p);
	r = pool_volume_get(p, name, NULL, false, &v, err);
	if (!r && size <= v->rec.size)
		r = pool_fail(err, -EINVAL, "new size must be larger than %s",
			      format_size(v->rec.size, cur));
	if (!r)
		r = v->type->extend(p, v, size, on, nr_on, err);
	if (!r) {
		if (out)
			*out = v->rec;
		log_info("extended volume '%s' to %s", name, format_size(v->rec.size, cur));
	}
	pool_admin_unlock(p);
	return r;
}

/* ---- opening ---------------------------------------------------------- */

void pool_meta_image_release(struct pool_meta_image *img)
{
	free(img->devices);
	free(img->volumes);
	free(img->extents);
	free(img->switches);
	free(img->switch_paths);
	free(img->thin_pools);
	free(img->thins);
	free(img->origins);
	memset(img, 0, sizeof(*img));
}

int pool_kinds_attach(struct pool *p, const struct pool_meta_image *img,
		      struct pool_error *err)
{
	for (size_t i = 0; i < p->nr_vols; i++)
		if (p->vols[i]->type->attach(p->vols[i], img))
			return pool_fail(err, -ENOMEM, "out of memory");
	return 0;
}

static int load_volumes(struct pool *p, const struct pool_meta_image *img,
			struct pool_error *err)
{
	if (pool_reserve(p, img->nr_volumes, img->nr_extents))
		return pool_fail(err, -ENOMEM, "out of memory");
	p->nr_ext = img->nr_extents;
	if (p->nr_ext) {	/* both NULL for a pool without extents */
		memcpy(p->ext, img->extents, p->nr_ext * sizeof(*p->ext));
		qsort(p->ext, p->nr_ext, sizeof(*p->ext), cmp_extent);
	}
	for (size_t i = 0; i < img->nr_volumes; i++) {
		const struct target_type *type = target_type_find(img->volumes[i].kind);
		struct pool_volume *v = pool_volume_new(&img->volumes[i],
							type ? type : &linear_type);

		if (!v)
			return pool_fail(err, -ENOMEM, "out of memory");
		if (!type)
			pool_volume_broken(v, "its kind is unknown to this build");
		p->vols[p->nr_vols++] = v;
	}
	return 0;
}

/*
 * Builds every volume that has no failure yet (at open), or every one
 * that failed but is not broken (@retry: reload), in build order.
 * Returns how many it built.
 */
static size_t build_all(struct pool *p, bool retry)
{
	unsigned int order, next = 0;
	size_t built = 0;

	for (order = 0; next != ~0u; order = next) {
		next = ~0u;
		for (size_t i = 0; i < p->nr_vols; i++) {
			struct pool_volume *v = p->vols[i];
			struct pool_error e;

			if (v->type->build_order > order && v->type->build_order < next)
				next = v->type->build_order;
			if (v->type->build_order != order || v->broken ||
			    !v->failure != !retry)
				continue;
			free(v->failure);
			v->failure = NULL;
			if (v->type->build(p, v, &e)) {
				pool_volume_failed(v, e.msg);
			} else if (pool_volume_show(p, v)) {
				pool_volume_failed(v, "out of memory");
			} else {
				built++;
			}
		}
	}
	return built;
}

/* Counts what is still failed, and names the first in @still. */
static size_t count_failed(struct pool *p, struct pool_error *still)
{
	size_t failed = 0;

	still->msg[0] = '\0';
	for (size_t i = 0; i < p->nr_devs; i++) {
		struct pool_device *d = p->devs[i];

		if (d->dev)
			continue;
		if (!failed++)
			snprintf(still->msg, sizeof(still->msg), "raw device '%s' %s",
				 d->rec.name, d->failure ? d->failure : "is not open");
	}
	for (size_t i = 0; i < p->nr_vols; i++) {
		struct pool_volume *v = p->vols[i];

		if (!v->failure)
			continue;
		if (!failed++)
			snprintf(still->msg, sizeof(still->msg), "volume '%s': %s",
				 v->rec.name, v->failure);
	}
	return failed;
}

int pool_reload(struct pool *p, size_t *recovered, size_t *failed,
		struct pool_error *still, struct pool_error *err)
{
	int r;

	pool_admin_lock(p);
	*recovered = 0;
	for (size_t i = 0; i < p->nr_devs; i++)
		if (!p->devs[i]->dev && !pool_device_attach(p, p->devs[i]))
			(*recovered)++;
	*recovered += build_all(p, true);
	*failed = count_failed(p, still);
	pool_space_update(p);
	r = pool_thins_update(p);
	if (r)
		pool_fail(err, r, "out of memory");
	pool_admin_unlock(p);
	return r;
}

static void damage_found(void *arg, const char *msg)
{
	struct pool *p = arg;

	log_info("pool database: %s", msg);
	if (!p->nr_damage++)
		p->damage = strdup(msg);
}

/*
 * The database's own pages: a damaged index page is met by no row read,
 * yet a lookup by name would go wrong.  pool_failures() tells it.
 */
static void find_damage(struct pool *p)
{
	int r = p->meta->ops->integrity(p->meta, damage_found, p);

	if (r)
		log_warn("cannot check the pages of the pool database: %s", strerror(-r));
}

int pool_open(const char *dir, pool_meta_open_fn *open_meta, struct pool **out,
	      struct pool_error *err)
{
	struct pool_meta_image img = { 0 };
	char db[PATH_MAX];
	struct pool *p;
	int r;

	target_types_register();
	r = check_dir(dir, false, err);
	if (!r)
		r = db_path(dir, db, sizeof(db), err);
	if (r)
		return r;
	p = calloc(1, sizeof(*p));
	if (!p || !(p->dir = strdup(dir)) || volset_init(&p->served)) {
		r = pool_fail(err, -ENOMEM, "out of memory");
		goto err_free;
	}
	pthread_mutex_init(&p->admin, NULL);
	pthread_mutex_init(&p->dev_lock, NULL);
	r = open_meta(db, false, &p->meta);
	if (r) {
		pool_fail(err, r, "pool database '%s' %s", db, open_strerror(r));
		p->meta = NULL;
		goto err_free;
	}
	r = p->meta->ops->load(p->meta, &img);
	if (r) {
		pool_fail(err, r, "pool database '%s' cannot be read: %s", db,
			  r == -EUCLEAN ? "it is damaged" : strerror(-r));
		goto err_free;
	}
	p->uuid = img.uuid;
	find_damage(p);
	r = pool_devices_open(p, &img, err);
	if (!r)
		r = load_volumes(p, &img, err);
	if (!r)
		r = pool_kinds_attach(p, &img, err);
	pool_meta_image_release(&img);
	if (r)
		goto err_free;
	pool_check_records(p);
	build_all(p, false);
	pool_space_update(p);
	r = pool_thins_update(p);
	if (r) {
		pool_fail(err, r, "out of memory");
		goto err_free;
	}
	*out = p;
	return 0;

err_free:
	pool_close(p);
	return r;
}

int pool_watch(struct pool *p, uint32_t event_timeout_s)
{
	return pool_monitor_start(p, event_timeout_s);
}

void pool_set_mount(struct pool *p, dev_t mount_dev)
{
	p->mount_dev = mount_dev;
}

int pool_commit_all(struct pool *p)
{
	int r = 0;

	for (size_t i = 0; i < p->nr_vols; i++) {
		struct thin_pool *tp = p->vols[i]->type == &thin_pool_type ?
				       p->vols[i]->tp.pool : NULL;
		int c = tp ? thin_pool_commit(tp) : 0;

		if (c && !r)
			r = c;
	}
	return r;
}

void pool_close(struct pool *p)
{
	if (!p)
		return;
	if (p->meta)
		pool_record_times(p);
	pool_monitor_stop(p);
	/* Thin volumes go before their pools, every volume before the devices. */
	for (size_t i = 0; i < p->nr_vols; i++)
		if (p->vols[i]->type == &thin_pool_type && p->vols[i]->tp.pool &&
		    thin_pool_stop(p->vols[i]->tp.pool))
			log_error("thin pool '%s': the last commit failed",
				  p->vols[i]->rec.name);
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < p->nr_vols; i++) {
			struct pool_volume *v = p->vols[i];

			if (!v || (v->type == &thin_pool_type) != (pass == 1))
				continue;
			pool_volume_free(p, v);
			p->vols[i] = NULL;
		}
	}
	for (size_t i = 0; i < p->nr_devs; i++) {
		device_close(p->devs[i]->dev);
		free(p->devs[i]->failure);
		free(p->devs[i]);
	}
	free(atomic_load(&p->thins));
	free(p->damage);
	if (atomic_load(&p->served.cur))
		volset_release(&p->served);
	if (p->meta)
		p->meta->ops->close(p->meta);
	pool_monitor_free(p);
	pthread_mutex_destroy(&p->admin);
	pthread_mutex_destroy(&p->dev_lock);
	free(p->devs);
	free(p->vols);
	free(p->ext);
	free(p->dir);
	free(p);
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
