/*
 * core/target/image.c: an external origin image, read-only, and guarded.
 *
 * A thin volume over a base image reads the image wherever it has not
 * written, and its first write to a block copies the rest of the block
 * from it.  So the image must not change while the volume lives: a
 * change shows through the blocks not yet written and not through the
 * others, and what the guest reads is neither the old disk nor the new.
 * Opening it read-only keeps the daemon from writing it; keeping others
 * from writing it is what this file is for.
 *
 * The mode of the file keeps no one out who matters: root, whom mode 0444
 * does not stop, and the owner, who can chmod.  flock, which device.c
 * takes shared (so that no mapperfs uses the image as a raw device), is
 * advisory: dd and qemu ignore it.  What the kernel enforces on every
 * opener is a lease.  A read lease (F_SETLEASE F_RDLCK) is granted only
 * while nobody has the file open for writing, and any later open for
 * writing or truncate, by anyone, root included, first breaks it: the
 * opener waits until the holder lets go (or lease-break-time, 45 s by
 * default, passed).  That wait is our chance: the monitor looks at each
 * lease about once a second (image_watch), and a broken one fences the
 * image: every read of it fails with EIO from then on, a grace period
 * lets the reads already past the fence finish, and only then is the
 * lease let go and the writer goes on.  The volume is failed rather than
 * mixed; `status` and `check` say why.  Taking a lease while someone
 * writes is refused (-ETXTBSY): their writes would show through.  Many
 * openers for writing write nothing (a tool that opens read-write by
 * habit), so the fence is not for ever: image_unfence takes the lease
 * again once the writer is gone and, leased, finds the file as it was
 * recorded (size and mtime), then lifts it (`reload`).
 *
 * The kernel tells a lease's holder of a break with a signal, SIGIO by
 * default, which would end the daemon.  We ask for SIGURG instead
 * (F_SETSIG), whose default is to be ignored, and learn of breaks by
 * asking (F_GETLEASE); nothing of the process's signal handling changes.
 *
 * What a lease does not catch: writes to the file system's own device
 * underneath it; a file changed from another host (NFS); a file the
 * daemon may not lease (another user's, unless it has CAP_LEASE, as a
 * root daemon does), or on a file system without leases: those are
 * served unguarded, and the log says so.  A block device has no leases:
 * only its read-only flag (blockdev --setro) keeps writers out, and one
 * without it is served unguarded too.  Without a daemon (mapperctl alone)
 * nobody watches: a writer waits until the command ends, or 45 s.  And a
 * copy-on-write that mapped the image just before the fence reads it
 * just after, outside the read section the grace period waits for: the
 * window is the length of one read.  The thin volume also records the
 * image's size and mtime when it is made (pool_thin.c), so that a change
 * made while no daemon watched is found when the pool opens, and by
 * check.
 */
#include "image.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "device.h"
#include "rcu.h"

struct image {
	struct target target;
	struct device *dev;		/* opened shared: read-only */
	bool leased;			/* a read lease on dev->fd, until fenced */
	int unguarded;			/* why not guarded: -errno of the lease, -EROFS
					 * for a writable block device; 0 if guarded */
	_Atomic bool fenced;		/* a writer reached it: reads fail */
};

static struct image *to_image(struct target *t)
{
	return (struct image *)t;
}

static const struct image *to_image_const(const struct target *t)
{
	return (const struct image *)t;
}

static int image_map(struct target *t, enum io_dir dir, uint64_t off, uint32_t len,
		     struct segs *out)
{
	struct image *im = to_image(t);

	(void)dir;			/* thin never writes its origin */
	if (atomic_load_explicit(&im->fenced, memory_order_acquire))
		return -EIO;
	return segs_push(out, im->dev, off, len, 0) ? -ENOMEM : MAP_REMAPPED;
}

static int image_flush(struct target *t, struct engine *e)
{
	(void)t, (void)e;
	return 0;			/* nothing is ever written */
}

static int image_discard(struct target *t, struct engine *e, uint64_t off, uint64_t len,
			 enum discard_mode mode)
{
	(void)t, (void)e, (void)off, (void)len, (void)mode;
	return -EROFS;
}

/* The file's own holes, inside [off, size). */
static int image_seek(struct target *t, uint64_t off, uint64_t size, int whence,
		      uint64_t *out)
{
	uint64_t at;
	int r = device_seek(to_image(t)->dev, off, whence, &at);

	if (r)
		return r;	/* -ENXIO: no data from off to the file's end */
	if (whence == SEEK_DATA && at >= size)
		return -ENXIO;
	*out = at < size ? at : size;
	return 0;
}

/* A file: what it takes on its file system; a block device: all of it. */
static uint64_t image_mapped_bytes(struct target *t, uint64_t size)
{
	struct stat st;
	uint64_t n;

	if (fstat(to_image(t)->dev->fd, &st) || !S_ISREG(st.st_mode))
		return size;
	n = (uint64_t)st.st_blocks * 512;
	return n < size ? n : size;
}

/*
 * Takes a read lease on the file, breaks told by SIGURG (above): 0,
 * -ETXTBSY while someone has it open for writing, or -errno.
 */
static int lease_take(struct image *im)
{
	if (fcntl(im->dev->fd, F_SETSIG, SIGURG) || fcntl(im->dev->fd, F_SETLEASE, F_RDLCK))
		return errno == EAGAIN ? -ETXTBSY : -errno;
	im->leased = true;
	return 0;
}

/* Lets go of the lease: a writer that broke it goes on. */
static void lease_drop(struct image *im)
{
	fcntl(im->dev->fd, F_SETLEASE, F_UNLCK);
	im->leased = false;
}

static void image_destroy(struct target *t)
{
	struct image *im = to_image(t);

	/* The claim may keep the file open after us: the lease must not stay. */
	if (im->leased)
		lease_drop(im);
	device_close(im->dev);
	free(im);
}

static const struct target_ops image_ops = {
	.name = "image",
	.map = image_map,
	.fault = target_loads_nothing,
	.fault_release = target_holds_nothing,
	.fault_start = target_faults_inline,
	.write_deferred = target_never_defers,
	.read_failed = target_no_read_retry,
	.write_failed = target_no_write_retry,
	.end_write = target_no_end_write,
	.flush = image_flush,
	.discard = image_discard,
	.seek = image_seek,
	.mapped_bytes = image_mapped_bytes,
	.destroy = image_destroy,
};

/* Takes the guard: a lease on a file, the read-only flag of a block device. */
static int image_guard(struct image *im)
{
	struct stat st;
	int ro = 0, r;

	if (fstat(im->dev->fd, &st))
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(im->dev->fd, BLKROGET, &ro) || !ro)
			im->unguarded = -EROFS;
		return 0;
	}
	r = lease_take(im);
	if (r == -ETXTBSY)
		return r;		/* open for writing now */
	im->unguarded = r;
	return 0;
}

int image_open(const char *path, struct target **out)
{
	struct image *im = calloc(1, sizeof(*im));
	int r;

	if (!im)
		return -ENOMEM;
	im->target.ops = &image_ops;
	r = device_open_shared(path, &im->dev);
	if (r) {
		free(im);
		return r;
	}
	r = im->dev->size ? image_guard(im) : -EINVAL;
	if (r) {
		device_close(im->dev);
		free(im);
		return r;
	}
	*out = &im->target;
	return 0;
}

uint64_t image_size(const struct target *t)
{
	return to_image_const(t)->dev->size;
}

int image_identity(const struct target *t, uint64_t *size, int64_t *mtime_ns)
{
	const struct image *im = to_image_const(t);
	struct stat st;

	if (fstat(im->dev->fd, &st))
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		*mtime_ns = 0;
		return ioctl(im->dev->fd, BLKGETSIZE64, size) ? -errno : 0;
	}
	*size = (uint64_t)st.st_size;
	*mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	return 0;
}

bool image_guarded(const struct target *t, char *why, size_t len)
{
	const struct image *im = to_image_const(t);

	switch (im->unguarded) {
	case 0:
		return true;
	case -EROFS:
		snprintf(why, len, "it is a block device that can be written "
			 "('blockdev --setro' makes it read-only)");
		break;
	case -EACCES:
	case -EPERM:
		snprintf(why, len, "the daemon may not lease a file it does not own "
			 "(it needs CAP_LEASE)");
		break;
	case -EINVAL:
		snprintf(why, len, "its file system grants no leases (or fs.leases-enable is 0)");
		break;
	default:
		snprintf(why, len, "it cannot be leased: %s", strerror(-im->unguarded));
		break;
	}
	return false;
}

bool image_watch(struct target *t)
{
	struct image *im = to_image(t);

	if (!im->leased || fcntl(im->dev->fd, F_GETLEASE) == F_RDLCK)
		return false;
	atomic_store_explicit(&im->fenced, true, memory_order_release);
	rcu_wait_readers();		/* reads past the fence are done */
	lease_drop(im);
	return true;
}

bool image_fenced(const struct target *t)
{
	return atomic_load(&to_image_const(t)->fenced);
}

int image_unfence(struct target *t, uint64_t size, int64_t mtime_ns)
{
	struct image *im = to_image(t);
	uint64_t now_size;
	int64_t now_mtime;
	int r;

	if (!image_fenced(t))
		return 0;
	r = lease_take(im);
	if (r)
		return r;
	r = image_identity(t, &now_size, &now_mtime);
	if (!r && ((size && now_size != size) || (mtime_ns && now_mtime != mtime_ns)))
		r = -ESTALE;
	if (r) {
		lease_drop(im);
		return r;
	}
	atomic_store_explicit(&im->fenced, false, memory_order_release);
	return 0;
}
