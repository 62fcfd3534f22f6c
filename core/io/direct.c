#include "direct.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nbd_link.h"
#include "rangelock.h"

static ssize_t result(ssize_t n)
{
	return n < 0 ? -errno : n;
}

/*
 * pread(2) and pwrite(2) of @dev's unbuffered data: fd_direct, or the
 * NBD link, which transfers all or fails (short only at the end).
 */
static ssize_t raw_pread(const struct device *dev, void *p, size_t n, uint64_t at)
{
	int r;

	if (!dev->nbd)
		return result(pread(dev->fd_direct, p, n, (off_t)at));
	if (at >= dev->size)
		return 0;
	if (n > dev->size - at)
		n = dev->size - at;
	r = nbd_link_pread(dev->nbd, p, n, at);
	return r ? r : (ssize_t)n;
}

static ssize_t raw_pwrite(const struct device *dev, const void *p, size_t n, uint64_t at)
{
	int r;

	if (!dev->nbd)
		return result(pwrite(dev->fd_direct, p, n, (off_t)at));
	if (at >= dev->size)
		return 0;
	if (n > dev->size - at)
		n = dev->size - at;
	r = nbd_link_pwrite(dev->nbd, p, n, at);
	return r ? r : (ssize_t)n;
}

/*
 * What of [off, off + len) one bounce takes: [off, *end), and the units
 * [*a, *b) that hold it.  DIRECT_BOUNCE_MAX is a multiple of every unit.
 */
static void cover(const struct device *dev, uint64_t off, size_t len, uint64_t *a,
		  uint64_t *end, uint64_t *b)
{
	uint64_t unit = dev->dio_off_align;

	*a = off & ~(unit - 1);
	*end = off + len < *a + DIRECT_BOUNCE_MAX ? off + len : *a + DIRECT_BOUNCE_MAX;
	*b = (*end + unit - 1) & ~(unit - 1);
}

/* Page-aligned, so any dio_mem_align (at most 4 KiB) is met. */
static char *bounce_alloc(uint64_t len)
{
	void *p;

	return posix_memalign(&p, 4096, len) ? NULL : p;
}

/* Reads up to @n bytes at @at; short only at the end of the device. */
static ssize_t read_full(const struct device *dev, char *p, size_t n, uint64_t at)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = raw_pread(dev, p + got, n - got, at + got);

		if (r == -EINTR)
			continue;
		if (r < 0)
			return r;
		if ((size_t)r < n - got)
			return (ssize_t)(got + (size_t)r);	/* a short direct read: the end */
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* Reads the unit at @at, which must be there whole. */
static int read_unit(const struct device *dev, char *p, uint64_t at)
{
	ssize_t n = read_full(dev, p, dev->dio_off_align, at);

	if (n < 0)
		return (int)n;
	return n == (ssize_t)dev->dio_off_align ? 0 : -EIO;
}

/* The caller's bytes among the first @n of [a, ...) that hold [off, end). */
static ssize_t of_caller(ssize_t n, uint64_t a, uint64_t off, uint64_t end)
{
	if (n < 0)
		return n;
	if ((uint64_t)n <= off - a)
		return 0;
	return (uint64_t)n - (off - a) < end - off ? (ssize_t)((uint64_t)n - (off - a))
						   : (ssize_t)(end - off);
}

static ssize_t bounce_read(struct device *dev, char *buf, size_t len, uint64_t off)
{
	uint64_t a, end, b;
	char *bounce;
	ssize_t n;

	cover(dev, off, len, &a, &end, &b);
	bounce = bounce_alloc(b - a);
	if (!bounce)
		return -ENOMEM;
	n = of_caller(read_full(dev, bounce, b - a, a), a, off, end);
	if (n > 0)
		memcpy(buf, bounce + (off - a), (size_t)n);
	free(bounce);
	return n;
}

/*
 * A write whose buffer only is off: copied, and written sharing the lock.
 * A write that starts or ends inside a unit: its first and last units are
 * read, patched and written back, the units held alone meanwhile.
 */
static ssize_t bounce_write(struct device *dev, const char *buf, size_t len, uint64_t off)
{
	uint64_t a, end, b, unit = dev->dio_off_align;
	struct rangelock_range r;
	char *bounce;
	ssize_t n = 0;

	cover(dev, off, len, &a, &end, &b);
	bounce = bounce_alloc(b - a);
	if (!bounce)
		return -ENOMEM;
	if (off == a && end == b) {
		rangelock_share(dev->lock, &r, a, b - a);
	} else {
		rangelock_lock(dev->lock, &r, a, b - a);
		if (off != a)
			n = read_unit(dev, bounce, a);
		if (!n && end != b && (off == a || b - unit != a))
			n = read_unit(dev, bounce + (b - unit - a), b - unit);
	}
	if (!n) {
		memcpy(bounce + (off - a), buf, end - off);
		n = of_caller(raw_pwrite(dev, bounce, b - a, a), a, off, end);
	}
	rangelock_unlock(dev->lock, &r);
	free(bounce);
	return n;
}

ssize_t direct_pread(struct device *dev, void *buf, size_t len, uint64_t off)
{
	if (!device_unbuffered(dev))
		return result(pread(dev->fd, buf, len, (off_t)off));
	if (direct_aligned(dev, off, len, buf))
		return raw_pread(dev, buf, len, off);
	return bounce_read(dev, buf, len, off);
}

static ssize_t pwrite_any(struct device *dev, const void *buf, size_t len, uint64_t off)
{
	struct rangelock_range r;
	ssize_t n;

	if (!device_unbuffered(dev))
		return result(pwrite(dev->fd, buf, len, (off_t)off));
	if (!direct_aligned(dev, off, len, buf))
		return bounce_write(dev, buf, len, off);
	rangelock_share(dev->lock, &r, off, len);
	n = raw_pwrite(dev, buf, len, off);
	rangelock_unlock(dev->lock, &r);
	return n;
}

ssize_t direct_pwrite(struct device *dev, const void *buf, size_t len, uint64_t off)
{
	ssize_t n = pwrite_any(dev, buf, len, off);

	device_note_write(dev);		/* a failed write may have reached some sectors */
	return n;
}
