#include "transport.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <unistd.h>

#define FOPEN_PARALLEL_DIRECT_WRITES	(1u << 6)	/* linux/fuse.h, 7.36 */

struct open_out {				/* struct fuse_open_out */
	uint64_t fh;
	uint32_t open_flags;
	int32_t backing_id;
};

static __thread bool parallel_open_pending;

void transport_mark_parallel_open(void)
{
	parallel_open_pending = true;
}

static ssize_t transport_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	(void)userdata;
	if (parallel_open_pending) {
		parallel_open_pending = false;
		/* iov[0] is the out header, iov[1] the handler's own open_out. */
		if (count == 2 && iov[1].iov_len == sizeof(struct open_out))
			((struct open_out *)iov[1].iov_base)->open_flags |=
				FOPEN_PARALLEL_DIRECT_WRITES;
	}
	return writev(fd, iov, count);
}

static ssize_t transport_read(int fd, void *buf, size_t len, void *userdata)
{
	(void)userdata;
	return read(fd, buf, len);
}

static const struct fuse_custom_io transport_io = {
	.writev = transport_writev,
	.read = transport_read,
};

int transport_install(struct fuse_session *se)
{
	return fuse_session_custom_io(se, &transport_io, fuse_session_fd(se));
}
