/*
 * tools/cmd_output.c: the file a command writes (dump -o F), opened by
 * mapperctl with its caller's rights before the command runs, and handed
 * to the daemon or to the command run here (cmd.h, output_option).
 *
 * Nothing reaches F before the command has succeeded.  A regular file F,
 * or one that does not exist yet, is replaced the way git replaces a file
 * through its lockfile and `sort -o` its output: the command writes a new
 * temporary in F's directory (O_EXCL; 0600, or F's mode), which is synced
 * and renamed onto F once the command succeeded, and removed if it
 * failed.  F is never truncated, so a dump that fails (no such pool, a
 * full disk, a daemon that went away) leaves F, and every other name it
 * has, byte for byte.  A file that is not regular (a pipe, a terminal, a
 * FIFO, /dev/null) cannot be replaced; it is written directly, from a
 * memory file once the command succeeded, so the daemon never waits on a
 * reader; except by a command that streams (send: a stream may be larger
 * than memory), which writes it itself, at its reader's pace.
 *
 * Some files are not to be written at all, and are refused in one line
 * before anything happens: the pool's own files (pool.db replaced by a
 * dump is a pool lost, rename or not), a raw device of any pool (its
 * label says so: a dump over it loses the data of every volume on it),
 * and a file of a mapperfs mount (a volume, which the dump would
 * overwrite; and a directory there, where no file can be created).  A
 * symbolic link is not followed, except the caller's own descriptors:
 * /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N name what the
 * caller's shell opened, so they are duplicated, not opened again, and
 * mean what it set up (a pipe, a terminal, a file opened to append).
 * A loop device over a volume is refused as the volume is.
 *
 * A temporary that a signal would leave behind (SIGINT, SIGTERM, SIGHUP,
 * SIGQUIT, SIGPIPE: mapperctl is killed while the daemon dumps) is
 * removed by a handler, which then lets the signal end the process as it
 * would have; only SIGKILL leaves one, as git leaves a stale lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/loop.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cmd.h"
#include "cmd_parse.h"
#include "device.h"

#define FUSE_SUPER_MAGIC	0x65735546	/* statfs f_type of every FUSE mount */

/* What a pool directory holds besides raw device files (fs/main.c, meta/, wire.h). */
static const char *const pool_files[] = {
	"pool.db", "pool.db-wal", "pool.db-shm", "pool.db-journal",
	"mapperfs.log", "mapperfs.pid", "lock", "control.sock",
};

/* A last component the pool directory keeps, now or in a later version. */
static bool pool_file_name(const char *base)
{
	return !strncmp(base, "pool.db", 7) || !strncmp(base, "mapperfs.", 9) ||
	       !strcmp(base, "lock") || !strcmp(base, "control.sock");
}

/*
 * Is the output the pool's own file: a name of it in @pool_dir (@dir and
 * @base; NULL for a descriptor), or another name of one of its files
 * (@st, a hard link; NULL if none exists yet)?
 */
static bool pool_own(const char *pool_dir, const char *dir, const char *base,
		     const struct stat *st)
{
	char path[PATH_MAX];
	struct stat pd, d, own;

	if (!pool_dir || stat(pool_dir, &pd))
		return false;
	if (dir && pool_file_name(base) && !stat(dir, &d) && device_same_file(&d, &pd))
		return true;
	for (size_t i = 0; st && i < sizeof(pool_files) / sizeof(pool_files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", pool_dir, pool_files[i]);
		if (!lstat(path, &own) && device_same_file(&own, st))
			return true;
	}
	return false;
}

/* Is @dev the device of a fuse.mapperfs mount (/proc/self/mountinfo)? */
static bool mapperfs_dev(dev_t dev)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	size_t cap = 0;
	char *line = NULL;
	bool found = false;

	if (!f)
		return false;
	while (!found && getline(&line, &cap, f) > 0) {
		const char *fstype = strstr(line, " - ");
		unsigned int maj, min;

		found = fstype && !strncmp(fstype + 3, "fuse.mapperfs ", 14) &&
			sscanf(line, "%*s %*s %u:%u", &maj, &min) == 2 && makedev(maj, min) == dev;
	}
	free(line);
	fclose(f);
	return found;
}

/* Is what @fd is (O_PATH will do) on a mapperfs mount? */
static bool on_mapperfs(int fd)
{
	struct statfs sf;
	struct stat st;

	return !fstatfs(fd, &sf) && sf.f_type == FUSE_SUPER_MAGIC && !fstat(fd, &st) &&
	       mapperfs_dev(st.st_dev);
}

/* Is @path (opened with @flags) a loop device over a file of a mapperfs mount? */
static bool loop_on_mapperfs(const char *path, int flags)
{
	struct loop_info64 li;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | flags);
	bool on;

	if (fd < 0)
		return false;
	on = !ioctl(fd, LOOP_GET_STATUS64, &li) && mapperfs_dev((dev_t)li.lo_device);
	close(fd);
	return on;
}

/* Does @path (opened with @flags) carry a mapperfs label, damaged or not? */
static bool labelled(const char *path, int flags)
{
	struct device_label l;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | flags), r;

	if (fd < 0)
		return false;
	r = device_label_read_fd(fd, &l);
	close(fd);
	return r == 0 || r == -EBADMSG;
}

/*
 * Refuses the existing file @name (@st; @fd an O_PATH or open descriptor
 * of it; @dir/@base its names, or NULL for a descriptor of the caller's;
 * @read_path with @read_flags opens it for reading) if it is not to be
 * written.  0, or -errno with @err set.
 */
static int refuse_existing(const char *pool_dir, const char *name, const struct stat *st, int fd,
			   const char *dir, const char *base, const char *read_path,
			   int read_flags, struct pool_error *err)
{
	if (S_ISDIR(st->st_mode))
		return pool_fail(err, -EISDIR, "cannot write '%s': %s", name, strerror(EISDIR));
	if (pool_own(pool_dir, dir, base, st))
		return pool_fail(err, -EINVAL, "refusing to write '%s': it is the pool's own file",
				 name);
	if (on_mapperfs(fd))
		return pool_fail(err, -EINVAL, "refusing to write '%s': it is a file of a mapperfs mount (a volume)",
				 name);
	if (S_ISBLK(st->st_mode) && loop_on_mapperfs(read_path, read_flags))
		return pool_fail(err, -EINVAL, "refusing to write '%s': it is a loop device over a file of a mapperfs mount (a volume)",
				 name);
	if ((S_ISREG(st->st_mode) || S_ISBLK(st->st_mode)) && labelled(read_path, read_flags))
		return pool_fail(err, -EINVAL, "refusing to write '%s': it carries a mapperfs device label (a pool's raw device)",
				 name);
	return 0;
}

/*
 * The caller's own descriptor that @path names (NULL: standard output),
 * or -1.
 */
static int caller_fd(const char *path)
{
	static const char *const dirs[] = { "/dev/fd/", "/proc/self/fd/" };

	if (!path || !strcmp(path, "/dev/stdout"))
		return STDOUT_FILENO;
	if (!strcmp(path, "/dev/stderr"))
		return STDERR_FILENO;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		const char *n = path + strlen(dirs[i]);
		char *end;
		long fd;

		if (strncmp(path, dirs[i], strlen(dirs[i])) || *n < '0' || *n > '9')
			continue;
		errno = 0;
		fd = strtol(n, &end, 10);
		if (!*end && !errno && fd <= INT_MAX)
			return (int)fd;
	}
	return -1;
}

/*
 * Writes to @fd (not a regular file) through a memory file, copied out
 * after; a command that @streams writes it directly.
 */
static int through_memory(int fd, const char *name, bool streams, struct cmd_output *out,
			  struct pool_error *err)
{
	int mem, r;

	if (streams) {
		out->fd = fd;
		return 0;
	}
	mem = memfd_create("mapperctl-output", MFD_CLOEXEC);
	if (mem < 0) {
		r = -errno;
		close(fd);
		return pool_fail(err, r, "cannot write '%s': %s", name, strerror(-r));
	}
	out->fd = mem;
	out->dest = fd;
	return 0;
}

/* Opens descriptor @n of the caller, which @name names. */
static int open_caller(const char *pool_dir, const char *name, int n, bool streams,
		       struct cmd_output *out, struct pool_error *err)
{
	int fd = fcntl(n, F_DUPFD_CLOEXEC, 0), r;
	char read_path[64];
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0) {
		r = pool_fail(err, -errno, "cannot write '%s': %s", name, strerror(errno));
		if (fd >= 0)
			close(fd);
		return r;
	}
	snprintf(read_path, sizeof(read_path), "/proc/self/fd/%d", fd);
	r = refuse_existing(pool_dir, name, &st, fd, NULL, NULL, read_path, 0, err);
	if (r) {
		close(fd);
		return r;
	}
	if (S_ISREG(st.st_mode)) {	/* the caller's file, at the caller's offset */
		out->fd = fd;
		return 0;
	}
	return through_memory(fd, name, streams, out, err);
}

/* The temporary a signal must not leave behind, or NULL; and the signals. */
static const char *volatile pending_tmp;
static const int tmp_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE };
#define NR_TMP_SIGNALS (sizeof(tmp_signals) / sizeof(tmp_signals[0]))
static struct sigaction before_tmp[NR_TMP_SIGNALS];	/* put back after */

/* Removes the temporary, then lets @sig do what it would have done. */
static void remove_tmp_and_reraise(int sig)
{
	const char *tmp = pending_tmp;

	if (tmp)
		unlink(tmp);		/* async-signal-safe */
	signal(sig, SIG_DFL);
	raise(sig);
}

/*
 * Watches for the signals while @tmp exists; NULL: no longer, and their
 * handling is as it was.
 */
static void guard_tmp(const char *tmp)
{
	struct sigaction sa = { .sa_handler = remove_tmp_and_reraise };

	pending_tmp = tmp;
	for (size_t i = 0; i < NR_TMP_SIGNALS; i++) {
		if (tmp)
			sigaction(tmp_signals[i], &sa, &before_tmp[i]);
		else
			sigaction(tmp_signals[i], &before_tmp[i], NULL);
	}
}

/*
 * Creates the temporary that will replace @base in @dir: beside it, so
 * that rename() moves it there whole; @st is the file it replaces, whose
 * mode (and owner, if allowed) it takes, or NULL.
 */
static int open_temporary(const char *dir, const char *base, const struct stat *st,
			  struct cmd_output *out, struct pool_error *err)
{
	int keep = (int)strnlen(base, NAME_MAX - 8);	/* "." base ".XXXXXX" */
	sigset_t guarded, was;
	char *tmp;
	int fd;

	if (asprintf(&tmp, "%s/.%.*s.XXXXXX", dir, keep, base) < 0)
		return pool_fail(err, -ENOMEM, "out of memory");
	/* Held back until it is guarded, so that no signal leaves it behind. */
	sigemptyset(&guarded);
	for (size_t i = 0; i < NR_TMP_SIGNALS; i++)
		sigaddset(&guarded, tmp_signals[i]);
	sigprocmask(SIG_BLOCK, &guarded, &was);
	fd = mkostemp(tmp, O_CLOEXEC);		/* O_EXCL, 0600 */
	if (fd >= 0)
		guard_tmp(tmp);
	sigprocmask(SIG_SETMASK, &was, NULL);
	if (fd < 0) {
		int r = -errno;

		free(tmp);
		return pool_fail(err, r, "cannot create a file in '%s': %s", dir, strerror(-r));
	}
	if (st) {
		/* Best effort, as cp -p: a file of another user becomes the caller's. */
		int ignored = st->st_uid == geteuid() && st->st_gid == getegid() ? 0 :
			      fchown(fd, st->st_uid, st->st_gid);

		ignored = fchmod(fd, st->st_mode & 07777);
		(void)ignored;
	}
	out->fd = fd;
	out->tmp = tmp;
	return 0;
}

/* Opens @path, which the caller named: not through a link. */
static int open_path(const char *pool_dir, const char *path, bool streams,
		     struct cmd_output *out, struct pool_error *err)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	char dir[PATH_MAX];
	struct stat st;
	int fd, r;

	if (strlen(path) >= sizeof(dir))
		return pool_fail(err, -ENAMETOOLONG, "cannot write '%s': %s", path,
				 strerror(ENAMETOOLONG));
	if (!slash)
		strcpy(dir, ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);

	r = lstat(path, &st) < 0 ? -errno : 0;
	if (r && r != -ENOENT)
		return pool_fail(err, r, "cannot write '%s': %s", path, strerror(-r));
	if (r) {
		if (!*base)
			return pool_fail(err, -EISDIR, "cannot write '%s': %s", path, strerror(EISDIR));
		if (pool_own(pool_dir, dir, base, NULL))
			return pool_fail(err, -EINVAL, "refusing to write '%s': it is the pool's own file",
					 path);
		fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		r = fd >= 0 && on_mapperfs(fd);
		if (fd >= 0)
			close(fd);
		if (r)
			return pool_fail(err, -EPERM, "cannot create a file in '%s': it is a mapperfs mount",
					 dir);
		return open_temporary(dir, base, NULL, out, err);
	}
	if (S_ISLNK(st.st_mode))
		return pool_fail(err, -ELOOP, "refusing to write '%s': it is a symbolic link (name the file it points to)",
				 path);

	fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return pool_fail(err, -errno, "cannot write '%s': %s", path, strerror(errno));
	r = refuse_existing(pool_dir, path, &st, fd, dir, base, path, O_NOFOLLOW, err);
	close(fd);
	if (r)
		return r;
	if (S_ISREG(st.st_mode))
		return open_temporary(dir, base, &st, out, err);

	fd = open(path, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return pool_fail(err, -errno, "cannot write '%s': %s", path, strerror(errno));
	return through_memory(fd, path, streams, out, err);
}

int cmd_open_output(const struct cmd *c, const char *pool_dir, int argc, char **argv,
		    struct cmd_output *out, struct pool_error *err)
{
	const char *path = c->output_option ? cmd_option_value(c, argc, argv, c->output_option) : NULL;
	int n;

	*out = (struct cmd_output)CMD_OUTPUT_INIT;
	if (!c->output_option)
		return 0;
	if (path && !strcmp(path, "-"))
		path = NULL;
	out->path = path;
	n = caller_fd(path);
	if (n >= 0)
		return open_caller(pool_dir, path ? path : "standard output", n, c->streams, out,
				   err);
	return open_path(pool_dir, path, c->streams, out, err);
}

/* Copies memory file @mem, from its start, to @dest. */
static int copy_out(int mem, int dest, const char *name, struct pool_error *err)
{
	static char buf[1 << 16];
	off_t at = 0;
	ssize_t n;

	while ((n = pread(mem, buf, sizeof(buf), at)) > 0) {
		for (ssize_t done = 0, w; done < n; done += w) {
			w = write(dest, buf + done, (size_t)(n - done));
			if (w < 0 && errno == EINTR)
				w = 0;
			else if (w < 0)
				return pool_fail(err, -errno, "cannot write '%s': %s", name,
						 strerror(errno));
		}
		at += n;
	}
	if (n < 0)
		return pool_fail(err, -errno, "cannot write '%s': %s", name, strerror(errno));
	return 0;
}

/* Syncs the directory of @path, so that a rename into it lasts; best effort. */
static void sync_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	int fd;

	snprintf(dir, sizeof(dir), "%.*s", !slash ? 1 : slash == path ? 1 : (int)(slash - path),
		 slash ? path : ".");
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

int cmd_close_output(struct cmd_output *o, int status, struct pool_error *err)
{
	const char *name = o->path ? o->path : "standard output";
	bool ok = status == CMD_OK;
	int r = 0;

	if (o->fd < 0)
		return 0;
	if (o->dest >= 0) {
		if (ok)
			r = copy_out(o->fd, o->dest, name, err);
		close(o->dest);
	}
	if (ok && o->tmp && fsync(o->fd))
		r = pool_fail(err, -errno, "cannot write '%s': %s", name, strerror(errno));
	if (close(o->fd) && ok && !r && o->dest < 0)
		r = pool_fail(err, -errno, "cannot write '%s': %s", name, strerror(errno));
	if (ok && !r && o->tmp && rename(o->tmp, o->path))
		r = pool_fail(err, -errno, "cannot replace '%s': %s", name, strerror(errno));
	if (o->tmp && (!ok || r))
		unlink(o->tmp);		/* the file named is as it was */
	else if (o->tmp)
		sync_dir(o->path);
	if (o->tmp)
		guard_tmp(NULL);
	free(o->tmp);
	*o = (struct cmd_output)CMD_OUTPUT_INIT;
	return r;
}
