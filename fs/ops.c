#include "ops.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "fuse_abi.h"
#include "log.h"
#include "pool.h"
#include "proc.h"
#include "rcu.h"
#include "size.h"
#include "stop.h"
#include "transport.h"
#include "volset.h"
#include "volume.h"
#include "worker.h"

#define FILE_BLKSIZE	65536		/* st_blksize: the I/O size we like */
#define NAME_MAX_LEN	64

static struct daemon *daemon_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* The volume of an open file: its handle is the volume (mfs_open). */
static struct volume *volume_of(uint64_t fh)
{
	return (struct volume *)(uintptr_t)fh;
}

static struct volume *fh_volume(struct fuse_file_info *fi)
{
	return volume_of(fi->fh);
}

/* The root's times are the daemon's start: its volume set is the pool's, served since. */
static void fill_root_attr(struct daemon *d, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_mtim = daemon_started(d);
	st->st_ctim = st->st_mtim;
	st->st_atim = st->st_mtim;
	st->st_ino = ROOT_INO;
	st->st_mode = S_IFDIR | 0755;
	st->st_nlink = 2;
	st->st_uid = daemon_uid(d);
	st->st_gid = daemon_gid(d);
}

/*
 * mtime is the last write (recorded at shutdown, so it survives a
 * restart), ctime and birth the volume's creation; a read-only volume is
 * mode 0400.
 */
static void fill_volume_attr(struct daemon *d, struct volume *v, struct stat *st)
{
	int64_t modified = atomic_load_explicit(&v->modified, memory_order_relaxed);

	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)v->id + 1;
	st->st_mode = S_IFREG | (atomic_load(&v->read_only) ? 0400 : 0600);
	st->st_mtim.tv_sec = (time_t)modified;
	st->st_atim.tv_sec = (time_t)modified;
	st->st_ctim.tv_sec = (time_t)v->created;
	st->st_nlink = 1;
	st->st_uid = daemon_uid(d);
	st->st_gid = daemon_gid(d);
	st->st_size = (off_t)atomic_load(&v->size);
	st->st_blocks = (blkcnt_t)(volume_mapped_bytes(v) / 512);
	st->st_blksize = FILE_BLKSIZE;
}

static void mfs_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_write = WORKER_MAX_IO;
	conn->max_readahead = WORKER_MAX_IO;
	conn->max_background = OPS_MAX_BACKGROUND;
	conn->congestion_threshold = OPS_MAX_BACKGROUND * 3 / 4;
	conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
			FUSE_CAP_SPLICE_MOVE | FUSE_CAP_WRITEBACK_CACHE);
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/*
	 * Shared mmap of a direct_io file (kernel 6.6+; ENODEV without it).
	 * The kernel keeps the mapping's pages coherent with direct reads
	 * and writes; libfuse 3.14 cannot ask for it, the transport can.
	 */
	transport_want_init_flags(FUSE_DIRECT_IO_ALLOW_MMAP);
}

static void mfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct daemon *d = daemon_of(req);
	struct fuse_entry_param e = { 0 };
	struct volume *v;

	if (parent != ROOT_INO) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	rcu_read_begin();
	v = volset_find_name(pool_served(daemon_pool(d)), name);
	if (v) {
		e.ino = (fuse_ino_t)v->id + 1;
		fill_volume_attr(d, v, &e.attr);
	}
	rcu_read_end();
	if (!v) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fuse_reply_entry(req, &e);
}

static void mfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct daemon *d = daemon_of(req);
	struct volume *v;
	struct stat st;

	(void)fi;
	if (ino == ROOT_INO) {
		fill_root_attr(d, &st);
		fuse_reply_attr(req, &st, 0);
		return;
	}
	rcu_read_begin();
	v = volset_find_id(pool_served(daemon_pool(d)), (int64_t)ino - 1);
	if (v)
		fill_volume_attr(d, v, &st);
	rcu_read_end();
	if (!v)
		fuse_reply_err(req, ENOENT);
	else
		fuse_reply_attr(req, &st, 0);
}

/*
 * A volume file is a disk that only grows, and a truncate says so:
 *   - to its size: nothing (O_TRUNC of an empty change, qemu-img resize);
 *   - to 0, by ftruncate or by open(O_TRUNC): the volume is emptied, every
 *     block discarded so that it reads zeros, and keeps its size.  A file
 *     on ext4 loses its bytes so; a disk would keep them.  We side with
 *     the file, because the tools that write images into files count on
 *     it: `qemu-img create -f raw` and `qemu-img convert` (without -n)
 *     ftruncate the file to 0, then to the image's size, and convert then
 *     skips the image's zeros, trusting a new file to read zeros (its
 *     has_zero_init); `cp` and `dd` (without conv=notrunc) open with
 *     O_TRUNC, then write only the data of a sparse source.  A truncate
 *     that kept the old bytes would leave them showing through every
 *     image written so.  An emptying is a loss of data, so the log says
 *     which volume, how much, and who asked (pid, command); it is refused
 *     (EBUSY) while another file has the volume open, as a loop device's
 *     file system must not vanish, and on a read-only volume (EROFS);
 *   - larger: the volume grows online, as `mapperctl extend` (the pool
 *     service; ENOSPC where there is no room), to exactly that size: a
 *     striped volume's not in whole rows is EINVAL, never rounded up;
 *   - smaller, where the administrator allowed it on the volume (`set
 *     --allow-shrink on`): the volume shrinks as `mapperctl reduce` does
 *     (thin: its blocks past the end unmapped; linear and striped: its
 *     extents past the end freed), though this file has it open, so that
 *     `qemu-img resize --shrink` works; refused (EBUSY) while another file
 *     has it open, and for a mirror (EOPNOTSUPP) or a volume being moved
 *     (EBUSY), the log says why;
 *   - smaller, elsewhere: EPERM, as for unlink and rename: a volume's size
 *     and name are the pool's, changed by mapperctl, and the daemon's log
 *     says why; unless all it would cut off is zeros the daemon knows of
 *     (emptied, not written since): then it succeeds and the volume keeps
 *     its size, so `qemu-img convert` into a larger volume (truncate to 0,
 *     then to the image's size) and `cp` of a smaller sparse file work.
 * mtime may be set (touch), and is kept as the last write; atime is
 * accepted and forgotten; owner and mode are fixed.
 */

/*
 * Empties @v for request @req, @how it asked ("a truncate to 0"):
 * refused while it has holders other than the @ours this request counts.
 * Blocks on the discard.  0, -EBUSY, -EROFS or -errno.
 */
static int empty_volume(fuse_req_t req, struct volume *v, int ours, const char *how)
{
	uint64_t size = atomic_load(&v->size);
	pid_t pid = fuse_req_ctx(req)->pid;
	char name[NAME_MAX_LEN + 1], comm[64], sz[SIZE_STR_LEN];
	int r;

	if (atomic_load(&v->holders) > ours)
		return -EBUSY;
	r = volume_discard(v, &worker_self()->engine, 0, size, DISCARD_ZERO);
	if (r)
		return r;
	atomic_store(&v->zeros_from, 0);
	rcu_read_begin();
	snprintf(name, sizeof(name), "%s", rcu_load(v->name));
	rcu_read_end();
	log_info("emptied volume '%s' (%s, every block discarded, it reads zeros): %s by pid %d (%s)",
		 name, format_size(size, sz), how, (int)pid,
		 *proc_comm(pid, comm, sizeof(comm)) ? comm : "gone");
	return 0;
}

static int truncate_volume(fuse_req_t req, struct volume *v, bool own_file, uint64_t size)
{
	uint64_t cur = atomic_load(&v->size);
	struct pool_error err;
	int r;

	/* Holders: ours (hold_ino), the caller's file if any, others. */
	if (size == 0 && cur > 0)
		return empty_volume(req, v, 1 + own_file, "a truncate to 0");
	/* The service takes the admin lock and waits for grace periods. */
	r = pool_truncate(daemon_pool(daemon_of(req)), v->id, size, 1 + own_file, &err);
	if (r)
		log_info("%s (truncate refused)", err.msg);	/* "volume 'x' ..." */
	else if (size > cur)	/* a linear volume's new space holds what it held */
		atomic_store(&v->zeros_from, VOLUME_ZEROS_UNKNOWN);
	return r;
}

static int set_times(struct volume *v, const struct stat *attr, int to_set)
{
	struct timespec now;

	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		clock_gettime(CLOCK_REALTIME, &now);
		atomic_store(&v->modified, (int64_t)now.tv_sec);
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		atomic_store(&v->modified, (int64_t)attr->st_mtim.tv_sec);
	}
	return 0;
}

/* The volume of @ino, held (volume_unhold after), or NULL. */
static struct volume *hold_ino(struct daemon *d, fuse_ino_t ino)
{
	struct volume *v;

	rcu_read_begin();
	v = volset_find_id(pool_served(daemon_pool(d)), (int64_t)ino - 1);
	if (v && volume_hold(v))
		v = NULL;
	rcu_read_end();
	return v;
}

static void mfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
			int to_set, struct fuse_file_info *fi)
{
	struct daemon *d = daemon_of(req);
	struct volume *v;
	struct stat st;
	int r = 0;

	if (ino == ROOT_INO) {
		fuse_reply_err(req, EPERM);
		return;
	}
	v = hold_ino(d, ino);	/* also with @fi: the same volume, held once more */
	if (!v) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))
		r = -EPERM;
	if (!r && (to_set & FUSE_SET_ATTR_SIZE))
		r = truncate_volume(req, v, fi != NULL, (uint64_t)attr->st_size);
	if (!r)
		r = set_times(v, attr, to_set);
	if (!r)
		fill_volume_attr(d, v, &st);
	volume_unhold(v);
	if (r)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, &st, 0);
}

static void mfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	struct daemon *d = daemon_of(req);
	struct volset_array *a;
	char *buf;
	size_t used = 0;

	(void)fi;
	if (ino != ROOT_INO) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* Offsets: 1 ".", 2 "..", then 3 + index of the volume. */
	rcu_read_begin();
	a = pool_served(daemon_pool(d));
	for (off_t i = off; i < (off_t)a->nr + 2; i++) {
		struct stat st = { .st_mode = S_IFREG };
		const char *name;
		size_t n;

		if (i == 0) {
			name = ".";
			st.st_ino = ROOT_INO;
			st.st_mode = S_IFDIR;
		} else if (i == 1) {
			name = "..";
			st.st_ino = ROOT_INO;
			st.st_mode = S_IFDIR;
		} else {
			name = a->v[i - 2]->name;
			st.st_ino = (ino_t)a->v[i - 2]->id + 1;
		}
		n = fuse_add_direntry(req, buf + used, size - used, name, &st, i + 1);
		if (n > size - used)
			break;
		used += n;
	}
	rcu_read_end();
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void mfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct daemon *d = daemon_of(req);
	struct volume *v;
	int err = 0;

	if (ino == ROOT_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	rcu_read_begin();
	v = volset_find_id(pool_served(daemon_pool(d)), (int64_t)ino - 1);
	err = v ? -volume_hold(v) : ENOENT;
	rcu_read_end();
	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	if (((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) &&
	    atomic_load(&v->read_only))
		err = EROFS;
	/* O_TRUNC comes here, not to setattr (libfuse asks for ATOMIC_O_TRUNC). */
	else if ((fi->flags & O_TRUNC) && atomic_load(&v->size))
		err = -empty_volume(req, v, 1, "an open with O_TRUNC");
	if (err) {
		volume_unhold(v);
		fuse_reply_err(req, err);
		return;
	}
	fi->fh = (uintptr_t)v;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fi->noflush = 1;
	transport_mark_parallel_open();
	stop_file_opened();
	if (fuse_reply_open(req, fi) == -ENOENT) {
		volume_unhold(v);	/* the opener was interrupted */
		stop_file_closed();
	}
}

static void mfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	volume_unhold(fh_volume(fi));
	stop_file_closed();
	fuse_reply_err(req, 0);
}

/*
 * Over /dev/fuse a read reply may point into a memory-backed device's
 * mapping (volume_read_iov): the kernel copies it from there, one copy.
 */
static void mfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct worker *w = worker_self();
	struct iovec iov[VOLUME_READ_IOV];
	unsigned int nr_iov;
	ssize_t n;

	(void)ino;
	if (size > WORKER_MAX_IO)
		size = WORKER_MAX_IO;
	n = volume_read_iov(fh_volume(fi), &w->engine, w->read_buf, (uint64_t)off,
			    (uint32_t)size, iov, &nr_iov);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else if (fuse_reply_iov(req, iov, (int)nr_iov) < 0)
		volume_read_lost(fh_volume(fi), (uint32_t)n);
	volume_read_done();
}

/*
 * A transport that parses requests itself reads into its own buffer,
 * whatever the device: the daemon copying from a mapping pays a page
 * fault per page on first touch (measured on a VM: 2.5 GB/s on the first
 * pass over a tmpfs device's mapping, 19 GB/s on the next; pread 15 GB/s
 * on both), while the kernel that copies a /dev/fuse reply from the
 * mapping takes the pages whole.
 */
static ssize_t io_read(uint64_t fh, uint64_t off, uint32_t size, void *buf,
		       struct volume_wait *w)
{
	struct engine *e = &worker_self()->engine;

	if (size > WORKER_MAX_IO)
		size = WORKER_MAX_IO;
	return w ? volume_read_or_wait(volume_of(fh), e, buf, off, size, w) :
		   volume_read(volume_of(fh), e, buf, off, size);
}

/*
 * A write with O_DSYNC (also set by O_SYNC and RWF_DSYNC) is durable
 * before its reply.  The files are direct_io, and for those the kernel
 * sends no FSYNC after such a write: it only passes the flag with it.
 */
static ssize_t io_write(uint64_t fh, uint64_t off, const void *buf, uint32_t size,
			uint32_t open_flags)
{
	struct volume *v = volume_of(fh);
	struct engine *e = &worker_self()->engine;
	ssize_t n;

	n = volume_write(v, e, buf, off, size);
	if (n > 0 && (open_flags & O_DSYNC)) {
		int r = volume_flush(v, e);

		if (r)
			n = r;
	}
	return n;
}

static void mfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		      off_t off, struct fuse_file_info *fi)
{
	ssize_t n = io_write(fi->fh, (uint64_t)off, buf, (uint32_t)size, (uint32_t)fi->flags);

	(void)ino;
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

static void mfs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino, (void)fi;
	fuse_reply_err(req, 0);
}

static int io_fsync(uint64_t fh)
{
	return volume_flush(volume_of(fh), &worker_self()->engine);
}

static int io_start(struct volume_io *io, uint64_t fh, bool write, uint64_t off, void *buf,
		    uint32_t size, uint32_t open_flags)
{
	if (write && (open_flags & O_DSYNC))
		return -EAGAIN;
	if (size > WORKER_MAX_IO)
		size = WORKER_MAX_IO;
	return volume_start(io, volume_of(fh), &worker_self()->engine, write, buf, off, size);
}

static ssize_t io_retry(struct volume_io *io)
{
	return volume_retry(io, &worker_self()->engine);
}

static void mfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		      struct fuse_file_info *fi)
{
	(void)ino, (void)datasync;
	fuse_reply_err(req, -io_fsync(fi->fh));
}

/*
 * With thin pools, f_bsize is the smallest thin block size: a loop device
 * takes its discard granularity from it, so discards come in whole blocks
 * that go back to the pool.  Free space counts the pools' free blocks too.
 */
static void mfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct daemon *d = daemon_of(req);
	struct statvfs sv = { 0 };
	struct pool_space space;

	(void)ino;
	pool_space(daemon_pool(d), &space);
	sv.f_bsize = space.block_size;
	sv.f_frsize = space.block_size;
	sv.f_blocks = space.total / space.block_size;
	sv.f_bfree = space.free / space.block_size;
	sv.f_bavail = sv.f_bfree;
	rcu_read_begin();
	sv.f_files = pool_served(daemon_pool(d))->nr;
	rcu_read_end();
	sv.f_namemax = NAME_MAX_LEN;
	fuse_reply_statfs(req, &sv);
}

/*
 * As a block device (blkdev_fallocate): discard and zeroing, cut at the
 * end of the volume; EINVAL for a range that starts at or past it, or
 * that would grow the file (ZERO_RANGE without KEEP_SIZE); no
 * preallocation.
 */
static void mfs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
			  off_t len, struct fuse_file_info *fi)
{
	struct engine *e = &worker_self()->engine;
	struct volume *v = fh_volume(fi);
	int r;

	(void)ino;
	if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE))
		r = volume_discard(v, e, (uint64_t)off, (uint64_t)len, DISCARD_PUNCH);
	else if (mode == FALLOC_FL_ZERO_RANGE &&
		 (uint64_t)off + (uint64_t)len > atomic_load(&v->size))
		r = -EINVAL;
	else if ((mode & ~FALLOC_FL_KEEP_SIZE) == FALLOC_FL_ZERO_RANGE)
		r = volume_discard(v, e, (uint64_t)off, (uint64_t)len, DISCARD_ZERO);
	else
		r = -EOPNOTSUPP;
	fuse_reply_err(req, -r);
}

static void mfs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		      struct fuse_file_info *fi)
{
	uint64_t at;
	int r;

	(void)ino;
	if (whence != SEEK_DATA && whence != SEEK_HOLE) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	r = volume_seek(fh_volume(fi), (uint64_t)off, whence, &at);
	if (r)
		fuse_reply_err(req, -r);
	else
		fuse_reply_lseek(req, (off_t)at);
}

/*
 * copy_file_range between two volume files of the mount: inside a thin
 * pool whole blocks are shared, not copied (pool_clone_range), so cp and
 * qemu-img convert between volumes take no space and no time per byte.
 * The pool service's lock is taken there: no RCU read section here.
 */
static void mfs_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
				struct fuse_file_info *fi_in, fuse_ino_t ino_out,
				off_t off_out, struct fuse_file_info *fi_out, size_t len,
				int flags)
{
	struct pool_copied how;
	int r;

	(void)ino_in, (void)ino_out;
	if (flags) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	r = pool_clone_range(daemon_pool(daemon_of(req)), fh_volume(fi_in), (uint64_t)off_in,
			     fh_volume(fi_out), (uint64_t)off_out, len,
			     &worker_self()->engine, &how);
	if (r)
		fuse_reply_err(req, -r);
	else
		fuse_reply_write(req, (size_t)(how.shared + how.copied + how.holes + how.zeros));
}

/*
 * The mount shows the pool's volumes; making, removing and renaming them
 * is the pool's (mapperctl create, remove, rename): one errno for all,
 * EPERM, as for a shrinking truncate.
 */
static void mfs_refuse_create(fuse_req_t req, fuse_ino_t parent, const char *name,
			      mode_t mode, struct fuse_file_info *fi)
{
	(void)parent, (void)name, (void)mode, (void)fi;
	fuse_reply_err(req, EPERM);
}

static void mfs_refuse_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent, (void)name;
	fuse_reply_err(req, EPERM);
}

static void mfs_refuse_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
			      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	(void)parent, (void)name, (void)newparent, (void)newname, (void)flags;
	fuse_reply_err(req, EPERM);
}

static void mfs_refuse_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
			     mode_t mode)
{
	(void)parent, (void)name, (void)mode;
	fuse_reply_err(req, EPERM);
}

static void mfs_refuse_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
			     mode_t mode, dev_t rdev)
{
	(void)parent, (void)name, (void)mode, (void)rdev;
	fuse_reply_err(req, EPERM);
}

static void mfs_refuse_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
			       const char *name)
{
	(void)link, (void)parent, (void)name;
	fuse_reply_err(req, EPERM);
}

static void mfs_refuse_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
			    const char *newname)
{
	(void)ino, (void)newparent, (void)newname;
	fuse_reply_err(req, EPERM);
}

const struct fuse_lowlevel_ops mapperfs_ops = {
	.init = mfs_init,
	.lookup = mfs_lookup,
	.getattr = mfs_getattr,
	.setattr = mfs_setattr,
	.readdir = mfs_readdir,
	.open = mfs_open,
	.release = mfs_release,
	.read = mfs_read,
	.write = mfs_write,
	.flush = mfs_flush,
	.fsync = mfs_fsync,
	.statfs = mfs_statfs,
	.fallocate = mfs_fallocate,
	.lseek = mfs_lseek,
	.copy_file_range = mfs_copy_file_range,
	.create = mfs_refuse_create,
	.unlink = mfs_refuse_unlink,
	.rmdir = mfs_refuse_unlink,
	.rename = mfs_refuse_rename,
	.mkdir = mfs_refuse_mkdir,
	.mknod = mfs_refuse_mknod,
	.symlink = mfs_refuse_symlink,
	.link = mfs_refuse_link,
};

const struct ops_io mapperfs_io = {
	.read = io_read,
	.write = io_write,
	.fsync = io_fsync,
	.start = io_start,
	.finish = volume_finish,
	.retry = io_retry,
};
