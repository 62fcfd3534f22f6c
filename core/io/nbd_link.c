#include "nbd_link.h"

#include <errno.h>
#include <libnbd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "nbd_conn.h"

#define MAX_REQUEST_DEFAULT	(32u << 20)	/* bytes: what NBD servers take */
#define SPAN_MAX		(1u << 30)	/* bytes per trim or zero command */
#define BACKOFF_MIN_MS		50
#define BACKOFF_MAX_MS		1000
#define QUICK_CONNECT_MS	1000	/* one try: an extra connection, a server long away */
#define PROBE_EVERY_MS		5000	/* nbd_link_tick: a lost link looked at again after */

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
	unsigned int conns;		/* open: idle or taken */
	unsigned int max_conns;		/* opened at most now */
	unsigned int conns_cap;		/* ... before a server's cap was learnt */
	bool dropped;			/* a connection dropped, none opened since */
	uint64_t probed;		/* ms: nbd_link_tick's last try while dropped */
	uint64_t down_since;		/* ms, while dropped */
	char error[160];		/* why the last connection failed */
	unsigned char head[NBD_LINK_HEAD];	/* the device's identity */
	size_t head_len;		/* bytes of it: less on a smaller device */
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
	l->conns_cap = l->max_conns = l->multi_conn ? NBD_LINK_CONNS : 1;
	/* whole units: NBD_LINK_HEAD is one, or a multiple of one */
	l->head_len = l->size < NBD_LINK_HEAD ? l->size - l->size % l->min_block : NBD_LINK_HEAD;
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
	c = nbd_conn_open(uri, nbd_now_ms() + l->timeout_ms, why, why_len);
	if (!c) {
		r = -EHOSTUNREACH;
		goto err;
	}
	r = link_learn(l, c->h, why, why_len);
	if (!r && l->head_len &&
	    nbd_conn_pread(c, l->head, l->head_len, 0, nbd_now_ms() + l->timeout_ms)) {
		snprintf(why, why_len, "cannot read its first %zu bytes: %s", l->head_len,
			 nbd_get_error());
		r = -EIO;
	}
	if (r) {
		nbd_conn_close(c);
		goto err;
	}
	pthread_mutex_init(&l->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);	/* as nbd_now_ms */
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
		nbd_conn_close(c);
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

void nbd_link_stats(struct nbd_link *l, struct nbd_link_stats *out)
{
	pthread_mutex_lock(&l->lock);
	out->reconnecting = l->dropped;
	out->down_ms = l->dropped ? nbd_now_ms() - l->down_since : 0;
	snprintf(out->reason, sizeof(out->reason), "%s", l->dropped ? l->error : "");
	out->conns = l->conns;
	out->max_conns = l->max_conns;
	out->multi_conn = l->multi_conn;
	out->reconnects = l->reconnects;
	out->retried = l->retried;
	out->failed = l->failed;
	pthread_mutex_unlock(&l->lock);
}

/*
 * Notes why a connection failed; says so once per reason.  The link is
 * lost from then on, as after a drop (its idle connections may all have
 * been closed while the server went away): status says reconnecting.
 */
static void connect_failed(struct nbd_link *l, const char *why)
{
	bool news;

	pthread_mutex_lock(&l->lock);
	news = strcmp(l->error, why) != 0;
	snprintf(l->error, sizeof(l->error), "%s", why);
	if (!l->dropped) {
		l->dropped = true;
		l->down_since = nbd_now_ms();
	}
	pthread_mutex_unlock(&l->lock);
	if (news)
		log_error("NBD device '%s': cannot connect: %s", l->uri, why);
}

/*
 * @c shows the device's identity: its first bytes are what the link
 * knows.  Else it is closed, NULL, and why is in @why.
 */
static struct nbd_conn *verified(struct nbd_link *l, struct nbd_conn *c, uint64_t deadline,
				 char *why, size_t why_len)
{
	unsigned char head[NBD_LINK_HEAD];
	bool same;

	if (!l->head_len)
		return c;
	if (nbd_conn_pread(c, head, l->head_len, 0, deadline)) {
		snprintf(why, why_len, "cannot read its first %zu bytes", l->head_len);
		nbd_conn_close(c);
		return NULL;
	}
	pthread_mutex_lock(&l->lock);
	same = !memcmp(head, l->head, l->head_len);
	pthread_mutex_unlock(&l->lock);
	if (same)
		return c;
	snprintf(why, why_len, "the server serves another disk now (its first %zu bytes are "
		 "not this device's label): refused", l->head_len);
	nbd_conn_close(c);
	return NULL;
}

/*
 * A new connection, shown to be the device's, before @deadline; if
 * @again, trying again with a growing pause.  An @extra one (others
 * serve) that fails says the server takes no more, which the caller
 * tells: it is no fault, and not logged as one.  Called holding
 * nothing, with a slot counted in l->conns.
 */
static struct nbd_conn *connect_to(struct nbd_link *l, uint64_t deadline, bool again,
				   bool extra)
{
	unsigned int pause = BACKOFF_MIN_MS;
	char why[160], reason[160] = "";
	struct nbd_conn *c;

	for (;;) {
		c = nbd_conn_open(l->uri, deadline, why, sizeof(why));
		if (c)
			c = verified(l, c, deadline, why, sizeof(why));
		if (!c && nbd_remaining_ms(deadline))	/* not our deadline: the server's answer */
			snprintf(reason, sizeof(reason), "%s", why);
		if (c || !again || !nbd_remaining_ms(deadline))
			break;
		if ((int)pause > nbd_remaining_ms(deadline))
			pause = (unsigned int)nbd_remaining_ms(deadline);
		nanosleep(&(struct timespec){ pause / 1000, (long)(pause % 1000) * 1000000 }, NULL);
		pause = pause * 2 < BACKOFF_MAX_MS ? pause * 2 : BACKOFF_MAX_MS;
	}
	if (!c) {
		if (!extra)
			connect_failed(l, reason[0] ? reason : why);
		return NULL;
	}
	pthread_mutex_lock(&l->lock);
	if (l->dropped) {
		l->dropped = false;
		l->reconnects++;
		l->max_conns = l->conns_cap;	/* a new server: learn its cap again */
		l->error[0] = '\0';
		log_info("NBD device '%s' reconnected", l->uri);
	}
	pthread_mutex_unlock(&l->lock);
	return c;
}

/* nbd_link_get, or nbd_link_take when @wait is false. */
static struct nbd_conn *get(struct nbd_link *l, uint64_t deadline, bool wait)
{
	struct timespec until = { .tv_sec = (time_t)(deadline / 1000),
				  .tv_nsec = (long)(deadline % 1000) * 1000000 };
	struct nbd_conn *c;

	pthread_mutex_lock(&l->lock);
	for (;;) {
		uint64_t quick;
		bool extra, gone;

		while (wait && !l->idle && l->conns >= l->max_conns)
			if (pthread_cond_timedwait(&l->idle_cond, &l->lock, &until) == ETIMEDOUT)
				break;
		if (l->idle) {
			c = l->idle;
			l->idle = c->next;
			break;
		}
		if (l->conns >= l->max_conns) {
			c = NULL;
			break;
		}
		l->conns++;
		quick = nbd_now_ms() + QUICK_CONNECT_MS;
		/* others serve: will the server take one more? */
		extra = l->conns > 1 && !l->dropped;
		gone = l->dropped && nbd_now_ms() - l->down_since >= l->timeout_ms;
		pthread_mutex_unlock(&l->lock);
		c = connect_to(l, extra || gone ? (quick < deadline ? quick : deadline) : deadline,
			       !extra && !gone, extra);
		pthread_mutex_lock(&l->lock);
		if (c)
			break;
		l->conns--;
		pthread_cond_broadcast(&l->idle_cond);
		if (!extra)
			break;
		l->max_conns = l->conns;
		log_info("NBD device '%s' takes no more than %u connection(s): they are shared",
			 l->uri, l->max_conns);
	}
	pthread_mutex_unlock(&l->lock);
	return c;
}

struct nbd_conn *nbd_link_get(struct nbd_link *l, uint64_t deadline)
{
	return get(l, deadline, true);
}

struct nbd_conn *nbd_link_take(struct nbd_link *l, uint64_t deadline)
{
	return get(l, deadline, false);
}

/* Closes @c and the idle connections as lost. */
static void drop(struct nbd_link *l, struct nbd_conn *c)
{
	struct nbd_conn *idle;

	nbd_conn_close(c);
	pthread_mutex_lock(&l->lock);
	if (!l->dropped) {
		log_warn("NBD device '%s': connection lost; reconnecting", l->uri);
		l->dropped = true;
		l->down_since = nbd_now_ms();
		snprintf(l->error, sizeof(l->error), "connection lost");
	}
	l->conns--;
	idle = l->idle;
	l->idle = NULL;
	while (idle) {
		struct nbd_conn *next = idle->next;

		nbd_conn_close(idle);
		l->conns--;
		idle = next;
	}
	pthread_cond_broadcast(&l->idle_cond);
	pthread_mutex_unlock(&l->lock);
}

void nbd_link_put(struct nbd_link *l, struct nbd_conn *c)
{
	if (nbd_conn_dropped(c) || nbd_aio_in_flight(c->h) > 0) {
		drop(l, c);
		return;
	}
	c->idle_since = nbd_now_ms();
	pthread_mutex_lock(&l->lock);
	c->next = l->idle;
	l->idle = c;
	pthread_cond_signal(&l->idle_cond);
	pthread_mutex_unlock(&l->lock);
}

bool nbd_link_probe(struct nbd_link *l)
{
	struct nbd_conn *c = nbd_link_get(l, nbd_now_ms() + QUICK_CONNECT_MS);

	if (c)
		nbd_link_put(l, c);
	return c != NULL;
}

void nbd_link_tick(struct nbd_link *l)
{
	struct nbd_conn *old = NULL, **pp, *c;
	uint64_t now = nbd_now_ms();
	bool probe;

	pthread_mutex_lock(&l->lock);
	for (pp = &l->idle; l->multi_conn && (c = *pp);) {
		if (now - c->idle_since < NBD_LINK_IDLE_MS) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		c->next = old;
		old = c;
		l->conns--;
	}
	probe = l->dropped && !l->conns && now - l->probed >= PROBE_EVERY_MS;
	if (probe)
		l->probed = now;
	pthread_cond_broadcast(&l->idle_cond);
	pthread_mutex_unlock(&l->lock);
	for (; old; old = c) {
		c = old->next;
		nbd_conn_close(old);
	}
	if (probe)
		nbd_link_probe(l);
}

void nbd_link_drop(struct nbd_link *l, struct nbd_conn *c)
{
	drop(l, c);
}

bool nbd_link_retry(struct nbd_link *l, uint64_t deadline)
{
	bool ok = nbd_now_ms() < deadline;

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
			r = nbd_conn_poll(c->h, deadline);
		if (cookie < 0 || r || done < 0)
			return r || nbd_conn_failed_by_drop(c) ? -ENOTCONN : -EIO;
		at += n;
	} while (at < end);
	return 0;
}

static int run(struct nbd_link *l, const struct request *q)
{
	uint64_t deadline = nbd_now_ms() + l->timeout_ms;
	int r = -ENOTCONN;

	for (;;) {
		struct nbd_conn *c = nbd_link_get(l, deadline);

		if (!c)
			break;
		r = run_on(l, c, q, deadline);
		if (r == -ENOTCONN)
			nbd_link_drop(l, c);
		else
			nbd_link_put(l, c);
		if (!r)
			return 0;
		if (r != -ENOTCONN || !nbd_link_retry(l, deadline))
			break;
	}
	log_error("NBD device '%s': a request failed: %s", l->uri,
		  r == -ENOTCONN ? "no connection within the timeout" : "the server answered an error");
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
	int r = run(l, &q);

	if (!r && off < l->head_len) {
		pthread_mutex_lock(&l->lock);
		memcpy(l->head + off, buf, len < l->head_len - off ? len : l->head_len - off);
		pthread_mutex_unlock(&l->lock);
	}
	return r;
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
