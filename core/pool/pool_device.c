/*
 * core/pool/pool_device.c: the pool's raw devices: opening them at start,
 * adding and removing them.
 *
 * A device is recognised by its label (label.h): the daemon reads it back
 * before it serves a byte, and refuses a device that moved, shrank or was
 * swapped for another.  Adding one writes the label before the store
 * transaction that registers it (no device I/O inside a transaction); if
 * that transaction fails, what the label overwrote is put back, and a file
 * the command created is removed, so a failed add leaves nothing behind.
 * Removing one unregisters it, then wipes the label if it is still ours,
 * so that it can be added again without --force.
 *
 * A device being added or removed may be slow, or hang: a disk that
 * stalls, an NBD export whose server is gone.  Its I/O (reading the label,
 * probing for signatures, writing or wiping the label, the flush) must
 * then hold up nothing but that command, so it happens outside the admin
 * lock, under a lock of its own, p->dev_lock, which only device add and
 * remove take:
 *
 *   add:    dev_lock ─ validate, open, probe, save the head, write the
 *           label ─ admin: record, publish ─ (failed: put the head back)
 *   remove: dev_lock ─ admin: validate, record, unpublish ─ wipe the label
 *
 * So `list`, `status`, volume changes and the daemon's own commits go on
 * while a label write waits on its device; a second device add or remove
 * waits for the first (and the daemon tells its client for whom).  Only
 * these two change the set of devices, under both locks, so either lock
 * keeps p->devs and its records still for a reader: what an add validated
 * under dev_lock alone is still true when it records, and needs no second
 * look.  (A device's open descriptor and failure change under the admin
 * lock alone: reload.)
 */
#include "pool_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/loop.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device.h"
#include "log.h"
#include "names.h"
#include "nbd_link.h"
#include "nbd_uri.h"
#include "probe.h"
#include "psk_file.h"
#include "size.h"

#define DEVICE_MIN_SIZE	(DEVICE_DATA_OFFSET + (1u << 20))	/* bytes */

static struct pool_device *device_new(const struct device_rec *rec)
{
	struct pool_device *d = calloc(1, sizeof(*d));

	if (d)
		d->rec = *rec;
	return d;
}

static void device_failed(struct pool_device *d, const char *why)
{
	free(d->failure);
	d->failure = strdup(why);
	/* a detail, as a volume's failure: pool_failures() tells the fault */
	log_info("raw device '%s' at '%s' %s; refusing to use it", d->rec.name,
		  d->rec.path, why);
}

/* Opens @d and checks that it is the device the pool registered. */
int pool_device_attach(struct pool *p, struct pool_device *d)
{
	struct device_label expect = { .pool = p->uuid, .device = d->rec.uuid,
				       .size = d->rec.size };
	char why[POOL_ERROR_LEN], msg[384];
	int r;

	r = device_open(d->rec.path, d->rec.id, &d->dev);
	if (r) {
		snprintf(why, sizeof(why), "cannot be opened: %s%s",
			 device_strerror(d->rec.path, r, msg, sizeof(msg)),
			 nbd_link_is_uri(d->rec.path) ?  " (tried again every few seconds while the daemon runs;"
			 " 'mapperctl reload' tries now)" : "");
		device_failed(d, why);
		return r;
	}
	r = device_verify(d->dev, &expect, why, sizeof(why));
	if (r) {
		device_close(d->dev);
		d->dev = NULL;
		device_failed(d, why);
		return r;
	}
	free(d->failure);
	d->failure = NULL;
	return 0;
}

int pool_devices_open(struct pool *p, const struct pool_meta_image *img,
		      struct pool_error *err)
{
	p->devs = calloc(img->nr_devices + 1, sizeof(*p->devs));
	if (!p->devs)
		return pool_fail(err, -ENOMEM, "out of memory");
	p->cap_devs = img->nr_devices + 1;
	for (size_t i = 0; i < img->nr_devices; i++) {
		struct pool_device *d = device_new(&img->devices[i]);

		if (!d)
			return pool_fail(err, -ENOMEM, "out of memory");
		p->devs[p->nr_devs++] = d;
		pool_device_attach(p, d);
	}
	return 0;
}

/* ---- add ------------------------------------------------------------------ */

/* Creates @path with @size bytes; refuses to touch an existing file. */
static int create_file(const char *path, uint64_t size, struct pool_error *err)
{
	int fd, r = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == EEXIST)
		return pool_fail(err, -EEXIST, "file '%s' exists (leave out --create to add it as it is)",
				 path);
	if (fd < 0)
		return pool_fail(err, -errno, "cannot create '%s': %s", path, strerror(errno));
	if (ftruncate(fd, (off_t)size) < 0) {
		r = pool_fail(err, -errno, "cannot size '%s' to %" PRIu64 " bytes: %s", path,
			      size, strerror(errno));
		unlink(path);
	}
	close(fd);
	return r;
}

/*
 * Is @path one of the pool's own files: its database (with its WAL), log
 * or pid file?  Raw device files may live in the pool directory too.
 */
static bool pool_file(const struct pool *p, const char *path)
{
	char *real = realpath(path, NULL), *slash = real ? strrchr(real, '/') : NULL;
	struct stat d, pd;
	bool own = false;

	if (slash && (!strncmp(slash + 1, "pool.db", 7) || !strncmp(slash + 1, "mapperfs.", 9))) {
		*slash = '\0';
		own = !stat(real[0] ? real : "/", &d) && !stat(p->dir, &pd) &&
		      device_same_file(&d, &pd);
	}
	free(real);
	return own;
}

int pool_check_not_own(struct pool *p, int fd, const char *path, const char *what,
		       struct pool_error *err)
{
	struct loop_info64 loop;
	struct stat st;
	dev_t dev;

	if (fstat(fd, &st))
		return pool_fail(err, -errno, "cannot stat %s '%s': %s", what, path, strerror(errno));
	dev = st.st_dev;
	if (S_ISBLK(st.st_mode) && !ioctl(fd, LOOP_GET_STATUS64, &loop))
		dev = (dev_t)loop.lo_device;	/* where its backing file lives */
	if (p->mount_dev && dev == p->mount_dev)
		return pool_fail(err, -ELOOP, "%s '%s' is served by this pool's own mount: the daemon would wait on itself",
				 what, path);
	if (S_ISREG(st.st_mode) && pool_file(p, path))
		return pool_fail(err, -EINVAL, "%s '%s' is the pool's own file", what, path);
	return 0;
}

static int check_unregistered(struct pool *p, const char *name, const char *path,
			      struct pool_error *err)
{
	for (size_t i = 0; i < p->nr_devs; i++) {
		if (!strcmp(p->devs[i]->rec.name, name))
			return pool_fail(err, -EEXIST, "device '%s' exists", name);
		if (path && !strcmp(p->devs[i]->rec.path, path))
			return pool_fail(err, -EEXIST, "'%s' is registered already as device '%s'",
					 path, p->devs[i]->rec.name);
	}
	return 0;
}

/*
 * What is on @dev already.  A device of this pool (the same device again,
 * by another path or alias) is refused whatever --force says: registering
 * it twice would hand its bytes out twice.  Another pool's label, a
 * damaged one, or any other signature (file system, partition table,
 * disk image ...) is refused unless @force.
 */
static int check_device(struct pool *p, struct device *dev, bool force,
			struct pool_error *err)
{
	char have[SIZE_STR_LEN], need[SIZE_STR_LEN], what[128];
	struct device_label l;
	int r;

	if (dev->size < DEVICE_MIN_SIZE)
		return pool_fail(err, -ENOSPC, "device '%s' is too small (%s; at least %s)",
				 dev->path, format_size(dev->size, have),
				 format_size(DEVICE_MIN_SIZE, need));
	r = device_label_read(dev, &l);
	if (!r && uuid_equal(&l.pool, &p->uuid)) {
		for (size_t i = 0; i < p->nr_devs; i++)
			if (uuid_equal(&l.device, &p->devs[i]->rec.uuid))
				return pool_fail(err, -EEXIST, "'%s' is device '%s' of this pool already (at '%s')",
						 dev->path, p->devs[i]->rec.name,
						 p->devs[i]->rec.path);
	}
	if (force)
		return 0;
	if (!r) {
		char owner[UUID_STR_LEN];

		uuid_format(&l.pool, owner);
		return pool_fail(err, -EEXIST, "device '%s' already belongs to pool %s%s (use --force to take it over%s)",
				 dev->path, owner, dev->nbd ? ", maybe in use on another host" : "",
				 dev->nbd ? " only if that pool is gone" : "");
	}
	if (r == -EBADMSG)
		return pool_fail(err, -EEXIST, "device '%s' carries a damaged mapperfs label (use --force to take it over)",
				 dev->path);
	if (r != -ENODATA)
		return pool_fail(err, r, "cannot read the label of '%s': %s", dev->path,
				 strerror(-r));
	r = device_probe_fd(dev);
	if (r >= 0) {
		int fd = r;

		r = probe_signature(fd, what, sizeof(what));
		close(fd);
	}
	if (r < 0)
		return pool_fail(err, r, "cannot read '%s': %s", dev->path, strerror(-r));
	if (r)
		return pool_fail(err, -EEXIST, "device '%s' holds %s (use --force to overwrite it)",
				 dev->path, what);
	return 0;
}

/* Reads what the label will overwrite, to put it back if the add fails. */
static int save_head(struct device *dev, void **out)
{
	void *buf = malloc(LABEL_SIZE);
	int r;

	if (!buf)
		return -ENOMEM;
	r = device_read_at(dev, buf, LABEL_SIZE, 0);
	if (r) {
		free(buf);
		return r == -ENODATA ? -EIO : r;
	}
	*out = buf;
	return 0;
}

static void restore_head(struct device *dev, const void *buf)
{
	char label[SIZE_STR_LEN];

	if (device_write_at(dev, buf, LABEL_SIZE, 0) || device_sync(dev))
		log_error("cannot restore the first %s of '%s' after a failed add",
			  format_size(LABEL_SIZE, label), dev->path);
}

/* Room for one more device in p->devs.  0 or -ENOMEM. */
static int reserve_device(struct pool *p)
{
	size_t cap = p->cap_devs ? 2 * p->cap_devs : 8;
	struct pool_device **v;

	if (p->nr_devs < p->cap_devs)
		return 0;
	v = reallocarray(p->devs, cap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	p->devs = v;
	p->cap_devs = cap;
	return 0;
}

static int record_device(struct pool *p, void *arg)
{
	return p->meta->ops->device_insert(p->meta, arg);
}

/*
 * Writes the pool's label on @dev, with a new uuid in @rec; first saves
 * what it overwrites in *head (malloc'ed) unless @head is NULL (a file
 * the command created).  Blocks on the device: no lock but dev_lock.
 */
static int label_device(struct pool *p, struct device *dev, struct device_rec *rec,
			void **head, struct pool_error *err)
{
	struct device_label l = { .pool = p->uuid, .size = dev->size };
	int r;

	r = uuid_generate(&rec->uuid);
	if (r)
		return pool_fail(err, r, "cannot generate a uuid: %s", strerror(-r));
	l.device = rec->uuid;
	if (head) {
		r = save_head(dev, head);
		if (r)
			return pool_fail(err, r, "cannot read '%s': %s", dev->path, strerror(-r));
	}
	r = device_label_write(dev, &l);
	if (r)
		return pool_fail(err, r, "cannot write the label on '%s': %s", dev->path,
				 strerror(-r));
	return 0;
}

static void dev_lock(struct pool *p)
{
	pthread_mutex_lock(&p->dev_lock);
	atomic_store(&p->dev_lock_tid, gettid());
}

static void dev_unlock(struct pool *p)
{
	atomic_store(&p->dev_lock_tid, 0);
	pthread_mutex_unlock(&p->dev_lock);
}

/* Registers @dev (labelled) as @rec: the store, then the pool in memory. */
static int publish_device(struct pool *p, struct device *dev, struct device_rec *rec,
			  struct pool_error *err)
{
	struct pool_device *d = calloc(1, sizeof(*d));
	int r;

	pool_admin_lock(p);
	if (!d || reserve_device(p))
		r = pool_fail(err, -ENOMEM, "out of memory");
	else
		r = pool_record(p, "register the device", record_device, rec, err);
	if (!r) {
		dev->id = rec->id;
		d->rec = *rec;
		d->dev = dev;
		p->devs[p->nr_devs++] = d;
		pool_space_update(p);
	}
	pool_admin_unlock(p);
	if (r)
		free(d);
	return r;
}

/*
 * An external origin image of this pool is never a raw device: its label
 * and every volume's data would land in the image under the thin volumes
 * reading it (and opening it for writing breaks their lease: image.c).
 */
static int check_not_image(struct pool *p, const char *abs, struct pool_error *err)
{
	struct stat st, im;
	int r = 0;

	if (stat(abs, &st))
		return pool_fail(err, -errno, "cannot open '%s': %s", abs, strerror(errno));
	pool_admin_lock(p);
	for (size_t i = 0; i < p->nr_vols && !r; i++) {
		struct pool_volume *v = p->vols[i];
		const char *path = v->type->image(v);

		if (path && !stat(path, &im) && device_same_file(&st, &im))
			r = pool_fail(err, -EBUSY, "'%s' is the external origin of %s volume '%s'",
				      abs, v->type->words, v->rec.name);
	}
	pool_admin_unlock(p);
	return r;
}

/* Opens the device at @abs and checks that it may be added: *dev. */
static int open_new_device(struct pool *p, const char *abs, bool force,
			   struct device **dev, struct pool_error *err)
{
	char why[384], own[POOL_NAME_MAX + 1];
	bool nbd = nbd_link_is_uri(abs);
	int r = nbd ? 0 : check_not_image(p, abs, err);

	if (r)
		return r;
	if (nbd && pool_export_named_by(p, abs, own, sizeof(own)))
		return pool_fail(err, -ELOOP, "'%s' is this pool's own export of volume '%s': the daemon would wait on itself",
				 abs, own);
	r = device_open(abs, 0, dev);

	if (r == -ENOTBLK)
		return pool_fail(err, r, "'%s' is neither a block device nor a regular file", abs);
	if (r)
		return pool_fail(err, r, "cannot open '%s': %s", abs,
				 device_strerror(abs, r, why, sizeof(why)));
	if (!nbd)
		r = pool_check_not_own(p, (*dev)->fd, abs, "device", err);
	if (!r)
		r = check_device(p, *dev, force, err);
	if (r) {
		device_close(*dev);
		*dev = NULL;
	}
	return r;
}

/*
 * The TLS key file an NBD URI names (tls-psk-file=PATH) is taken as an
 * export's (psk_file.h): absolute, not a link, the pool owner's or
 * root's, nobody else's to read, and it parses; and it only goes with a
 * scheme that asks for TLS.  0 or -errno.
 */
static int check_tls_key(struct pool *p, const char *uri, struct pool_error *err)
{
	char path[PATH_MAX], identity[PSK_IDENTITY_MAX + 1];

	if (!nbd_uri_param_at(uri, "tls-psk-file"))
		return 0;
	if (!nbd_uri_is_tls(uri))
		return pool_fail(err, -EINVAL, "'%s' gives a TLS key file without TLS: the URI "
				 "must be nbds://IDENTITY@HOST/... or nbds+unix://IDENTITY@/...", uri);
	if (!nbd_uri_param(uri, "tls-psk-file", path, sizeof(path)) || path[0] != '/')
		return pool_fail(err, -EINVAL, "the TLS key file in '%s' is not an absolute path", uri);
	return pool_check_psk(p, path, identity, err);
}

int pool_device_add(struct pool *p, const struct pool_device_spec *s,
		    struct device_rec *out, struct pool_error *err)
{
	bool nbd = nbd_link_is_uri(s->path);
	struct device_rec rec = { 0 };
	const char *name = s->name;
	struct device *dev = NULL;
	char abs[PATH_MAX], export[POOL_NAME_MAX + 1], sock[PATH_MAX], host[256], port[16];
	void *head = NULL;
	int r;

	if (!nbd && nbd_uri_has_scheme(s->path))
		return pool_fail(err, -EINVAL, "'%s' is not a device mapperfs can use: a URI must be "
				 "nbd://HOST[:PORT]/EXPORT or nbd+unix:///EXPORT?socket=PATH", s->path);
	if (s->path[0] != '/' && !nbd)
		return pool_fail(err, -EINVAL, "device path '%s' is not absolute", s->path);
	if (nbd && nbd_uri_is_unix(s->path) &&
	    (!nbd_uri_socket(s->path, sock, sizeof(sock)) || sock[0] != '/'))
		return pool_fail(err, -EINVAL, "the socket path in '%s' is %s", s->path,
				 nbd_uri_socket_at(s->path) ? "not absolute" : "missing (socket=PATH)");
	if (nbd && !nbd_uri_is_unix(s->path) &&
	    !nbd_uri_host(s->path, host, sizeof(host), port, sizeof(port)))
		return pool_fail(err, -EINVAL, "'%s' names no host and port to reach: "
				 "nbd://HOST[:PORT]/EXPORT, the port 1..65535", s->path);
	if (nbd) {
		r = check_tls_key(p, s->path, err);
		if (r)
			return r;
	}
	if (nbd && s->create_size)
		return pool_fail(err, -EINVAL, "--create makes a file: an NBD export is made by its server");
	if (!name && nbd && !(name = nbd_uri_export(s->path, export, sizeof(export))))
		return pool_fail(err, -EINVAL, "give the NBD device '%s' a name with --name: "
				 "its URI names no export", s->path);
	if (!name) {
		const char *slash = strrchr(s->path, '/');

		name = slash[1] ? slash + 1 : s->path;
	}
	if (!name_valid(name))
		return pool_fail(err, -EINVAL, "invalid name '%s': " NAME_RULES, name);
	dev_lock(p);
	r = check_unregistered(p, name, NULL, err);
	if (!r && s->create_size)
		r = create_file(s->path, s->create_size, err);
	if (r)
		goto out_unlock;
	if (nbd && strlen(s->path) >= sizeof(abs)) {
		r = pool_fail(err, -ENAMETOOLONG, "the URI '%s' is too long", s->path);
		goto out_unlink;
	} else if (nbd) {
		memcpy(abs, s->path, strlen(s->path) + 1);
	} else if (!realpath(s->path, abs)) {
		r = pool_fail(err, -errno, "cannot open '%s': %s", s->path, strerror(errno));
		goto out_unlink;
	}
	r = check_unregistered(p, name, abs, err);
	if (!r)
		r = open_new_device(p, abs, s->force, &dev, err);
	if (r)
		goto out_unlink;
	snprintf(rec.name, sizeof(rec.name), "%s", name);
	snprintf(rec.path, sizeof(rec.path), "%s", abs);
	rec.size = dev->size;
	r = label_device(p, dev, &rec, s->create_size ? NULL : &head, err);
	if (!r)
		r = publish_device(p, dev, &rec, err);
	if (r && head)
		restore_head(dev, head);
	free(head);
	if (r)
		goto out_close;
	if (out)
		*out = rec;
	dev_unlock(p);
	log_info("added raw device '%s' at '%s'", rec.name, rec.path);
	return 0;

out_close:
	device_close(dev);
out_unlink:
	if (s->create_size)
		unlink(s->path);
out_unlock:
	dev_unlock(p);
	return r;
}

/* ---- remove --------------------------------------------------------------- */

static int by_id(const void *a, const void *b)
{
	int64_t x = (*(struct pool_volume *const *)a)->rec.id;
	int64_t y = (*(struct pool_volume *const *)b)->rec.id;

	return (x > y) - (x < y);
}

/*
 * The distinct volumes whose extents or placed switch paths lie on @d, in
 * *out (malloc'ed, by id), how many in *nr.  0 or -ENOMEM.
 */
static int users_of(struct pool *p, const struct pool_device *d, struct pool_volume ***out,
		    size_t *nr)
{
	struct extent_rec *used;
	size_t n;

	*nr = 0;
	if (pool_used(p, NULL, 0, &used, &n))
		return -ENOMEM;
	*out = calloc(n + 1, sizeof(**out));
	for (size_t i = 0; *out && i < n; i++) {
		struct pool_volume *v = used[i].device == d->rec.id ?
					pool_volume_by_id(p, used[i].volume) : NULL;
		size_t k = 0;

		while (v && k < *nr && (*out)[k] != v)
			k++;
		if (v && k == *nr)
			(*out)[(*nr)++] = v;
	}
	free(used);
	if (!*out)
		return -ENOMEM;
	qsort(*out, *nr, sizeof(**out), by_id);
	return 0;
}

/*
 * "device 'd' is in use by volume 'a'", or by every user, counted:
 * "by 3 volumes: 'a', 'b' and thin pool 'tp'"; names that do not fit
 * are counted ("and 12 more").
 */
static int refuse_in_use(struct pool_error *err, const char *name, struct pool_volume **v,
			 size_t n)
{
	char list[POOL_ERROR_LEN - 96] = "";
	size_t len = 0, shown = 0;

	for (; shown < n; shown++) {
		const char *noun = strcmp(v[shown]->type->noun, "volume") ? v[shown]->type->noun : "";
		int w = snprintf(list + len, sizeof(list) - len, "%s%s%s'%s'",
				 !shown ? "" : shown + 1 == n ? " and " : ", ", noun, *noun ? " " : "",
				 v[shown]->rec.name);

		if (w < 0 || (size_t)w >= sizeof(list) - len - 24) {
			list[len] = 0;
			break;
		}
		len += (size_t)w;
	}
	if (n == 1)
		return pool_fail(err, -EBUSY, "device '%s' is in use by %s%s", name,
				 *list == '\'' ? "volume " : "", list);
	if (shown < n)
		return pool_fail(err, -EBUSY, "device '%s' is in use by %zu volumes: %s and %zu more",
				 name, n, list, n - shown);
	return pool_fail(err, -EBUSY, "device '%s' is in use by %zu volumes: %s", name, n, list);
}

static int record_removal(struct pool *p, void *arg)
{
	const struct pool_device *d = arg;

	return p->meta->ops->device_delete(p->meta, d->rec.id);
}

/* Best effort: the device is gone from the pool whatever happens here. */
static void wipe_label(struct pool *p, struct pool_device *d)
{
	struct device_label l;

	if (d->dev && !device_label_read(d->dev, &l) && uuid_equal(&l.pool, &p->uuid) &&
	    uuid_equal(&l.device, &d->rec.uuid) && device_zero(d->dev, 0, LABEL_SIZE, 0))
		log_warn("cannot wipe the label of '%s'", d->rec.path);
}

int pool_device_remove(struct pool *p, const char *name, struct pool_error *err)
{
	struct pool_volume **users = NULL;
	struct pool_device *d;
	size_t i, nr_users = 0;
	int r;

	dev_lock(p);
	pool_admin_lock(p);
	d = pool_device_by_name(p, name);
	if (!d)
		r = pool_fail(err, -ENOENT, "no device '%s'", name);
	else if (users_of(p, d, &users, &nr_users))
		r = pool_fail(err, -ENOMEM, "out of memory");
	else if (nr_users)
		r = refuse_in_use(err, name, users, nr_users);
	else
		r = pool_record(p, "unregister the device", record_removal, d, err);
	free(users);
	if (!r) {	/* publish */
		for (i = 0; p->devs[i] != d; i++)
			;
		memmove(&p->devs[i], &p->devs[i + 1], (p->nr_devs - i - 1) * sizeof(*p->devs));
		p->nr_devs--;
		pool_space_update(p);
	}
	pool_admin_unlock(p);
	if (!r) {
		wipe_label(p, d);
		log_info("removed raw device '%s'", d->rec.name);
		device_close(d->dev);
		free(d->failure);
		tags_release(&d->tags);
		free(d);
	}
	dev_unlock(p);
	return r;
}

bool pool_device_reconnecting(const struct pool_device *d, char *why, size_t len)
{
	struct nbd_link_stats st;

	if (!d->dev || !d->dev->nbd)
		return false;
	nbd_link_stats(d->dev->nbd, &st);
	if (st.reconnecting && why)
		snprintf(why, len, "%s %llu s ago; a request waits up to %u s for the server",
			 st.reason, (unsigned long long)(st.down_ms / 1000),
			 nbd_link_timeout_ms(d->dev->nbd) / 1000);
	return st.reconnecting;
}

void pool_devices_tick(struct pool *p)
{
	for (size_t i = 0; i < p->nr_devs; i++)
		if (p->devs[i]->dev && p->devs[i]->dev->nbd)
			nbd_link_tick(p->devs[i]->dev->nbd);
}

enum pool_io pool_io_kind(struct pool *p)
{
	enum pool_io kind = POOL_IO_MEMORY;

	pool_admin_lock(p);
	for (size_t i = 0; i < p->nr_devs && kind != POOL_IO_BLOCKS; i++) {
		const struct device *dev = p->devs[i]->dev;

		if (!dev || (device_unbuffered(dev) && !dev->nbd))
			kind = POOL_IO_BLOCKS;	/* not open yet: it may be any kind */
		else if (dev->nbd)
			kind = POOL_IO_NETWORK;
	}
	pool_admin_unlock(p);
	return kind;
}
