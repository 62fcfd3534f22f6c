/*
 * bench/naive.c: mapperfs-naive-bench, the floor bench/fresh.sh compares
 * mapperfs against: the libfuse daemon a user would write in an afternoon
 * to serve part of a file as a disk image.
 *
 *   mapperfs-naive-bench -o backing=PATH,offset=BYTES,size=BYTES,name=NAME
 *                        [-o pidfile=PATH] [-f] [FUSE options] MOUNTPOINT
 *
 * One regular file NAME whose bytes are [offset, offset + size) of PATH,
 * served by libfuse's high-level API with its default multi-threaded loop,
 * each request one plain pread, pwrite or fsync on PATH (buffered, as a
 * naive author opens it).  Opens are direct_io, so O_DIRECT and direct-I/O
 * loop devices work on NAME and no page cache hides the daemon.
 *
 * Deliberately not optimised: no splice, no io_uring, no lowlevel tricks.
 * What it adds to libfuse's example is what a harness needs: without -f it
 * forks first and the parent exits only once the child has mounted and
 * written its pid file, so the caller can use the mount at once and stop
 * the daemon (fusermount3 -u, then wait for the pid).
 */
#define FUSE_USE_VERSION 312
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>	/* fuse_parse_cmdline */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct naive {
	char *backing, *name, *pidfile;
	unsigned long long offset, size;	/* bytes */
	int fd;
} vol;

static const struct fuse_opt naive_opts[] = {
	{ "backing=%s", offsetof(struct naive, backing), 0 },
	{ "name=%s", offsetof(struct naive, name), 0 },
	{ "pidfile=%s", offsetof(struct naive, pidfile), 0 },
	{ "offset=%llu", offsetof(struct naive, offset), 0 },
	{ "size=%llu", offsetof(struct naive, size), 0 },
	FUSE_OPT_END
};

static int naive_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	memset(st, 0, sizeof(*st));
	if (strcmp(path, "/") == 0) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else if (strcmp(path + 1, vol.name) == 0) {
		st->st_mode = S_IFREG | 0600;
		st->st_nlink = 1;
		st->st_size = vol.size;
	} else {
		return -ENOENT;
	}
	return 0;
}

static int naive_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
			 struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)off, (void)fi, (void)flags;
	if (strcmp(path, "/") != 0)
		return -ENOTDIR;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, vol.name, NULL, 0, 0);
	return 0;
}

static int naive_open(const char *path, struct fuse_file_info *fi)
{
	if (strcmp(path + 1, vol.name) != 0)
		return -ENOENT;
	fi->direct_io = 1;
	return 0;
}

static int naive_read(const char *path, char *buf, size_t len, off_t off,
		      struct fuse_file_info *fi)
{
	ssize_t n;

	(void)path, (void)fi;
	if ((unsigned long long)off >= vol.size)
		return 0;
	if (len > vol.size - off)
		len = vol.size - off;
	n = pread(vol.fd, buf, len, vol.offset + off);
	return n < 0 ? -errno : n;
}

static int naive_write(const char *path, const char *buf, size_t len, off_t off,
		       struct fuse_file_info *fi)
{
	ssize_t n;

	(void)path, (void)fi;
	if ((unsigned long long)off >= vol.size)
		return -ENOSPC;
	if (len > vol.size - off)
		len = vol.size - off;
	n = pwrite(vol.fd, buf, len, vol.offset + off);
	return n < 0 ? -errno : n;
}

static int naive_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path, (void)fi;
	return (datasync ? fdatasync(vol.fd) : fsync(vol.fd)) ? -errno : 0;
}

static const struct fuse_operations naive_ops = {
	.getattr = naive_getattr,
	.readdir = naive_readdir,
	.open = naive_open,
	.read = naive_read,
	.write = naive_write,
	.fsync = naive_fsync,
};

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts;
	int ready[2] = { -1, -1 }, r;
	struct fuse *fuse;
	pid_t pid;
	FILE *f;
	char c;

	if (fuse_opt_parse(&args, &vol, naive_opts, NULL) || fuse_parse_cmdline(&args, &opts) ||
	    !opts.mountpoint || !vol.backing || !vol.name || !vol.size) {
		fprintf(stderr, "usage: %s -o backing=PATH,offset=BYTES,size=BYTES,name=NAME"
			" [-o pidfile=PATH] [-f] MOUNTPOINT\n", argv[0]);
		return 2;
	}
	vol.fd = open(vol.backing, O_RDWR);
	if (vol.fd < 0) {
		perror(vol.backing);
		return 1;
	}
	if (!opts.foreground) {		/* the parent returns once the child is mounted */
		if (pipe(ready) || (pid = fork()) < 0)
			return 1;
		if (pid > 0) {
			close(ready[1]);
			return read(ready[0], &c, 1) == 1 ? 0 : 1;
		}
		close(ready[0]);
		setsid();
	}
	fuse = fuse_new(&args, &naive_ops, sizeof(naive_ops), NULL);
	if (!fuse || fuse_mount(fuse, opts.mountpoint))
		return 1;
	fuse_set_signal_handlers(fuse_get_session(fuse));
	if (vol.pidfile && (f = fopen(vol.pidfile, "w"))) {
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
	}
	if (ready[1] >= 0 && write(ready[1], "", 1) != 1)
		return 1;
	r = fuse_loop_mt(fuse, NULL);	/* until unmounted or signalled */
	fuse_remove_signal_handlers(fuse_get_session(fuse));
	fuse_unmount(fuse);
	fuse_destroy(fuse);
	return r ? 1 : 0;
}
