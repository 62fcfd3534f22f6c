/*
 * Exclusive ownership.  A pool owns its raw devices while it has them
 * open, so that a copy of its database (another pool directory naming the
 * same devices) can never serve the same bytes at the same time.  The
 * kernel keeps the score: a block device is claimed by an O_EXCL open,
 * which it grants to one opener at a time and refuses while the device is
 * mounted; a regular file by flock(LOCK_EX), which /proc/locks shows with
 * the holder's pid, so the refusal can name it.  Both go when the process
 * dies, however it dies.
 *
 * An external origin image is only read: device_open_shared() opens it
 * read-only and claims a file with flock(LOCK_SH), so pools may share a
 * base image but none may use it as a raw device meanwhile (a block
 * device is not claimed then).  flock is advisory: it keeps out only
 * those who ask for it (mapperfs); image.c says what guards an image
 * from other writers.
 *
 * Within one process a device may be opened more than once: the pool
 * service opens a device again to wipe its label, thin volumes share an
 * origin image.  So a claim belongs to the process, not to one struct
 * device: a table of claims by identity (the device number of a block
 * device, device and inode of a file) counts its openers, and the claim
 * holds a descriptor of its own until the last of them closes.  The claim
 * also holds the file's range lock (direct.h), so that every struct device
 * of this process on one file keeps its read-modify-writes to itself.
 *
 * An NBD export (nbd_link.h) is claimed through a lock file named after
 * its URI, in a directory of the daemon's user (/run/mapperfs for root):
 * the same table, the same flock, the same refusal naming the holder.
 * That keeps two pools of this host off one export under one URI; a pool
 * on another host, or this host under another URI, is kept off by the
 * label (another pool's label is refused, the same device twice in one
 * pool too), not by a lock: NBD has none to take.  The lock file goes
 * with the last claim on it (nbd_claim).
 */
#include "device.h"
#include "direct.h"
#include "log.h"
#include "nbd_conn.h"
#include "nbd_link.h"
#include "proc.h"
#include "rangelock.h"
#include "writelog.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <limits.h>
#include <linux/magic.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

struct claim {
	dev_t dev;			/* st_rdev of a block device, else st_dev */
	ino_t ino;			/* 0 for a block device */
	int fd;				/* holds the O_EXCL open or the flock */
	bool exclusive;			/* else shared: an origin image */
	unsigned int refs;		/* struct devices of this process on it */
	struct rangelock lock;		/* of the file: direct.h */
	struct device_writes writes;	/* of the file, whichever device made them */
	char *lock_path;		/* an NBD URI's lock file, removed with the claim */
	struct claim *next;
};

static pthread_mutex_t claims_lock = PTHREAD_MUTEX_INITIALIZER;
static struct claim *claims;

static void claim_identity(const struct stat *st, dev_t *dev, ino_t *ino)
{
	*dev = S_ISBLK(st->st_mode) ? st->st_rdev : st->st_dev;
	*ino = S_ISBLK(st->st_mode) ? 0 : st->st_ino;
}

bool device_same_file(const struct stat *a, const struct stat *b)
{
	dev_t da, db;
	ino_t ia, ib;

	claim_identity(a, &da, &ia);
	claim_identity(b, &db, &ib);
	return da == db && ia == ib && S_ISBLK(a->st_mode) == S_ISBLK(b->st_mode);
}

static int flock_nb(int fd, bool exclusive)
{
	if (flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0)
		return 0;
	return errno == EWOULDBLOCK ? -EBUSY : -errno;
}

/*
 * Opens again, with @flags (and O_CLOEXEC), the file @fd is open on:
 * through /proc/self/fd, so that it cannot be another file that took the
 * path meanwhile.  The new descriptor, or -errno.
 */
static int reopen(int fd, int flags)
{
	char path[64];
	int nfd;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	nfd = open(path, flags | O_CLOEXEC);
	return nfd < 0 ? -errno : nfd;
}

/*
 * A descriptor that claims what @fd is open on: a new O_EXCL open of the
 * same block device (through /proc, so it cannot be another device that
 * took the path meanwhile), or a duplicate of @fd with the flock on it.
 */
static int claim_open(int fd, const struct stat *st, bool exclusive)
{
	int cfd, r;

	if (S_ISBLK(st->st_mode))
		return reopen(fd, O_RDONLY | (exclusive ? O_EXCL : 0));
	cfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (cfd < 0)
		return -errno;
	r = flock_nb(cfd, exclusive);
	if (r) {
		close(cfd);
		return r;
	}
	return cfd;
}

/*
 * A shared claim becomes exclusive when this process opens the device as a
 * raw device too.  flock() converts by dropping the shared lock first, so
 * a refused conversion takes it back.
 */
static int claim_upgrade(struct claim *c, int fd, const struct stat *st)
{
	int cfd, r;

	if (c->exclusive)
		return 0;
	if (S_ISREG(st->st_mode)) {
		r = flock_nb(c->fd, true);
		if (r)
			flock_nb(c->fd, false);
	} else {
		cfd = claim_open(fd, st, true);
		r = cfd < 0 ? cfd : 0;
		if (!r) {
			close(c->fd);
			c->fd = cfd;
		}
	}
	if (!r)
		c->exclusive = true;
	return r;
}

static int claim_take(int fd, const struct stat *st, bool exclusive, struct claim **out)
{
	struct claim *c;
	dev_t dev;
	ino_t ino;
	int r = 0;

	claim_identity(st, &dev, &ino);
	pthread_mutex_lock(&claims_lock);
	for (c = claims; c && (c->dev != dev || c->ino != ino); c = c->next)
		;
	if (c) {
		r = exclusive ? claim_upgrade(c, fd, st) : 0;
		if (!r)
			c->refs++;
	} else if (!(c = calloc(1, sizeof(*c)))) {
		r = -ENOMEM;
	} else if ((r = rangelock_init(&c->lock))) {
		free(c);
	} else {
		c->fd = claim_open(fd, st, exclusive);
		if (c->fd < 0) {
			r = c->fd;
			rangelock_destroy(&c->lock);
			free(c);
		} else {
			c->dev = dev;
			c->ino = ino;
			c->exclusive = exclusive;
			c->refs = 1;
			atomic_init(&c->writes.returned, 1);	/* the first flush is never skipped */
			c->next = claims;
			claims = c;
		}
	}
	pthread_mutex_unlock(&claims_lock);
	if (!r)
		*out = c;
	return r;
}

static void claim_drop(struct claim *c)
{
	struct claim **pp;

	pthread_mutex_lock(&claims_lock);
	if (--c->refs == 0) {
		for (pp = &claims; *pp != c; pp = &(*pp)->next)
			;
		*pp = c->next;
		if (c->lock_path)	/* still holding its flock: see nbd_claim() */
			unlink(c->lock_path);
		close(c->fd);
		rangelock_destroy(&c->lock);
		free(c->lock_path);
		free(c);
	}
	pthread_mutex_unlock(&claims_lock);
}

static int device_size(int fd, const struct stat *st, uint64_t *size)
{
	if (S_ISREG(st->st_mode)) {
		*size = (uint64_t)st->st_size;
		return 0;
	}
	if (ioctl(fd, BLKGETSIZE64, size) < 0)
		return -errno;
	return 0;
}

#define DIO_ALIGN_MAX	4096u	/* bytes: extents are 4 KiB-aligned (space.h) */

/*
 * The alignment O_DIRECT on @fd needs, as device.h tells: statx if it
 * knows (0 if the file cannot do direct I/O), else a guess that holds.
 */
static void dio_alignment(int fd, const struct stat *st, unsigned int *off,
			  unsigned int *mem)
{
	struct statx stx;
	int lbs;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
	    (stx.stx_mask & STATX_DIOALIGN)) {
		*off = stx.stx_dio_offset_align;
		*mem = stx.stx_dio_mem_align;
		return;
	}
	*off = *mem = 4096;
	if (S_ISBLK(st->st_mode) && ioctl(fd, BLKSSZGET, &lbs) == 0 && lbs > 0)
		*off = *mem = (unsigned int)lbs;
}

static bool dio_align_ok(unsigned int a)
{
	return a && a <= DIO_ALIGN_MAX && (a & (a - 1)) == 0;
}

/*
 * The O_DIRECT descriptor, where the device can serve all its data
 * through one (device.h).  Opened through /proc, so it cannot be another
 * file that took the path meanwhile.
 */
static void device_open_direct(struct device *dev, const struct stat *st)
{
	unsigned int off, mem;
	int fd = reopen(dev->fd, O_RDWR | O_DIRECT);

	if (fd < 0)
		return;
	dio_alignment(fd, st, &off, &mem);
	if (!mem)
		mem = 1;
	if (!dio_align_ok(off) || mem > DIO_ALIGN_MAX || (mem & (mem - 1))) {
		if (off)
			log_info("'%s' needs direct I/O aligned to %u bytes, more than %u: "
				 "it is served through the page cache", dev->path, off,
				 DIO_ALIGN_MAX);
		close(fd);
		return;
	}
	dev->fd_direct = fd;
	dev->dio_off_align = off;
	dev->dio_mem_align = mem;
	/* Reading the label through fd must not read ahead into the data. */
	posix_fadvise(dev->fd, 0, 0, POSIX_FADV_RANDOM);
}

/*
 * io_uring runs a read inline only on files that take RWF_NOWAIT; on the
 * others (tmpfs) it hands every request to a kernel worker thread, one
 * more context switch per request.  The engine needs to know.
 */
static bool device_probe_nowait(int fd)
{
	char byte;
	struct iovec iov = { &byte, 1 };

	return preadv2(fd, &iov, 1, 0, RWF_NOWAIT) >= 0 || errno == EAGAIN;
}

static bool device_in_memory(int fd, const struct stat *st)
{
	struct statfs sfs;

	return S_ISREG(st->st_mode) && fstatfs(fd, &sfs) == 0 &&
	       (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC);
}

static void device_map(struct device *dev)
{
	void *p;

	if (!dev->size)
		return;
	p = mmap(NULL, dev->size, PROT_READ, MAP_SHARED, dev->fd, 0);
	if (p != MAP_FAILED)
		dev->mem = p;
}

int device_open_path(const char *path, int flags)
{
	struct stat st;
	int pfd, fd;

	pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	if (fstat(pfd, &st) < 0)
		fd = -errno;
	else if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		fd = -ENOTBLK;
	else
		fd = reopen(pfd, flags);
	close(pfd);
	return fd;
}

static int open_claimed(const char *path, int64_t id, bool exclusive,
			struct device **out)
{
	struct device *dev;
	struct stat st;
	int r;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->id = id;
	dev->fd_direct = -1;
	dev->dio_off_align = dev->dio_mem_align = 1;
	dev->path = strdup(path);
	if (!dev->path) {
		r = -ENOMEM;
		goto err_free;
	}
	dev->fd = device_open_path(path, exclusive ? O_RDWR : O_RDONLY);
	if (dev->fd < 0) {
		r = dev->fd;
		goto err_free_path;
	}
	if (fstat(dev->fd, &st) < 0) {	/* a regular file or a block device */
		r = -errno;
		goto err_close;
	}
	r = claim_take(dev->fd, &st, exclusive, &dev->claim);
	if (r)
		goto err_close;
	r = device_size(dev->fd, &st, &dev->size);
	if (r)
		goto err_drop_claim;
	dev->lock = &dev->claim->lock;
	dev->writes = &dev->claim->writes;
	if (device_in_memory(dev->fd, &st))
		device_map(dev);
	else if (exclusive)	/* an image is read through the cache its readers share */
		device_open_direct(dev, &st);
	dev->nowait = device_probe_nowait(dev->fd);
	dev->log_file = writelog_file(dev->path);
	*out = dev;
	return 0;

err_drop_claim:
	claim_drop(dev->claim);
err_close:
	close(dev->fd);
err_free_path:
	free(dev->path);
err_free:
	free(dev);
	return r;
}

/* ---- NBD exports ----------------------------------------------------------- */

/* Why the last NBD open of this thread failed, for device_strerror(). */
static __thread char nbd_why[384];

/* The directory of this user's NBD lock files, made if need be. */
static int nbd_lock_dir(char *dir, size_t len)
{
	const char *run = getenv("XDG_RUNTIME_DIR");
	struct stat st;

	if (getuid() == 0)
		snprintf(dir, len, "/run/mapperfs");
	else if (run && run[0] == '/')
		snprintf(dir, len, "%s/mapperfs", run);
	else
		snprintf(dir, len, "/tmp/mapperfs-%u", (unsigned int)getuid());
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 0077))
		return -EPERM;
	return 0;
}

/* The lock file that stands for @uri: its name is a hash of the URI. */
static int nbd_lock_path(const char *uri, char *path, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */
	char dir[PATH_MAX - 64];
	int r = nbd_lock_dir(dir, sizeof(dir));

	if (r)
		return r;
	for (const char *c = uri; *c; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
	snprintf(path, len, "%s/nbd-%016llx.lock", dir, (unsigned long long)h);
	return 0;
}

/*
 * Claims the lock file of @uri.  The last holder of a claim removes the
 * file while it still holds the flock (claim_drop), so that no file is
 * left behind; one who opened the file just before may then get the
 * flock of a file no longer there, so a claim counts only once the path
 * is seen to name the file flocked, and is taken again otherwise.
 */
static int nbd_claim(const char *uri, struct claim **out)
{
	char path[PATH_MAX];
	struct stat st, now;
	int fd, r = nbd_lock_path(uri, path, sizeof(path));

	if (r)
		return r;
	for (;;) {
		fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		r = fstat(fd, &st) < 0 ? -errno : claim_take(fd, &st, true, out);
		close(fd);
		if (r)
			return r;
		if (!stat(path, &now) && now.st_dev == st.st_dev && now.st_ino == st.st_ino)
			break;
		claim_drop(*out);
	}
	pthread_mutex_lock(&claims_lock);
	if (!(*out)->lock_path)
		(*out)->lock_path = strdup(path);	/* NULL: the file stays, harmless */
	pthread_mutex_unlock(&claims_lock);
	return 0;
}

static int open_nbd(const char *uri, int64_t id, struct device **out)
{
	struct device *dev = calloc(1, sizeof(*dev));
	int r;

	if (!dev)
		return -ENOMEM;
	nbd_why[0] = '\0';
	dev->id = id;
	dev->fd = dev->fd_direct = -1;
	dev->path = strdup(uri);
	if (!dev->path) {
		r = -ENOMEM;
		goto err_free;
	}
	r = nbd_claim(uri, &dev->claim);
	if (r)
		goto err_free;
	r = nbd_link_open(uri, &dev->nbd, nbd_why, sizeof(nbd_why));
	if (r)
		goto err_drop_claim;
	dev->lock = &dev->claim->lock;
	dev->size = nbd_link_size(dev->nbd);
	dev->dio_off_align = nbd_link_min_block(dev->nbd);
	dev->dio_mem_align = 1;
	*out = dev;
	return 0;

err_drop_claim:
	claim_drop(dev->claim);
err_free:
	free(dev->path);
	free(dev);
	return r;
}

int device_open(const char *path, int64_t id, struct device **out)
{
	if (nbd_link_is_uri(path))
		return open_nbd(path, id, out);
	return open_claimed(path, id, true, out);
}

int device_open_shared(const char *path, struct device **out)
{
	if (nbd_link_is_uri(path))
		return -ENOTBLK;
	return open_claimed(path, 0, false, out);
}

void device_close(struct device *dev)
{
	if (!dev)
		return;
	if (dev->mem)
		munmap((void *)dev->mem, dev->size);
	if (dev->fd_direct >= 0)
		close(dev->fd_direct);
	if (dev->fd >= 0)
		close(dev->fd);
	nbd_link_close(dev->nbd);
	claim_drop(dev->claim);
	free(dev->path);
	free(dev);
}

bool device_answers(const char *path, unsigned int ms)
{
	struct nbd_conn *c;
	char why[384];
	int fd;

	if (nbd_link_is_uri(path)) {
		c = nbd_conn_open(path, nbd_now_ms() + ms, why, sizeof(why));
		if (!c)
			return false;
		nbd_conn_close(c);
		return true;
	}
	fd = device_open_path(path, O_RDONLY);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/* Where block device @rdev is mounted, from /proc/self/mountinfo. */
static bool mounted_at(dev_t rdev, char *at, size_t len)
{
	char line[1024], where[512];
	unsigned int maj, min;
	bool found = false;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*u %*u %u:%u %*s %511s", &maj, &min, where) == 3 &&
		    makedev(maj, min) == rdev) {
			snprintf(at, len, "%s", where);
			found = true;
		}
	fclose(f);
	return found;
}

const char *device_strerror(const char *path, int r, char *buf, size_t len)
{
	char comm[64], at[512], lock[PATH_MAX];
	struct stat st;
	pid_t pid;

	if (nbd_link_is_uri(path) && r != -EBUSY) {
		if (nbd_why[0])
			snprintf(buf, len, "%s", nbd_why);
		else
			snprintf(buf, len, "%s", strerror(-r));
		return buf;
	}
	if (nbd_link_is_uri(path) && !nbd_lock_path(path, lock, sizeof(lock)))
		path = lock;
	if (r != -EBUSY || stat(path, &st) < 0) {
		snprintf(buf, len, "%s", strerror(-r));
	} else if (S_ISBLK(st.st_mode)) {
		if (mounted_at(st.st_rdev, at, sizeof(at)))
			snprintf(buf, len, "in use: mounted on '%s'", at);
		else
			snprintf(buf, len, "in use: opened exclusively by another program "
				 "(a mapperfs pool, a file system, swap, a RAID)");
	} else if ((pid = proc_flock_holder(&st)) > 0) {
		proc_comm(pid, comm, sizeof(comm));
		snprintf(buf, len, "in use by %s (pid %d)", *comm ? comm : "another program",
			 (int)pid);
	} else {
		snprintf(buf, len, "in use by another program (it holds a lock on it)");
	}
	return buf;
}

/*
 * All of [off, off + len) of NBD device @dev, through direct.c, which
 * meets the server's block size (a piece at a time when it must bounce).
 */
static int nbd_transfer(struct device *dev, void *buf, size_t len, uint64_t off, bool write)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = write ? direct_pwrite(dev, (char *)buf + done, len - done, off + done)
				  : direct_pread(dev, (char *)buf + done, len - done, off + done);

		if (n < 0)
			return (int)n;
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

int device_read_at(struct device *dev, void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	if (off > dev->size || len > dev->size - off)
		return -ENODATA;
	if (dev->nbd)
		return nbd_transfer(dev, buf, len, off, false);
	n = pread(dev->fd, buf, len, (off_t)off);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -ENODATA;
}

int device_write_at(struct device *dev, const void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	if (dev->nbd)
		return nbd_transfer(dev, (void *)buf, len, off, true);
	n = pwrite(dev->fd, buf, len, (off_t)off);
	device_note_write(dev);		/* even failed: it may have reached some sectors */
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* Copies [off, off + len) of @dev, as far as it reaches, into @fd. */
static int copy_span(struct device *dev, int fd, uint64_t off, uint64_t len, char *buf)
{
	if (off >= dev->size)
		return 0;
	if (len > dev->size - off)
		len = dev->size - off;
	if (device_read_at(dev, buf, len, off))
		return -EIO;
	return pwrite(fd, buf, len, (off_t)off) == (ssize_t)len ? 0 : -errno;
}

int device_probe_fd(struct device *dev)
{
	char *buf;
	int fd, r;

	if (!dev->nbd) {
		fd = fcntl(dev->fd, F_DUPFD_CLOEXEC, 0);
		return fd < 0 ? -errno : fd;
	}
	fd = memfd_create("mapperfs-probe", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(PROBE_SPAN);
	r = !buf ? -ENOMEM : ftruncate(fd, (off_t)dev->size) < 0 ? -errno : 0;
	if (!r)
		r = copy_span(dev, fd, 0, PROBE_SPAN, buf);
	if (!r && dev->size > PROBE_SPAN)
		r = copy_span(dev, fd, dev->size - PROBE_SPAN, PROBE_SPAN, buf);
	free(buf);
	if (r) {
		close(fd);
		return r;
	}
	return fd;
}

int device_label_read(struct device *dev, struct device_label *out)
{
	char buf[LABEL_SIZE];
	int r;

	if (!dev->nbd)
		return device_label_read_fd(dev->fd, out);
	r = device_read_at(dev, buf, sizeof(buf), 0);
	if (r)
		return r == -ENODATA ? r : -EIO;
	return label_decode(buf, out);
}

int device_label_read_fd(int fd, struct device_label *out)
{
	char buf[LABEL_SIZE];
	ssize_t n = pread(fd, buf, sizeof(buf), 0);

	if (n < 0)
		return -EIO;
	if (n < (ssize_t)sizeof(buf))
		return -ENODATA;
	return label_decode(buf, out);
}

/* The write log's issue point for an operation on @dev, if it is recorded. */
static uint64_t issue_point(const struct device *dev)
{
	return dev->log_file ? writelog_now() : 0;
}

int device_label_write(struct device *dev, const struct device_label *l)
{
	uint64_t issued = issue_point(dev);
	char buf[LABEL_SIZE];

	label_encode(l, buf);
	if (device_write_at(dev, buf, sizeof(buf), 0))
		return -EIO;
	if (dev->log_file) {
		writelog_write(dev->log_file, issued, 0, buf, sizeof(buf));
		device_note_write(dev);		/* after its record: device.h */
	}
	return device_sync(dev);
}

int device_verify(struct device *dev, const struct device_label *expect,
		  char *why, size_t why_len)
{
	struct device_label found;
	int r = device_label_read(dev, &found);

	if (r == -ENODATA) {
		snprintf(why, why_len, "carries no mapperfs label");
		return -EINVAL;
	}
	if (r) {
		snprintf(why, why_len, "has an unreadable label (%s)", strerror(-r));
		return -EINVAL;
	}
	if (!uuid_equal(&found.pool, &expect->pool)) {
		snprintf(why, why_len, "belongs to another pool");
		return -EINVAL;
	}
	if (!uuid_equal(&found.device, &expect->device)) {
		snprintf(why, why_len, "carries the label of another device");
		return -EINVAL;
	}
	if (dev->size < expect->size) {
		snprintf(why, why_len, "is smaller than recorded (%llu bytes, expected %llu)",
			 (unsigned long long)dev->size, (unsigned long long)expect->size);
		return -EINVAL;
	}
	return 0;
}

void device_note_flushed(struct device *dev, uint64_t covered)
{
	uint64_t was;

	if (!dev->writes)
		return;
	/* flushes of several threads may end out of order: keep the most */
	was = atomic_load(&dev->writes->flushed);
	while (was < covered &&
	       !atomic_compare_exchange_weak(&dev->writes->flushed, &was, covered))
		;
}

int device_sync(struct device *dev)
{
	uint64_t issued, covered;

	if (dev->nbd)
		return nbd_link_flush(dev->nbd);
	if (device_clean(dev))
		return 0;
	covered = device_flush_begins(dev);
	issued = issue_point(dev);	/* after covered: device.h */
	if (fdatasync(dev->fd) < 0)
		return -errno;
	device_note_flushed(dev, covered);
	if (dev->log_file)
		writelog_flush(dev->log_file, issued);
	return 0;
}

/*
 * Zeros written over [off, off + len), through the descriptor that has the
 * data (device.h); *done: bytes that were.
 */
static int device_write_zeros(struct device *dev, uint64_t off, uint64_t len,
			      uint64_t *done)
{
	static const char zeros[65536] __attribute__((aligned(4096)));

	*done = 0;
	while (*done < len) {
		size_t n = len - *done < sizeof(zeros) ? len - *done : sizeof(zeros);
		ssize_t w = direct_pwrite(dev, zeros, n, off + *done);

		if (w == -EINTR)
			continue;
		if (w <= 0)
			return -EIO;
		*done += (uint64_t)w;
	}
	return 0;
}

/*
 * fallocate shares the range lock as a write does (direct.h): a
 * read-modify-write of a sector it zeroes in part must not put the old
 * bytes back.
 */
static int zero_range(struct device *dev, int mode, uint64_t off, uint64_t len)
{
	struct rangelock_range held;
	int r;

	rangelock_share(dev->lock, &held, off, len);
	if (dev->nbd)
		r = nbd_link_zero(dev->nbd, off, len, mode & FALLOC_FL_PUNCH_HOLE);
	else
		r = fallocate(dev->fd, mode, (off_t)off, (off_t)len) < 0 ? -errno : 0;
	device_note_write(dev);		/* even failed: it may have zeroed some */
	rangelock_unlock(dev->lock, &held);
	return r;
}

int device_zero(struct device *dev, uint64_t off, uint64_t len, int punch)
{
	int mode = FALLOC_FL_KEEP_SIZE | (punch ? FALLOC_FL_PUNCH_HOLE : FALLOC_FL_ZERO_RANGE);
	uint64_t issued = issue_point(dev), done = len;
	int r = zero_range(dev, mode, off, len);

	if (r) {
		if (r != -EOPNOTSUPP && r != -EINVAL)
			return r;
		r = device_write_zeros(dev, off, len, &done);
	}
	if (dev->log_file && done) {
		writelog_zero(dev->log_file, issued, off, done);
		device_note_write(dev);		/* after its record: device.h */
	}
	return r;
}

int device_discard(struct device *dev, uint64_t off, uint64_t len)
{
	uint64_t range[2] = { off, len };
	struct stat st;
	int r = 0;

	if (dev->nbd)
		return nbd_link_trim(dev->nbd, off, len);
	if (fstat(dev->fd, &st) < 0)
		return -errno;
	if (S_ISBLK(st.st_mode))
		r = ioctl(dev->fd, BLKDISCARD, range) < 0 ? -errno : 0;
	else if (fallocate(dev->fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, (off_t)off,
			   (off_t)len) < 0)
		r = errno == EINVAL ? -EOPNOTSUPP : -errno;
	device_note_write(dev);		/* even failed: it may have punched some */
	return r;
}

int device_seek(struct device *dev, uint64_t off, int whence, uint64_t *out)
{
	off_t at = dev->nbd ? -1 : lseek(dev->fd, (off_t)off, whence);

	if (at >= 0) {
		*out = (uint64_t)at;
		return 0;
	}
	if (!dev->nbd && errno != EINVAL)
		return -errno;
	/* A block device, NBD, or a file system that cannot tell: all data. */
	if (off >= dev->size)
		return -ENXIO;
	*out = whence == SEEK_DATA ? off : dev->size;
	return 0;
}
