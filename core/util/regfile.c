#include "regfile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int regfile_check(int fd)
{
	struct stat st;
	int fl;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (st.st_nlink > 1)
		return -EMLINK;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

int regfile_openat(int dir_fd, const char *name, int flags, mode_t mode, int *fd)
{
	int f = openat(dir_fd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
	int r;

	/* A FIFO without a reader, a socket, a directory: what open says of them. */
	if (f < 0)
		return errno == ENXIO || errno == EISDIR ? -EINVAL : -errno;
	r = regfile_check(f);
	if (r) {
		close(f);
		return r;
	}
	*fd = f;
	return 0;
}

int regfile_open(const char *path, int flags, mode_t mode, int *fd)
{
	return regfile_openat(AT_FDCWD, path, flags, mode, fd);
}

const char *regfile_strerror(int r)
{
	switch (r) {
	case -ELOOP:
		return "a symbolic link, not followed";
	case -EINVAL:
		return "not a regular file";
	case -EMLINK:
		return "a hard link (the file has other names)";
	default:
		return strerror(-r);
	}
}
