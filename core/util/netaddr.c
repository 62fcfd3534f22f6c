/*
 * core/util/netaddr.c: see netaddr.h.
 */
#include "netaddr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define LISTEN_BACKLOG	64

/* @port: digits only, 1..65535. */
static int parse_port(const char *text, in_port_t *port)
{
	unsigned long n = 0;

	if (!*text || strlen(text) > 5)
		return -EINVAL;
	for (const char *c = text; *c; c++) {
		if (*c < '0' || *c > '9')
			return -EINVAL;
		n = n * 10 + (unsigned long)(*c - '0');
	}
	if (n < 1 || n > 65535)
		return -EINVAL;
	*port = htons((uint16_t)n);
	return 0;
}

int netaddr_parse_tcp(const char *text, struct sockaddr_storage *out, socklen_t *len)
{
	char host[64];
	const char *colon = strrchr(text, ':');
	size_t host_len;
	in_port_t port;

	if (!colon || colon == text)
		return -EINVAL;
	host_len = (size_t)(colon - text);
	if (host_len >= sizeof(host) || parse_port(colon + 1, &port))
		return -EINVAL;
	memcpy(host, text, host_len);
	host[host_len] = '\0';
	memset(out, 0, sizeof(*out));
	if (host[0] == '[') {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)out;

		if (host_len < 3 || host[host_len - 1] != ']')
			return -EINVAL;
		host[host_len - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1)
			return -EINVAL;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = port;
		*len = sizeof(*a6);
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)out;

		if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
			return -EINVAL;
		a4->sin_family = AF_INET;
		a4->sin_port = port;
		*len = sizeof(*a4);
	}
	return 0;
}

/* Binds @fd to @addr and listens; closes it on failure.  0 or -errno. */
static int bind_listen(int fd, const struct sockaddr *addr, socklen_t len)
{
	int r = 0;

	if (bind(fd, addr, len) < 0 || listen(fd, LISTEN_BACKLOG) < 0)
		r = -errno;
	if (r)
		close(fd);
	return r;
}

int netaddr_listen_tcp(const char *text, int *fd)
{
	struct sockaddr_storage addr;
	socklen_t len;
	int one = 1, s, r;

	r = netaddr_parse_tcp(text, &addr, &len);
	if (r)
		return r;
	s = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0) {
		r = -errno;
		close(s);
		return r;
	}
	if (addr.ss_family == AF_INET6)	/* [::] means IPv6 only: bind where told */
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	r = bind_listen(s, (struct sockaddr *)&addr, len);
	if (!r)
		*fd = s;
	return r;
}

int netaddr_listen_unix(const char *path, mode_t mode, int *fd)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int s, r = 0;

	if (strlen(path) > NETADDR_UNIX_PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(addr.sun_path, path, strlen(path) + 1);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	/* bind() creates the file with the socket inode's mode, less the umask */
	if (fchmod(s, mode) < 0 || bind(s, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		r = -errno;
	else if (listen(s, LISTEN_BACKLOG) < 0)
		r = -errno, unlink(path);
	if (r)
		close(s);
	else
		*fd = s;
	return r;
}

bool netaddr_unix_is_stale(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct stat st;
	bool stale;
	int s;

	if (strlen(path) > NETADDR_UNIX_PATH_MAX || lstat(path, &st) || !S_ISSOCK(st.st_mode))
		return false;
	memcpy(addr.sun_path, path, strlen(path) + 1);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return false;
	stale = connect(s, (struct sockaddr *)&addr, sizeof(addr)) < 0 && errno == ECONNREFUSED;
	close(s);
	return stale;
}

