/*
 * core/pool_device.c: the pool's raw devices: opening them at start,
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
 */
#include "pool_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device.h"
#include "log.h"
#include "names.h"
#include "probe.h"
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
	char why[200], msg[160];
	int r;

	r = device_open(d->rec.path, d->rec.id, &d->dev);
	if (r) {
		snprintf(why, sizeof(why), "cannot be opened: %s",
			 device_strerror(d->rec.path, r, msg, sizeof(msg)));
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
	if (!r)
		return pool_fail(err, -EEXIST, "device '%s' already belongs to a pool (use --force to take it over)",
				 dev->path);
	if (r == -EBADMSG)
		return pool_fail(err, -EEXIST, "device '%s' carries a damaged mapperfs label (use --force to take it over)",
				 dev->path);
	if (r != -ENODATA)
		return pool_fail(err, r, "cannot read the label of '%s': %s", dev->path,
				 strerror(-r));
	r = probe_signature(dev->fd, what, sizeof(what));
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
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	n = pread(dev->fd, buf, LABEL_SIZE, 0);
	if (n != LABEL_SIZE) {
		free(buf);
		return n < 0 ? -errno : -EIO;
	}
	*out = buf;
	return 0;
}

static void restore_head(struct device *dev, const void *buf)
{
	if (pwrite(dev->fd, buf, LABEL_SIZE, 0) != LABEL_SIZE || device_sync(dev))
		log_error("cannot restore the first %u bytes of '%s' after a failed add",
			  LABEL_SIZE, dev->path);
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

/* Writes the label, then registers the device; both or neither. */
static int register_device(struct pool *p, struct device *dev, struct device_rec *rec,
			   bool created, struct pool_error *err)
{
	struct device_label l = { .pool = p->uuid, .size = dev->size };
	void *head = NULL;
	int r;

	r = uuid_generate(&rec->uuid);
	if (r)
		return pool_fail(err, r, "cannot generate a uuid: %s", strerror(-r));
	l.device = rec->uuid;
	if (!created) {
		r = save_head(dev, &head);
		if (r)
			return pool_fail(err, r, "cannot read '%s': %s", dev->path, strerror(-r));
	}
	r = device_label_write(dev, &l);
	if (r) {
		free(head);
		return pool_fail(err, r, "cannot write the label on '%s': %s", dev->path,
				 strerror(-r));
	}
	r = pool_record(p, "register the device", record_device, rec, err);
	if (r && head)
		restore_head(dev, head);
	free(head);
	return r;
}

int pool_device_add(struct pool *p, const struct pool_device_spec *s,
		    struct device_rec *out, struct pool_error *err)
{
	struct device_rec rec = { 0 };
	struct pool_device *d = NULL;
	const char *name = s->name;
	struct device *dev = NULL;
	char abs[PATH_MAX], abs_why[160];
	int r;

	if (s->path[0] != '/')
		return pool_fail(err, -EINVAL, "device path '%s' is not absolute", s->path);
	if (!name) {
		const char *slash = strrchr(s->path, '/');

		name = slash[1] ? slash + 1 : s->path;
	}
	if (!name_valid(name))
		return pool_fail(err, -EINVAL, "invalid name '%s': " NAME_RULES, name);
	pthread_mutex_lock(&p->admin);
	r = check_unregistered(p, name, NULL, err);
	if (!r && s->create_size)
		r = create_file(s->path, s->create_size, err);
	if (r)
		goto out_unlock;
	if (!realpath(s->path, abs)) {
		r = pool_fail(err, -errno, "cannot open '%s': %s", s->path, strerror(errno));
		goto out_unlink;
	}
	r = check_unregistered(p, name, abs, err);
	if (r)
		goto out_unlink;
	r = device_open(abs, 0, &dev);
	if (r == -ENOTBLK)
		r = pool_fail(err, r, "'%s' is neither a block device nor a regular file", abs);
	else if (r)
		r = pool_fail(err, r, "cannot open '%s': %s", abs,
			      device_strerror(abs, r, abs_why, sizeof(abs_why)));
	if (!r)
		r = check_device(p, dev, s->force, err);
	if (r)
		goto out_close;
	d = calloc(1, sizeof(*d));
	if (!d || reserve_device(p)) {
		r = pool_fail(err, -ENOMEM, "out of memory");
		goto out_close;
	}
	snprintf(rec.name, sizeof(rec.name), "%s", name);
	snprintf(rec.path, sizeof(rec.path), "%s", abs);
	rec.size = dev->size;
	r = register_device(p, dev, &rec, s->create_size, err);
	if (r)
		goto out_close;
	/* publish */
	dev->id = rec.id;
	d->rec = rec;
	d->dev = dev;
	p->devs[p->nr_devs++] = d;
	pool_space_update(p);
	if (out)
		*out = rec;
	pthread_mutex_unlock(&p->admin);
	log_info("added raw device '%s' at '%s'", rec.name, rec.path);
	return 0;

out_close:
	free(d);
	device_close(dev);
out_unlink:
	if (s->create_size)
		unlink(s->path);
out_unlock:
	pthread_mutex_unlock(&p->admin);
	return r;
}

/* ---- remove --------------------------------------------------------------- */

/*
 * The volume whose extent or placed switch path lies on @d in *out, or
 * NULL.  0 or -ENOMEM.
 */
static int user_of(struct pool *p, const struct pool_device *d, struct pool_volume **out)
{
	struct extent_rec *used;
	size_t nr;

	*out = NULL;
	if (pool_used(p, NULL, 0, &used, &nr))
		return -ENOMEM;
	for (size_t i = 0; i < nr && !*out; i++)
		if (used[i].device == d->rec.id)
			*out = pool_volume_by_id(p, used[i].volume);
	free(used);
	return 0;
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
	struct pool_volume *user;
	struct pool_device *d;
	size_t i;
	int r;

	pthread_mutex_lock(&p->admin);
	d = pool_device_by_name(p, name);
	if (!d) {
		r = pool_fail(err, -ENOENT, "no device '%s'", name);
		goto out;
	}
	if (user_of(p, d, &user)) {
		r = pool_fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	if (user) {
		r = pool_fail(err, -EBUSY, "device '%s' is in use by volume '%s'", name,
			      user->rec.name);
		goto out;
	}
	r = pool_record(p, "unregister the device", record_removal, d, err);
	if (r)
		goto out;
	/* publish */
	for (i = 0; p->devs[i] != d; i++)
		;
	memmove(&p->devs[i], &p->devs[i + 1], (p->nr_devs - i - 1) * sizeof(*p->devs));
	p->nr_devs--;
	pool_space_update(p);
	wipe_label(p, d);
	log_info("removed raw device '%s'", d->rec.name);
	device_close(d->dev);
	free(d->failure);
	free(d);
out:
	pthread_mutex_unlock(&p->admin);
	return r;
}
