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
#include "pool.h"
#include "rcu.h"
#include "stop.h"
#include "transport.h"
#include "volset.h"
#include "volume.h"
#include "workers.h"

#define FILE_BLKSIZE	65536		/* st_blksize: the I/O size we like */
#define NAME_MAX_LEN	64

static struct daemon *daemon_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static struct volume *fh_volume(struct fuse_file_info *fi)
{
	return (struct volume *)(uintptr_t)fi->fh;
}

static void fill_root_attr(struct daemon *d, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ROOT_INO;
	st->st_mode = S_IFDIR | 0755;
	st->st_nlink = 2;
	st->st_uid = daemon_uid(d);
	st->st_gid = daemon_gid(d);
}

static void fill_volume_attr(struct daemon *d, struct volume *v, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)v->id + 1;
	st->st_mode = S_IFREG | 0600;
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
 * A volume's size is set with `mapperctl extend`, never by truncate; a
 * truncate to the current size (O_TRUNC on an empty change) is harmless.
 * Times are accepted and forgotten; owner and mode are fixed.
 */
static void mfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
			int to_set, struct fuse_file_info *fi)
{
	struct daemon *d = daemon_of(req);
	struct volume *v;
	struct stat st;
	int err = 0;

	(void)fi;
	rcu_read_begin();
	v = volset_find_id(pool_served(daemon_pool(d)), (int64_t)ino - 1);
	if (!v)
		err = ino == ROOT_INO ? EPERM : ENOENT;
	else if (to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))
		err = EPERM;
	else if ((to_set & FUSE_SET_ATTR_SIZE) &&
		 (uint64_t)attr->st_size != atomic_load(&v->size))
		err = EPERM;
	else
		fill_volume_attr(d, v, &st);
	rcu_read_end();
	if (err)
		fuse_reply_err(req, err);
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
 * A write with O_DSYNC (also set by O_SYNC and RWF_DSYNC) is durable
 * before its reply.  The files are direct_io, and for those the kernel
 * sends no FSYNC after such a write: it only passes the flag with it.
 */
static void mfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		      off_t off, struct fuse_file_info *fi)
{
	struct engine *e = &worker_self()->engine;
	ssize_t n;

	(void)ino;
	n = volume_write(fh_volume(fi), e, buf, (uint64_t)off, (uint32_t)size);
	if (n > 0 && (fi->flags & O_DSYNC)) {
		int r = volume_flush(fh_volume(fi), e);

		if (r)
			n = r;
	}
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

static void mfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		      struct fuse_file_info *fi)
{
	(void)ino, (void)datasync;
	fuse_reply_err(req, -volume_flush(fh_volume(fi), &worker_self()->engine));
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

/* As a block device: discard and zeroing; no preallocation to grow. */
static void mfs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
			  off_t len, struct fuse_file_info *fi)
{
	struct engine *e = &worker_self()->engine;
	int r;

	(void)ino;
	if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE))
		r = volume_discard(fh_volume(fi), e, (uint64_t)off, (uint64_t)len,
				   DISCARD_PUNCH);
	else if ((mode & ~FALLOC_FL_KEEP_SIZE) == FALLOC_FL_ZERO_RANGE)
		r = volume_discard(fh_volume(fi), e, (uint64_t)off, (uint64_t)len,
				   DISCARD_ZERO);
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
	.create = mfs_refuse_create,
	.unlink = mfs_refuse_unlink,
};
