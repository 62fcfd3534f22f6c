/*
 * The control channel carries a command line one way and its result the
 * other, one exchange per connection, so neither side needs a parser
 * beyond this framing.  The request's strings carry no lengths: the
 * receiver reads until it has seen argc NULs, and since the client sends
 * nothing more before the reply, anything after them is a protocol error.
 */
#include "wire.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define WIRE_MAGIC	"MPFS"
#define WIRE_HDR	8		/* bytes: magic and argc */

/* send() spares the daemon a SIGPIPE when a client went away. */
static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == ENOTSOCK)
			n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The deadline @timeout_ms from now (CLOCK_MONOTONIC, ms); 0 for -1: none. */
static uint64_t deadline_in(int timeout_ms)
{
	return timeout_ms < 0 ? 0 : now_ms() + (uint64_t)timeout_ms;
}

/* Until @fd has bytes (or an end): 0, or -ETIMEDOUT past @deadline (0: none). */
static int wait_readable(int fd, uint64_t deadline)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint64_t now;
	int n;

	if (!deadline)
		return 0;
	do {
		now = now_ms();
		if (now >= deadline)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)(deadline - now));
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n ? 0 : -ETIMEDOUT;
}

/*
 * Short read at end of stream: -EPROTO, the peer broke off mid-message;
 * -ETIMEDOUT if @deadline (0: none) passes first.
 */
static int read_all(int fd, void *buf, size_t len, uint64_t deadline)
{
	char *p = buf;

	while (len) {
		int r = wait_readable(fd, deadline);
		ssize_t n;

		if (r)
			return r;
		n = read(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EPROTO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_u32(int fd, uint32_t v)
{
	uint32_t le = htole32(v);

	return write_all(fd, &le, sizeof(le));
}

static int read_u32(int fd, uint32_t *v)
{
	uint32_t le;
	int r = read_all(fd, &le, sizeof(le), 0);

	if (!r)
		*v = le32toh(le);
	return r;
}

/* The magic, with @file attached to its bytes. */
static int write_magic_with(int fd, int file)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl = { 0 };
	struct iovec iov = { .iov_base = (void *)WIRE_MAGIC, .iov_len = 4 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			    .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	ssize_t n;

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &file, sizeof(int));
	do
		n = sendmsg(fd, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return write_all(fd, &WIRE_MAGIC[n], 4 - (size_t)n);
}

int wire_send_request(int fd, int argc, char *const *argv, int file)
{
	size_t total = WIRE_HDR;
	int r;

	if (argc < 0)
		return -EINVAL;
	for (int i = 0; i < argc; i++) {
		total += strlen(argv[i]) + 1;
		if (total > WIRE_MAX)
			return -EMSGSIZE;
	}
	r = file >= 0 ? write_magic_with(fd, file) : write_all(fd, WIRE_MAGIC, 4);
	if (!r)
		r = write_u32(fd, (uint32_t)argc);
	for (int i = 0; !r && i < argc; i++)
		r = write_all(fd, argv[i], strlen(argv[i]) + 1);
	return r;
}

/*
 * Reads the @argc strings of a request into *data, *len bytes, malloc'ed.
 * The buffer grows by doubling up to the WIRE_MAX the header leaves.
 */
static int read_strings(int fd, uint32_t argc, char **data, size_t *len, uint64_t deadline)
{
	const size_t max = WIRE_MAX - WIRE_HDR;
	size_t cap = 0, used = 0, nuls = 0;
	char *buf = NULL, *tmp;
	ssize_t n;
	int r = 0;

	while (!r && nuls < argc) {
		if (used == cap) {
			if (cap == max) {
				r = -EMSGSIZE;
				break;
			}
			cap = cap ? (2 * cap < max ? 2 * cap : max) : 4096;
			tmp = realloc(buf, cap);
			if (!tmp) {
				r = -ENOMEM;
				break;
			}
			buf = tmp;
		}
		r = wait_readable(fd, deadline);
		if (r)
			break;
		n = read(fd, buf + used, cap - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n ? -errno : -EPROTO;
			break;
		}
		for (ssize_t i = 0; i < n; i++)
			nuls += buf[used + (size_t)i] == '\0';
		used += (size_t)n;
	}
	if (!r && (nuls > argc || buf[used - 1]))
		r = -EPROTO;
	if (r) {
		free(buf);
		return r;
	}
	*data = buf;
	*len = used;
	return 0;
}

/*
 * Keeps the first file of @m's SCM_RIGHTS in *file (if it is -1 and
 * @file is not NULL) and closes every other one.
 */
static void take_files(struct msghdr *m, int *file)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		size_t nr;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nr = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nr; i++) {
			int f;

			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (file && *file < 0)
				*file = f;
			else
				close(f);
		}
	}
}

/*
 * Reads the header, and the file sent with its first bytes; a descriptor
 * that is not a socket (a test's memfd) is read as it is.
 */
static int read_header(int fd, char *hdr, int *file, uint64_t deadline)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(4 * sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = hdr, .iov_len = WIRE_HDR };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			    .msg_controllen = sizeof(ctl.buf) };
	ssize_t n;
	int r = wait_readable(fd, deadline);

	if (r)
		return r;
	do
		n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == ENOTSOCK)
		return read_all(fd, hdr, WIRE_HDR, deadline);
	if (n < 0)
		return -errno;
	take_files(&m, file);
	if (m.msg_flags & MSG_CTRUNC)
		return -EPROTO;		/* more files than a request carries */
	if (n == 0)
		return -EPROTO;
	return read_all(fd, hdr + n, WIRE_HDR - (size_t)n, deadline);
}

static int recv_request(int fd, int *argc, char ***argv, int *file, uint64_t deadline)
{
	char hdr[WIRE_HDR], *data = NULL, *s;
	size_t len = 0;
	uint32_t n;
	char **v;
	int r;

	r = read_header(fd, hdr, file, deadline);
	if (r)
		return r;
	if (memcmp(hdr, WIRE_MAGIC, 4))
		return -EPROTO;
	memcpy(&n, hdr + 4, 4);
	n = le32toh(n);
	if (n > WIRE_MAX - WIRE_HDR)
		return -EMSGSIZE;
	if (n) {
		r = read_strings(fd, n, &data, &len, deadline);
		if (r)
			return r;
	}
	v = malloc((n + 1) * sizeof(*v) + len);
	if (!v) {
		free(data);
		return -ENOMEM;
	}
	s = (char *)(v + n + 1);
	if (len)
		memcpy(s, data, len);
	free(data);
	for (uint32_t i = 0; i < n; i++) {
		v[i] = s;
		s += strlen(s) + 1;
	}
	v[n] = NULL;
	*argc = (int)n;
	*argv = v;
	return 0;
}

int wire_recv_request(int fd, int *argc, char ***argv, int *file, int timeout_ms)
{
	int r;

	if (file)
		*file = -1;
	r = recv_request(fd, argc, argv, file, deadline_in(timeout_ms));
	if (r && file && *file >= 0) {
		close(*file);
		*file = -1;
	}
	return r;
}

int wire_send_response(int fd, int status, const char *out, size_t out_len,
		       const char *err, size_t err_len)
{
	int r;

	if (out_len > UINT32_MAX || err_len > UINT32_MAX)
		return -EMSGSIZE;
	r = write_u32(fd, (uint32_t)status);
	if (!r)
		r = write_u32(fd, (uint32_t)out_len);
	if (!r)
		r = write_all(fd, out, out_len);
	if (!r)
		r = write_u32(fd, (uint32_t)err_len);
	if (!r)
		r = write_all(fd, err, err_len);
	return r;
}

int wire_send_note(int fd, const char *line)
{
	size_t len = strlen(line);
	char *buf = malloc(8 + len);
	uint32_t v[2] = { htole32(WIRE_NOTE), htole32((uint32_t)len) };
	ssize_t n;
	int r = 0;

	if (!buf)
		return -ENOMEM;
	memcpy(buf, v, 8);
	memcpy(buf + 8, line, len);
	n = send(fd, buf, 8 + len, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0)
		r = -errno;
	else if ((size_t)n < 8 + len)	/* begun: the rest must follow */
		r = write_all(fd, buf + n, 8 + len - (size_t)n);
	free(buf);
	return r;
}

/*
 * Reads a length and that many bytes into *out, malloc'ed and NUL
 * terminated.  The buffer grows with the bytes that arrive (doubling from
 * BLOB_CHUNK), not with the length the peer claims, so a peer that lies
 * costs memory only for what it really sends.
 */
#define BLOB_CHUNK	(64u << 10)	/* bytes */

static int read_blob(int fd, char **out)
{
	size_t used = 0, chunk = BLOB_CHUNK, cap;
	char *buf = NULL, *tmp;
	uint32_t len;
	int r;

	r = read_u32(fd, &len);
	while (!r) {
		cap = used + (len - used < chunk ? len - used : chunk);
		tmp = realloc(buf, cap + 1);
		if (!tmp) {
			r = -ENOMEM;
			break;
		}
		buf = tmp;
		r = read_all(fd, buf + used, cap - used, 0);
		if (r)
			break;
		used = cap;
		if (used == len) {
			buf[len] = '\0';
			*out = buf;
			return 0;
		}
		chunk *= 2;
	}
	free(buf);
	return r;
}

int wire_recv_response(int fd, int *status, char **out, char **err, FILE *notes)
{
	char *note;
	uint32_t st;
	int r;

	while (!(r = read_u32(fd, &st)) && st == WIRE_NOTE) {
		r = read_blob(fd, &note);
		if (r)
			return r;
		if (notes) {
			fputs(note, notes);
			fflush(notes);
		}
		free(note);
	}
	if (r)
		return r;
	r = read_blob(fd, out);
	if (r)
		return r;
	r = read_blob(fd, err);
	if (r) {
		free(*out);
		return r;
	}
	*status = (int32_t)st;
	return 0;
}

/* Says in @why (if not NULL) why the socket is not trusted; -EPERM. */
static int distrust(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (why) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return -EPERM;
}

/*
 * The socket node itself: a socket of root's or ours, with one name;
 * -ENOENT if it has none left, as if it had not been there.
 */
static int check_node(int node, const char *path, char *why, size_t len)
{
	struct stat st;

	if (fstat(node, &st) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode))
		return distrust(why, len, "'%s' is a symbolic link", path);
	if (!S_ISSOCK(st.st_mode))
		return distrust(why, len, "'%s' is not a socket", path);
	/* Removed as we looked: its daemon stopped, or a new one cleared it. */
	if (st.st_nlink == 0)
		return -ENOENT;
	if (st.st_nlink != 1)
		return distrust(why, len, "'%s' has other names (hard links)", path);
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return distrust(why, len, "'%s' belongs to uid %u, neither root nor you (uid %u)",
				path, (unsigned int)st.st_uid, (unsigned int)geteuid());
	return 0;
}

/* Who listens on @fd: root or ourselves. */
static int check_peer(int fd, const char *path, char *why, size_t len)
{
	struct ucred cred;
	socklen_t cred_len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) < 0)
		return -errno;
	if (cred.uid != 0 && cred.uid != geteuid())
		return distrust(why, len, "'%s' is served by uid %u (pid %d), neither root nor you (uid %u)",
				path, (unsigned int)cred.uid, (int)cred.pid, (unsigned int)geteuid());
	return 0;
}

/*
 * The node is opened O_PATH without following a link and connected to
 * through /proc/self/fd, so the socket checked is the socket connected
 * to, whatever is renamed meanwhile.
 */
int wire_connect(const char *pool_dir, char *why, size_t why_len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char path[PATH_MAX];
	int node, fd, r;

	if (snprintf(path, sizeof(path), "%s/%s", pool_dir, CONTROL_SOCKET) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	node = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (node < 0)
		return -errno;
	r = check_node(node, path, why, why_len);
	if (r)
		goto err_close_node;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", node);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		goto err_close_node;
	}
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	if (!r)
		r = check_peer(fd, path, why, why_len);
	if (r)
		goto err_close_fd;
	close(node);
	return fd;

err_close_fd:
	close(fd);
err_close_node:
	close(node);
	return r;
}
