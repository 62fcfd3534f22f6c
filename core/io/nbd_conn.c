#include "nbd_conn.h"

#include <errno.h>
#include <libnbd.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

struct nbd_conn *nbd_conn_open(const char *uri, uint64_t deadline, char *why, size_t why_len)
{
	struct nbd_conn *c = calloc(1, sizeof(*c));
	int r = 0;

	if (!c || !(c->h = nbd_create())) {
		snprintf(why, why_len, "out of memory");
		free(c);
		return NULL;
	}
	nbd_set_pread_initialize(c->h, false);
	nbd_set_handle_name(c->h, "mapperfs");
	if (nbd_aio_connect_uri(c->h, uri) < 0)
		r = -EIO;
	while (!r && nbd_aio_is_connecting(c->h))
		r = nbd_conn_poll(c->h, deadline);
	if (!r && nbd_aio_is_ready(c->h))
		return c;
	snprintf(why, why_len, "%s", r == -ETIMEDOUT ? "no answer" : nbd_get_error());
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
