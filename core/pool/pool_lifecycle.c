/*
 * core/pool/pool_lifecycle.c: the pool service's life cycle: creating a
 * pool, its lock file, opening it from the store, closing it (reloading
 * what failed is pool_reload.c's, which builds the volumes here too).
 * The top of the service: it calls the devices, the kind registry, check,
 * the builder and the monitor, and nothing calls it but the hosts.
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
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device.h"
#include "log.h"
#include "nbd_conn.h"
#include "proc.h"
#include "regfile.h"
#include "thin_pool.h"

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
	r = regfile_open(path, O_RDWR | O_CREAT, 0600, &fd);
	if (r == -EROFS) {	/* a read-only pool: reading it is fine */
		r = regfile_open(path, O_RDONLY, 0, &fd);
		writable = false;
	}
	if (r)
		return r;
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
	if (regfile_open(path, O_RDONLY, 0, &fd))
		fd = -1;
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
	case -EINVAL:
		return "or a file beside it (-wal, -shm) is not a regular file: refusing it";
	case -EMLINK:
		return "or a file beside it (-wal, -shm) has other names (hard links): refusing it";
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
static int check_dir(const char *dir, bool own, struct stat *out, struct pool_error *err)
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
	if (out)
		*out = st;
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

int pool_dir_make(const char *dir, struct pool_error *err)
{
	int r = make_dirs(dir, err);

	return r ? r : check_dir(dir, true, NULL, err);
}

int pool_create(const char *dir, pool_meta_open_fn *open_meta,
		struct pool_error *err)
{
	struct pool_meta *m;
	char db[PATH_MAX];
	int r;

	r = pool_dir_make(dir, err);
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

/* ---- opening ---------------------------------------------------------- */


static int kinds_attach(struct pool *p, const struct pool_meta_image *img,
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
	pool_extents_publish(p, img->extents, img->nr_extents);
	for (size_t i = 0; i < img->nr_volumes; i++) {
		const struct target_type *type = target_type_load(&img->volumes[i], img);
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

static void damage_found(void *arg, const char *msg)
{
	struct pool *p = arg;

	log_info("pool database: %s", msg);
	if (!p->nr_damage++)
		p->damage = strdup(msg);
}

/*
 * The database's own pages: a damaged index page is met by no row read,
 * yet a lookup by name would go wrong.  pool_failures() tells it.  Not
 * the map's leaves: their cost would grow with the map, and a damaged
 * one is found by the load that reads it (check reads them all).
 */
static void find_damage(struct pool *p)
{
	int r = p->meta->ops->integrity(p->meta, false, damage_found, p);

	if (r)
		log_warn("cannot check the pages of the pool database: %s", strerror(-r));
}

static int open_pool(const char *dir, pool_meta_open_fn *open_meta, bool frozen,
		     struct pool **out, struct pool_error *err)
{
	struct pool_meta_image img = { 0 };
	char db[PATH_MAX];
	struct stat st;
	struct pool *p;
	int r;

	target_types_register();
	r = check_dir(dir, false, &st, err);
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
	p->sync_rate = POOL_SYNC_RATE;
	if (fsid_user_init(&p->owner, st.st_uid, st.st_gid)) {
		r = pool_fail(err, -ENOMEM, "out of memory");
		goto err_free;
	}
	nbd_conn_set_key_owner(st.st_uid);	/* its NBD devices' TLS keys */
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
	p->layout_seq = img.layout_seq;
	p->layout_frozen = frozen;
	find_damage(p);
	r = pool_devices_open(p, &img, err);
	if (!r)
		r = load_volumes(p, &img, err);
	if (!r)
		r = kinds_attach(p, &img, err);
	if (!r)
		r = pool_tags_attach(p, &img, err);
	if (!r)
		r = pool_exports_attach(p, &img, err);
	pool_meta_image_release(&img);
	if (r)
		goto err_free;
	pool_check_records(p);
	pool_build_volumes(p, false);
	pool_space_update(p);
	r = pool_thins_update(p);
	if (r) {
		pool_fail(err, r, "out of memory");
		goto err_free;
	}
	pool_layout_open(p);
	*out = p;
	return 0;

err_free:
	pool_close(p);
	return r;
}

int pool_open(const char *dir, pool_meta_open_fn *open_meta, struct pool **out,
	      struct pool_error *err)
{
	return open_pool(dir, open_meta, false, out, err);
}

int pool_open_frozen(const char *dir, pool_meta_open_fn *open_meta, struct pool **out,
		     struct pool_error *err)
{
	return open_pool(dir, open_meta, true, out, err);
}

bool pool_watched(const struct pool *p)
{
	return p->monitor != NULL;
}

int pool_watch(struct pool *p, uint32_t event_timeout_s)
{
	int r = pool_layout_copier_start(p);

	return r ? r : pool_monitor_start(p, event_timeout_s, pool_reload_absent);
}


void pool_close(struct pool *p)
{
	if (!p)
		return;
	if (p->meta)
		pool_record_times(p);
	pool_monitor_stop(p);
	pool_layout_copier_stop(p);
	/* Out of the served set at once: one by one costs a copy of it and a grace period each. */
	pool_volumes_hide(p, p->vols, p->nr_vols);
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
		tags_release(&p->devs[i]->tags);
		free(p->devs[i]);
	}
	free(atomic_load(&p->thins));
	free(p->damage);
	free(p->exports);
	free(p->layout_unwritten);
	free(p->layout_records);
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
	fsid_user_release(&p->owner);
	free(p->dir);
	free(p);
}
