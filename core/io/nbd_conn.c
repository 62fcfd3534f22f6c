#include "nbd_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <libnbd.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nbd_uri.h"
#include "psk_file.h"

uint64_t nbd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int nbd_remaining_ms(uint64_t deadline)
{
	uint64_t now = nbd_now_ms();

	return now >= deadline ? 0 : (int)(deadline - now);
}

int nbd_conn_poll(struct nbd_handle *h, uint64_t deadline)
{
	unsigned int dir = nbd_aio_get_direction(h);
	struct pollfd pfd = { .fd = nbd_aio_get_fd(h) };
	int r;

	if (pfd.fd < 0)
		return -EIO;
	pfd.events = (short)(((dir & LIBNBD_AIO_DIRECTION_READ) ? POLLIN : 0) |
			     ((dir & LIBNBD_AIO_DIRECTION_WRITE) ? POLLOUT : 0));
	r = poll(&pfd, 1, nbd_remaining_ms(deadline));
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	if (r == 0)
		return -ETIMEDOUT;
	if (pfd.revents & (POLLIN | POLLHUP | POLLERR))
		r = nbd_aio_notify_read(h);
	else
		r = nbd_aio_notify_write(h);
	return r < 0 ? -EIO : 0;
}

static uid_t key_owner;

void nbd_conn_set_key_owner(uid_t uid)
{
	key_owner = uid;
}

/*
 * The TLS key file a URI names (tls-psk-file=PATH, which libnbd refuses
 * to read itself unless told it may read local files): opened and
 * checked here at every connection (psk_file.h: a file loosened since
 * the device was added is refused) and handed to libnbd as /dev/fd/N,
 * the URI connected without it.  0, or -errno with a phrase.
 */
static int use_psk_file(struct nbd_handle *h, const char *uri, char *bare, size_t len,
			int *fd, char *why, size_t why_len)
{
	char path[PATH_MAX], fd_path[32], identity[PSK_IDENTITY_MAX + 1], reason[160];

	*fd = -1;
	if (!nbd_uri_param(uri, "tls-psk-file", path, sizeof(path)))
		return snprintf(bare, len, "%s", uri) < (int)len ? 0 : -ENAMETOOLONG;
	if (!nbd_uri_without(uri, "tls-psk-file", bare, len))
		return -ENAMETOOLONG;
	*fd = psk_file_open(path, key_owner, identity, reason, sizeof(reason));
	if (*fd < 0) {
		snprintf(why, why_len, "TLS key file '%s' %s", path, reason);
		return *fd;
	}
	snprintf(fd_path, sizeof(fd_path), "/dev/fd/%d", *fd);
	if (nbd_set_tls_psk_file(h, fd_path) < 0) {
		snprintf(why, why_len, "%s", nbd_get_error());
		return -EIO;
	}
	return 0;
}

/*
 * libnbd's @error for a TLS connection that failed, with the key file's
 * path where it names the descriptor it was given, and what to look at.
 */
static void tls_failure(char *why, size_t why_len, const char *error, int psk, const char *uri)
{
	char fd_path[32], path[PATH_MAX];
	const char *at;

	snprintf(fd_path, sizeof(fd_path), "/dev/fd/%d", psk);
	if (!nbd_uri_param(uri, "tls-psk-file", path, sizeof(path)))
		path[0] = '\0';
	at = strstr(error, fd_path);
	if (at)
		snprintf(why, why_len, "%.*s%s%s", (int)(at - error), error, path,
			 at + strlen(fd_path));
	else
		snprintf(why, why_len, "%s", error);
	if (strstr(error, "gnutls") || strstr(error, "TLS"))
		snprintf(why + strlen(why), why_len - strlen(why), " (the TLS handshake failed: "
			 "are the key in tls-psk-file and the identity before '@' the server's?)");
}

struct nbd_conn *nbd_conn_open(const char *uri, uint64_t deadline, char *why, size_t why_len)
{
	struct nbd_conn *c = calloc(1, sizeof(*c));
	char bare[PATH_MAX];
	int r = 0, psk = -1;

	if (!c || !(c->h = nbd_create())) {
		snprintf(why, why_len, "%s", c ? nbd_get_error() : "out of memory");
		free(c);
		return NULL;
	}
	nbd_set_pread_initialize(c->h, false);
	/* A simple reply to a read is two recv calls, a structured one three. */
	nbd_set_request_structured_replies(c->h, false);
	nbd_set_handle_name(c->h, "mapperfs");
	why[0] = '\0';
	r = use_psk_file(c->h, uri, bare, sizeof(bare), &psk, why, why_len);
	if (!r && nbd_aio_connect_uri(c->h, bare) < 0)
		r = -EIO;
	while (!r && nbd_aio_is_connecting(c->h))
		r = nbd_conn_poll(c->h, deadline);
	if (!r && nbd_aio_is_ready(c->h)) {
		if (psk >= 0)
			close(psk);	/* read during the handshake */
		return c;
	}
	if (!why[0] && psk >= 0 && r != -ETIMEDOUT)
		tls_failure(why, why_len, nbd_get_error(), psk, uri);
	else if (!why[0])
		snprintf(why, why_len, "%s", r == -ETIMEDOUT ? "no answer" : nbd_get_error());
	if (psk >= 0)
		close(psk);
	nbd_close(c->h);
	free(c);
	return NULL;
}

void nbd_conn_close(struct nbd_conn *c)
{
	nbd_close(c->h);
	free(c);
}

int nbd_conn_pread(struct nbd_conn *c, void *buf, size_t len, uint64_t off, uint64_t deadline)
{
	int64_t cookie = nbd_aio_pread(c->h, buf, len, off, NBD_NULL_COMPLETION, 0);
	int done = 0, r = 0;

	while (cookie >= 0 && !r && !(done = nbd_aio_command_completed(c->h, (uint64_t)cookie)))
		r = nbd_conn_poll(c->h, deadline);
	if (cookie >= 0 && !r && done > 0)
		return 0;
	return r || nbd_conn_failed_by_drop(c) ? -ENOTCONN : -EIO;
}

bool nbd_conn_dropped(const struct nbd_conn *c)
{
	return nbd_aio_is_dead(c->h) == 1 || nbd_aio_is_closed(c->h) == 1 ||
	       nbd_aio_get_fd(c->h) < 0;
}

bool nbd_conn_failed_by_drop(const struct nbd_conn *c)
{
	int e = nbd_get_errno();

	return nbd_conn_dropped(c) || e == ENOTCONN || e == ESHUTDOWN || e == ECONNRESET ||
	       e == EPIPE;
}
