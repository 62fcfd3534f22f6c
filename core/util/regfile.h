/*
 * core/util/regfile.h: opening a file that someone else may have put in place,
 * as a regular file or not at all.
 *
 * A root daemon serves pool directories that other users own, and opens
 * the files in them by name (the log, the pid file, the lock, the
 * database).  Whoever owns the directory can put anything under those
 * names: a symbolic link to /etc/shadow, a FIFO that blocks open(2) for
 * good, a hard link to a file of root's.  So such a file is opened
 * without following a link (O_NOFOLLOW) and without waiting for a FIFO's
 * other end (O_NONBLOCK, cleared once open), and then refused unless
 * fstat(2) says it is a regular file with no other name: nothing is
 * written or truncated before that check (the caller truncates after).
 */
#ifndef MAPPERFS_REGFILE_H
#define MAPPERFS_REGFILE_H

#include <sys/types.h>

/*
 * Opens @path with @flags (O_CLOEXEC is added) and @mode, as above, into
 * *fd.  Never blocks on a FIFO.  0, -ELOOP (a symbolic link), -EINVAL
 * (not a regular file: a FIFO, a socket, a device, a directory), -EMLINK
 * (it has other names), or the -errno of open(2).
 */
int regfile_open(const char *path, int flags, mode_t mode, int *fd);
/* The same for @name in the directory open as @dir_fd (openat(2)). */
int regfile_openat(int dir_fd, const char *name, int flags, mode_t mode, int *fd);
/*
 * Checks that @fd, just opened with O_NONBLOCK, is a regular file with
 * one name, and clears O_NONBLOCK.  0, -EINVAL, -EMLINK or -errno.
 */
int regfile_check(int fd);
/* The reason for an error of the above: "not a regular file", or strerror(). */
const char *regfile_strerror(int r);

#endif
