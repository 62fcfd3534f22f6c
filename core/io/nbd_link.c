#include "nbd_link.h"

#include <errno.h>
#include <libnbd.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

#define MAX_REQUEST_DEFAULT	(32u << 20)	/* bytes: what NBD servers take */
#define SPAN_MAX		(1u << 30)	/* bytes per trim or zero command */
#define BACKOFF_MIN_MS		50
#define BACKOFF_MAX_MS		1000

struct nbd_link {
	char *uri;
	uint64_t size;			/* bytes */
	unsigned int min_block;		/* bytes */
	uint32_t max_request;		/* bytes, a multiple of min_block */
	bool multi_conn, can_flush, can_trim, can_zero;
	unsigned int timeout_ms;
	pthread_mutex_t lock;
	pthread_cond_t idle_cond;	/* a connection went idle or closed */
	struct nbd_conn *idle;
	unsigned int conns, max_conns;	/* open (idle or taken), allowed */
	bool dropped;			/* a connection dropped since the last open */
	uint64_t reconnects, retried, failed;
};

static unsigned int timeout_ms = NBD_LINK_TIMEOUT_MS;

bool nbd_link_is_uri(const char *path)
{
	return !strncmp(path, "nbd://", 6) || !strncmp(path, "nbds://", 7) ||
	       !strncmp(path, "nbd+unix://", 11) || !strncmp(path, "nbds+unix://", 12);
}

void nbd_link_set_timeout(unsigned int ms)
{
	timeout_ms = ms;
}

uint64_t nbd_link_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int remaining_ms(uint64_t deadline)
{
	uint64_t now = nbd_link_now_ms();

	return now >= deadline ? 0 : (int)(deadline - now);
}

/*
 * Waits for @h's socket as libnbd asks, until @deadline, and tells libnbd
 * what happened.  0, -ETIMEDOUT, or -EIO when the handle died.
 */
static int poll_once(struct nbd_handle *h, uint64_t deadline)
{
	unsigned int dir = nbd_aio_get_direction(h);
	struct pollfd pfd = { .fd = nbd_aio_get_fd(h) };
	int r;

	if (pfd.fd < 0)
		return -EIO;
	pfd.events = (short)(((dir & LIBNBD_AIO_DIRECTION_READ) ? POLLIN : 0) |
			     ((dir & LIBNBD_AIO_DIRECTION_WRITE) ? POLLOUT : 0));
	r = poll(&pfd, 1, remaining_ms(deadline));
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

/* One connection to @uri, made before @deadline.  NULL, a reason in @why. */
static struct nbd_conn *conn_open(const char *uri, uint64_t deadline, char *why,
				  size_t why_len)
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
		r = poll_once(c->h, deadline);
	if (!r && nbd_aio_is_ready(c->h))
		return c;
	snprintf(why, why_len, "%s", r == -ETIMEDOUT ? "no answer" : nbd_get_error());
	nbd_close(c->h);
	free(c);
	return NULL;
}

static void conn_close(struct nbd_conn *c)
{
	nbd_close(c->h);
	free(c);
}

/* What the server offers, read off the first connection. */
static int link_learn(struct nbd_link *l, struct nbd_handle *h, char *why, size_t why_len)
{
	int64_t size = nbd_get_size(h), min = nbd_get_block_size(h, LIBNBD_SIZE_MINIMUM),
		max = nbd_get_block_size(h, LIBNBD_SIZE_MAXIMUM);

	if (size < 0) {
		snprintf(why, why_len, "the server does not say its size: %s", nbd_get_error());
		return -EIO;
	}
	if (nbd_is_read_only(h) == 1) {
		snprintf(why, why_len, "the export is read-only");
		return -EROFS;
	}
	if (min > 4096) {
		snprintf(why, why_len, "the server wants requests in blocks of %lld bytes, "
			 "more than 4096", (long long)min);
		return -ENOTSUP;
	}
	l->size = (uint64_t)size;
	l->min_block = min > 0 ? (unsigned int)min : 1;
	l->max_request = max > 0 && max < MAX_REQUEST_DEFAULT ? (uint32_t)max : MAX_REQUEST_DEFAULT;
	l->max_request -= l->max_request % l->min_block;
	l->multi_conn = nbd_can_multi_conn(h) == 1;
	l->can_flush = nbd_can_flush(h) == 1;
	l->can_trim = nbd_can_trim(h) == 1;
	l->can_zero = nbd_can_zero(h) == 1;
	l->max_conns = l->multi_conn ? NBD_LINK_CONNS : 1;
	return 0;
}

int nbd_link_open(const char *uri, struct nbd_link **out, char *why, size_t why_len)
{
	struct nbd_link *l = calloc(1, sizeof(*l));
	pthread_condattr_t attr;
	struct nbd_conn *c;
	int r;

	if (!l || !(l->uri = strdup(uri))) {
		free(l);
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	l->timeout_ms = timeout_ms;
	c = conn_open(uri, nbd_link_now_ms() + l->timeout_ms, why, why_len);
	if (!c) {
		r = -EHOSTUNREACH;
		goto err;
	}
	r = link_learn(l, c->h, why, why_len);
	if (r) {
		conn_close(c);
		goto err;
	}
	pthread_mutex_init(&l->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);	/* as nbd_link_now_ms */
	pthread_cond_init(&l->idle_cond, &attr);
	pthread_condattr_destroy(&attr);
	l->idle = c;
	l->conns = 1;
	*out = l;
	return 0;
err:
	free(l->uri);
	free(l);
	return r;
}

void nbd_link_close(struct nbd_link *l)
{
	if (!l)
		return;
	while (l->idle) {
		struct nbd_conn *c = l->idle;

		l->idle = c->next;
		nbd_aio_disconnect(c->h, 0);	/* never waits: the server may hang */
		conn_close(c);
	}
	pthread_cond_destroy(&l->idle_cond);
	pthread_mutex_destroy(&l->lock);
	free(l->uri);
	free(l);
}

uint64_t nbd_link_size(const struct nbd_link *l)
{
	return l->size;
}

unsigned int nbd_link_min_block(const struct nbd_link *l)
{
	return l->min_block;
}

uint32_t nbd_link_max_request(const struct nbd_link *l)
{
	return l->max_request;
}

unsigned int nbd_link_timeout_ms(const struct nbd_link *l)
{
	return l->timeout_ms;
}

const char *nbd_link_uri(const struct nbd_link *l)
{
	return l->uri;
}

void nbd_link_stats(struct nbd_link *l, struct nbd_link_stats *out)
{
	pthread_mutex_lock(&l->lock);
	out->reconnecting = l->dropped;
	out->conns = l->conns;
	out->multi_conn = l->multi_conn;
	out->reconnects = l->reconnects;
	out->retried = l->retried;
	out->failed = l->failed;
	pthread_mutex_unlock(&l->lock);
}

/*
 * A new connection, trying again with a growing pause until @deadline.
 * Called holding nothing, with a slot counted in l->conns.
 */
static struct nbd_conn *reconnect(struct nbd_link *l, uint64_t deadline)
{
	unsigned int pause = BACKOFF_MIN_MS;
	struct nbd_conn *c;
	char why[160];

	while (!(c = conn_open(l->uri, deadline, why, sizeof(why))) && remaining_ms(deadline)) {
		struct timespec ts;
		int left = remaining_ms(deadline);

		if ((int)pause > left)
			pause = (unsigned int)left;
		ts.tv_sec = pause / 1000;
		ts.tv_nsec = (long)(pause % 1000) * 1000000;
		nanosleep(&ts, NULL);
		pause = pause * 2 < BACKOFF_MAX_MS ? pause * 2 : BACKOFF_MAX_MS;
	}
	pthread_mutex_lock(&l->lock);
	if (c && l->dropped) {
		l->dropped = false;
		l->reconnects++;
		log_info("NBD device '%s' reconnected", l->uri);
	}
	pthread_mutex_unlock(&l->lock);
	if (!c)
		log_error("NBD device '%s': cannot connect: %s", l->uri, why);
	return c;
}

static struct nbd_conn *get_before(struct nbd_link *l, uint64_t deadline)
{
	struct nbd_conn *c = NULL;
	struct timespec until = { .tv_sec = (time_t)(deadline / 1000),
				  .tv_nsec = (long)(deadline % 1000) * 1000000 };

	pthread_mutex_lock(&l->lock);
	while (!l->idle && l->conns >= l->max_conns)
		if (pthread_cond_timedwait(&l->idle_cond, &l->lock, &until) == ETIMEDOUT)
			break;
	if (l->idle) {
		c = l->idle;
		l->idle = c->next;
	} else if (l->conns < l->max_conns) {
		l->conns++;
		pthread_mutex_unlock(&l->lock);
		c = reconnect(l, deadline);
		pthread_mutex_lock(&l->lock);
		if (!c) {
			l->conns--;
			pthread_cond_signal(&l->idle_cond);
		}
	}
	pthread_mutex_unlock(&l->lock);
	return c;
}

struct nbd_conn *nbd_link_get(struct nbd_link *l)
{
	return get_before(l, nbd_link_now_ms() + l->timeout_ms);
}

bool nbd_conn_dropped(const struct nbd_conn *c)
{
	return nbd_aio_is_dead(c->h) == 1 || nbd_aio_is_closed(c->h) == 1 ||
	       nbd_aio_get_fd(c->h) < 0;
}

/* Closes @c (abruptly: a hung server answers no disconnect) as lost. */
static void drop(struct nbd_link *l, struct nbd_conn *c)
{
	conn_close(c);
	pthread_mutex_lock(&l->lock);
	if (!l->dropped)
		log_warn("NBD device '%s': connection lost; reconnecting", l->uri);
	l->dropped = true;
	l->conns--;
	pthread_cond_signal(&l->idle_cond);
	pthread_mutex_unlock(&l->lock);
}

void nbd_link_put(struct nbd_link *l, struct nbd_conn *c)
{
	if (nbd_conn_dropped(c) || nbd_aio_in_flight(c->h) > 0) {
		drop(l, c);
		return;
	}
	pthread_mutex_lock(&l->lock);
	c->next = l->idle;
	l->idle = c;
	pthread_cond_signal(&l->idle_cond);
	pthread_mutex_unlock(&l->lock);
}

void nbd_link_drop(struct nbd_link *l, struct nbd_conn *c)
{
	drop(l, c);
}

bool nbd_link_retry(struct nbd_link *l, uint64_t since_ms)
{
	bool ok = nbd_link_now_ms() < since_ms + l->timeout_ms;

	pthread_mutex_lock(&l->lock);
	l->retried += ok;
	pthread_mutex_unlock(&l->lock);
	return ok;
}

void nbd_link_failed(struct nbd_link *l)
{
	pthread_mutex_lock(&l->lock);
	l->failed++;
	pthread_mutex_unlock(&l->lock);
}

/* ---- whole requests, outside the engine ------------------------------------ */

enum op { OP_READ, OP_WRITE, OP_FLUSH, OP_TRIM, OP_ZERO };

struct request {
	enum op op;
	char *buf;
	uint64_t off, len;
	uint32_t flags;
};

static int64_t issue(struct nbd_handle *h, const struct request *q, uint64_t at, uint64_t n)
{
	char *p = q->buf ? q->buf + (at - q->off) : NULL;

	switch (q->op) {
	case OP_READ:
		return nbd_aio_pread(h, p, n, at, NBD_NULL_COMPLETION, 0);
	case OP_WRITE:
		return nbd_aio_pwrite(h, p, n, at, NBD_NULL_COMPLETION, 0);
	case OP_FLUSH:
		return nbd_aio_flush(h, NBD_NULL_COMPLETION, 0);
	case OP_TRIM:
		return nbd_aio_trim(h, n, at, NBD_NULL_COMPLETION, 0);
	case OP_ZERO:
		return nbd_aio_zero(h, n, at, NBD_NULL_COMPLETION, q->flags);
	}
	return -1;
}

/*
 * Runs @q on @c, piece by piece, before @deadline.  0, -EIO for an error
 * the server answered, -ENOTCONN when the connection dropped or hung.
 */
static int run_on(struct nbd_link *l, struct nbd_conn *c, const struct request *q,
		  uint64_t deadline)
{
	uint64_t piece = q->op == OP_READ || q->op == OP_WRITE ? l->max_request : SPAN_MAX;
	uint64_t at = q->off, end = q->off + q->len;

	do {
		uint64_t n = end - at < piece ? end - at : piece;
		int64_t cookie = issue(c->h, q, at, n);
		int done = 0, r = 0;

		while (cookie >= 0 && !r && !(done = nbd_aio_command_completed(c->h, (uint64_t)cookie)))
			r = poll_once(c->h, deadline);
		if (cookie < 0 || r || done < 0)
			return nbd_conn_dropped(c) || r ? -ENOTCONN : -EIO;
		at += n;
	} while (at < end);
	return 0;
}

static int run(struct nbd_link *l, const struct request *q)
{
	uint64_t since = nbd_link_now_ms();

	for (;;) {
		struct nbd_conn *c = get_before(l, since + l->timeout_ms);
		int r;

		if (!c)
			break;
		r = run_on(l, c, q, since + l->timeout_ms);
		if (r == -ENOTCONN)
			nbd_link_drop(l, c);
		else
			nbd_link_put(l, c);
		if (!r)
			return 0;
		if (r != -ENOTCONN || !nbd_link_retry(l, since)) {
			if (r == -ENOTCONN)
				log_error("NBD device '%s': no connection for %u ms: the request fails",
					  l->uri, l->timeout_ms);
			break;
		}
	}
	nbd_link_failed(l);
	return -EIO;
}

int nbd_link_pread(struct nbd_link *l, void *buf, size_t len, uint64_t off)
{
	struct request q = { OP_READ, buf, off, len, 0 };

	return run(l, &q);
}

int nbd_link_pwrite(struct nbd_link *l, const void *buf, size_t len, uint64_t off)
{
	struct request q = { OP_WRITE, (char *)buf, off, len, 0 };

	return run(l, &q);
}

int nbd_link_flush(struct nbd_link *l)
{
	struct request q = { OP_FLUSH, NULL, 0, 1, 0 };

	return l->can_flush ? run(l, &q) : 0;
}

int nbd_link_trim(struct nbd_link *l, uint64_t off, uint64_t len)
{
	struct request q = { OP_TRIM, NULL, off, len, 0 };

	return l->can_trim ? run(l, &q) : -EOPNOTSUPP;
}

int nbd_link_zero(struct nbd_link *l, uint64_t off, uint64_t len, bool punch)
{
	struct request q = { OP_ZERO, NULL, off, len, punch ? 0 : LIBNBD_CMD_FLAG_NO_HOLE };

	return l->can_zero ? run(l, &q) : -EOPNOTSUPP;
}
