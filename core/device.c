#include "device.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include "writelog.h"

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

static void device_open_direct(struct device *dev, const struct stat *st)
{
	int lbs = 0;

	dev->fd_direct = open(dev->path, O_RDWR | O_DIRECT | O_CLOEXEC);
	dev->dio_align = 4096;
	if (dev->fd_direct >= 0 && S_ISBLK(st->st_mode) &&
	    ioctl(dev->fd_direct, BLKSSZGET, &lbs) == 0 && lbs > 0)
		dev->dio_align = (unsigned int)lbs;
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

static void device_map_if_in_memory(struct device *dev, const struct stat *st)
{
	struct statfs sfs;
	void *p;

	if (!S_ISREG(st->st_mode) || !dev->size || fstatfs(dev->fd, &sfs) < 0 ||
	    (sfs.f_type != TMPFS_MAGIC && sfs.f_type != RAMFS_MAGIC))
		return;
	p = mmap(NULL, dev->size, PROT_READ, MAP_SHARED, dev->fd, 0);
	if (p != MAP_FAILED)
		dev->mem = p;
}

int device_open(const char *path, int64_t id, struct device **out)
{
	struct device *dev;
	struct stat st;
	int r;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->id = id;
	dev->fd_direct = -1;
	dev->path = strdup(path);
	if (!dev->path) {
		r = -ENOMEM;
		goto err_free;
	}
	dev->fd = open(path, O_RDWR | O_CLOEXEC);
	if (dev->fd < 0) {
		r = -errno;
		goto err_free_path;
	}
	if (fstat(dev->fd, &st) < 0) {
		r = -errno;
		goto err_close;
	}
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		r = -ENOTBLK;
		goto err_close;
	}
	r = device_size(dev->fd, &st, &dev->size);
	if (r)
		goto err_close;
	device_open_direct(dev, &st);
	dev->nowait = device_probe_nowait(dev->fd);
	device_map_if_in_memory(dev, &st);
	dev->log_file = writelog_file(dev->path);
	*out = dev;
	return 0;

err_close:
	close(dev->fd);
err_free_path:
	free(dev->path);
err_free:
	free(dev);
	return r;
}

void device_close(struct device *dev)
{
	if (!dev)
		return;
	if (dev->mem)
		munmap((void *)dev->mem, dev->size);
	if (dev->fd_direct >= 0)
		close(dev->fd_direct);
	close(dev->fd);
	free(dev->path);
	free(dev);
}

int device_label_read(struct device *dev, struct device_label *out)
{
	char buf[LABEL_SIZE];
	ssize_t n = pread(dev->fd, buf, sizeof(buf), 0);

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
	if (pwrite(dev->fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf))
		return -EIO;
	if (dev->log_file)
		writelog_write(dev->log_file, issued, 0, buf, sizeof(buf));
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

int device_sync(struct device *dev)
{
	uint64_t issued = issue_point(dev);

	if (fdatasync(dev->fd) < 0)
		return -errno;
	if (dev->log_file)
		writelog_flush(dev->log_file, issued);
	return 0;
}

/* Zeros written over [off, off + len); *done: bytes that were. */
static int device_write_zeros(struct device *dev, uint64_t off, uint64_t len,
			      uint64_t *done)
{
	static const char zeros[65536];

	*done = 0;
	while (*done < len) {
		size_t n = len - *done < sizeof(zeros) ? len - *done : sizeof(zeros);
		ssize_t w = pwrite(dev->fd, zeros, n, (off_t)(off + *done));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -EIO;
		*done += (uint64_t)w;
	}
	return 0;
}

int device_zero(struct device *dev, uint64_t off, uint64_t len, int punch)
{
	int mode = FALLOC_FL_KEEP_SIZE | (punch ? FALLOC_FL_PUNCH_HOLE : FALLOC_FL_ZERO_RANGE);
	uint64_t issued = issue_point(dev), done = len;
	int r = 0;

	if (fallocate(dev->fd, mode, (off_t)off, (off_t)len) < 0) {
		if (errno != EOPNOTSUPP && errno != EINVAL)
			return -errno;
		r = device_write_zeros(dev, off, len, &done);
	}
	if (dev->log_file && done)
		writelog_zero(dev->log_file, issued, off, done);
	return r;
}
