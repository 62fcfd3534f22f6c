#include "nbd_batch.h"

#include <errno.h>
#include <libnbd.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "direct.h"
#include "log.h"
#include "nbd_conn.h"
#include "nbd_link.h"

/* Piece states besides a cookie (>= 0: sent, not yet reaped). */
#define PIECE_UNSENT	(-1)
#define PIECE_DONE	(-2)
#define PIECE_FAILED	(-3)

/* user_data of the batch's SQEs: the kind, and the slot below. */
#define TAG_POLL	(1ull << 32)
#define TAG_TIMEOUT	(2ull << 32)
#define TAG_SLOT(d)	((unsigned int)((d) & 0xffffffffu))

/* Gives back the connections taken, before anything was sent: -ENOMEM. */
static int abandon(struct nbd_batch *b)
{
	for (unsigned int i = 0; i < b->nr_slots; i++)
		if (b->slots[i].conn)
			nbd_link_put(b->slots[i].link, b->slots[i].conn);
	b->nr_slots = 0;
	b->nr_pieces = 0;
	return -ENOMEM;
}

bool nbd_batch_takes(const struct seg *g, const char *buf)
{
	return g->dev && g->dev->nbd && g->done < g->len &&
	       direct_aligned(g->dev, g->dev_off, g->len, buf + g->buf_off);
}

/* The slot of @l, made if new; NBD_BATCH_LINKS if it is not there and all are taken. */
static unsigned int slot_of(struct nbd_batch *b, struct nbd_link *l, bool make)
{
	unsigned int i;

	for (i = 0; i < b->nr_slots; i++)
		if (b->slots[i].link == l)
			return i;
	if (!make || i == NBD_BATCH_LINKS)
		return NBD_BATCH_LINKS;
	b->slots[i] = (struct nbd_slot){ .link = l,
					 .deadline = nbd_now_ms() + nbd_link_timeout_ms(l) };
	b->nr_slots++;
	return i;
}

static int by_link(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct nbd_slot *)a)->link;
	uintptr_t y = (uintptr_t)((const struct nbd_slot *)b)->link;

	return (x > y) - (x < y);
}

/*
 * A connection of each link the segments of @s name, taken in the links'
 * address order: two threads that each need the same two links, whose
 * servers allow one connection each, never hold one while waiting for
 * the other.
 */
static void take_links(struct nbd_batch *b, struct segs *s, const char *buf)
{
	for (unsigned int i = 0; i < s->nr; i++)
		if (nbd_batch_takes(&s->v[i], buf))
			slot_of(b, s->v[i].dev->nbd, true);
	qsort(b->slots, b->nr_slots, sizeof(b->slots[0]), by_link);
	for (unsigned int i = 0; i < b->nr_slots; i++)
		b->slots[i].conn = nbd_link_get(b->slots[i].link, b->slots[i].deadline);
}

static int add_piece(struct nbd_batch *b, unsigned int seg, uint32_t at, uint32_t len,
		     unsigned int slot)
{
	if (b->nr_pieces == b->cap_pieces) {
		unsigned int cap = b->cap_pieces ? 2 * b->cap_pieces : 32;
		struct nbd_piece *v = realloc(b->pieces, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->pieces = v;
		b->cap_pieces = cap;
	}
	b->pieces[b->nr_pieces++] = (struct nbd_piece){ seg, at, len, PIECE_UNSENT, slot };
	return 0;
}

static void report(const struct seg *g, const struct nbd_piece *p, bool write, const char *why)
{
	static struct log_limit limit;

	log_error_limited(&limit, "%s of %u bytes at offset %llu of '%s' failed: %s",
			  write ? "write" : "read", p->len,
			  (unsigned long long)(g->dev_off + p->at), g->dev->path, why);
}

static void fail_piece(struct nbd_batch *b, struct nbd_piece *p, struct segs *s, bool write,
		       const char *why)
{
	if (p->cookie == PIECE_FAILED)
		return;
	report(&s->v[p->seg], p, write, why);
	nbd_link_failed(b->slots[p->slot].link);
	p->cookie = PIECE_FAILED;
}

/* Sends @p on its slot's connection; a refusal leaves it unsent. */
static void send_piece(struct nbd_batch *b, struct nbd_piece *p, struct segs *s,
		       char *buf, bool write)
{
	struct nbd_handle *h = b->slots[p->slot].conn->h;
	struct seg *g = &s->v[p->seg];
	char *at = buf + g->buf_off + p->at;
	uint64_t off = g->dev_off + p->at;
	int64_t cookie = write ? nbd_aio_pwrite(h, at, p->len, off, NBD_NULL_COMPLETION, 0)
			       : nbd_aio_pread(h, at, p->len, off, NBD_NULL_COMPLETION, 0);

	p->cookie = cookie >= 0 ? cookie : PIECE_UNSENT;
}

int nbd_batch_start(struct nbd_batch *b, struct segs *s, char *buf, bool write)
{
	b->nr_slots = 0;
	b->nr_pieces = 0;
	take_links(b, s, buf);
	for (unsigned int i = 0; i < s->nr; i++) {
		struct seg *g = &s->v[i];
		unsigned int slot;
		uint32_t max;

		if (!nbd_batch_takes(g, buf))
			continue;
		slot = slot_of(b, g->dev->nbd, false);
		if (slot == NBD_BATCH_LINKS)
			continue;
		max = nbd_link_max_request(g->dev->nbd);
		for (uint32_t at = g->done; at < g->len;) {
			uint32_t n = g->len - at < max ? g->len - at : max;

			if (add_piece(b, i, at, n, slot))
				return abandon(b);
			at += n;
		}
	}
	for (unsigned int i = 0; i < b->nr_pieces; i++) {
		struct nbd_piece *p = &b->pieces[i];

		if (b->slots[p->slot].conn)
			send_piece(b, p, s, buf, write);
		else
			fail_piece(b, p, s, write, "no connection to the NBD server");
	}
	return b->nr_pieces > 0;
}

/* Retires what completed on @slot's connection. */
static void reap(struct nbd_batch *b, unsigned int slot, struct segs *s, bool write)
{
	struct nbd_handle *h = b->slots[slot].conn->h;

	for (unsigned int i = 0; i < b->nr_pieces; i++) {
		struct nbd_piece *p = &b->pieces[i];
		int r;

		if (p->slot != slot || p->cookie < 0)
			continue;
		r = nbd_aio_command_completed(h, (uint64_t)p->cookie);
		if (r == 1) {
			s->v[p->seg].done += p->len;
			p->cookie = PIECE_DONE;
		} else if (r < 0 && nbd_conn_failed_by_drop(b->slots[slot].conn)) {
			p->cookie = PIECE_UNSENT;
		} else if (r < 0) {
			fail_piece(b, p, s, write, nbd_get_error());
		}
	}
}

static unsigned int pending(const struct nbd_batch *b, unsigned int slot, bool unsent)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < b->nr_pieces; i++)
		if (b->pieces[i].slot == slot &&
		    (unsent ? b->pieces[i].cookie == PIECE_UNSENT : b->pieces[i].cookie >= 0))
			n++;
	return n;
}

/*
 * @slot's connection dropped or hung: closed, and what it had not done
 * sent again on another while the link's timeout allows, else failed.
 */
static void resend(struct nbd_batch *b, unsigned int slot, struct segs *s, char *buf,
		   bool write)
{
	struct nbd_slot *sl = &b->slots[slot];

	for (unsigned int i = 0; i < b->nr_pieces; i++)
		if (b->pieces[i].slot == slot && b->pieces[i].cookie >= 0)
			b->pieces[i].cookie = PIECE_UNSENT;
	nbd_link_drop(sl->link, sl->conn);
	sl->conn = NULL;
	sl->timed_out = false;
	if (nbd_link_retry(sl->link, sl->deadline))
		sl->conn = nbd_link_get(sl->link, sl->deadline);
	for (unsigned int i = 0; i < b->nr_pieces; i++) {
		struct nbd_piece *p = &b->pieces[i];

		if (p->slot != slot || p->cookie != PIECE_UNSENT)
			continue;
		if (sl->conn)
			send_piece(b, p, s, buf, write);
		else
			fail_piece(b, p, s, write, "the NBD server did not come back within the timeout");
	}
}

/*
 * One poll of @slot's socket, as libnbd wants it, linked to its timeout:
 * two SQEs, both queued or neither (-EBUSY: the ring has no room).
 */
static int arm(struct nbd_batch *b, unsigned int slot, struct io_uring *ring,
	       struct __kernel_timespec *ts)
{
	struct nbd_slot *sl = &b->slots[slot];
	unsigned int dir = nbd_aio_get_direction(sl->conn->h);
	unsigned int events = ((dir & LIBNBD_AIO_DIRECTION_READ) ? POLLIN : 0) |
			      ((dir & LIBNBD_AIO_DIRECTION_WRITE) ? POLLOUT : 0);
	int ms = nbd_remaining_ms(sl->deadline);
	struct io_uring_sqe *sqe;

	if (io_uring_sq_space_left(ring) < 2)
		io_uring_submit(ring);
	if (io_uring_sq_space_left(ring) < 2)
		return -EBUSY;
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_poll_add(sqe, nbd_aio_get_fd(sl->conn->h), events);
	io_uring_sqe_set_data64(sqe, TAG_POLL | slot);
	sqe->flags |= IOSQE_IO_LINK;
	if (ms < 1)
		ms = 1;
	ts->tv_sec = ms / 1000;
	ts->tv_nsec = (long long)(ms % 1000) * 1000000;
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_link_timeout(sqe, ts, 0);
	io_uring_sqe_set_data64(sqe, TAG_TIMEOUT | slot);
	sl->armed = 2;
	return 0;
}

/* @slot's pieces in flight fail, and its connection is closed. */
static void give_up(struct nbd_batch *b, unsigned int slot, struct segs *s, bool write,
		   const char *why)
{
	struct nbd_slot *sl = &b->slots[slot];

	for (unsigned int i = 0; i < b->nr_pieces; i++)
		if (b->pieces[i].slot == slot && b->pieces[i].cookie >= 0)
			fail_piece(b, &b->pieces[i], s, write, why);
	nbd_link_drop(sl->link, sl->conn);
	sl->conn = NULL;
}

/* What a poll of @slot saw, told to libnbd. */
static void polled(struct nbd_batch *b, unsigned int slot, int res)
{
	struct nbd_slot *sl = &b->slots[slot];
	struct nbd_handle *h = sl->conn->h;

	if (res < 0) {		/* -ECANCELED: its timeout fired */
		sl->timed_out = true;
		return;
	}
	if (res & (POLLIN | POLLHUP | POLLERR))
		nbd_aio_notify_read(h);
	if ((res & POLLOUT) && (nbd_aio_get_direction(h) & LIBNBD_AIO_DIRECTION_WRITE))
		nbd_aio_notify_write(h);
}

/*
 * Every slot without a poll on the ring: its completions retired, its
 * connection replaced if it dropped, and armed again while it has pieces
 * in flight, else given back.  Whether any slot is still busy.
 */
static bool settle(struct nbd_batch *b, struct io_uring *ring, struct segs *s, char *buf,
		   bool write, struct __kernel_timespec *ts)
{
	bool busy = false;

	for (unsigned int i = 0; i < b->nr_slots; i++) {
		struct nbd_slot *sl = &b->slots[i];

		if (sl->armed) {
			busy = true;
			continue;
		}
		if (!sl->conn)
			continue;
		reap(b, i, s, write);
		if (sl->timed_out || nbd_conn_dropped(sl->conn) || pending(b, i, true))
			resend(b, i, s, buf, write);
		if (!sl->conn)
			continue;
		if (!pending(b, i, false)) {
			nbd_link_put(sl->link, sl->conn);
			sl->conn = NULL;
			continue;
		}
		if (arm(b, i, ring, &ts[i])) {
			give_up(b, i, s, write, "the io_uring has no room");
			continue;
		}
		busy = true;
	}
	return busy;
}

int nbd_batch_finish(struct nbd_batch *b, struct io_uring *ring, struct segs *s,
		     char *buf, bool write)
{
	struct __kernel_timespec ts[NBD_BATCH_LINKS];
	int err = 0;

	while (settle(b, ring, s, buf, write, ts)) {
		struct io_uring_cqe *cqe;
		unsigned int head, seen = 0;
		int r = io_uring_submit_and_wait(ring, 1);

		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
			return r;
		io_uring_for_each_cqe(ring, head, cqe) {
			unsigned int slot = TAG_SLOT(cqe->user_data);

			seen++;
			b->slots[slot].armed--;
			if (cqe->user_data & TAG_POLL)
				polled(b, slot, cqe->res);
		}
		io_uring_cq_advance(ring, seen);
	}
	for (unsigned int i = 0; i < b->nr_pieces; i++) {
		struct seg *g = &s->v[b->pieces[i].seg];

		if (b->pieces[i].cookie == PIECE_FAILED) {
			g->done = g->len;
			err = -EIO;
		}
	}
	return err;
}

void nbd_batch_release(struct nbd_batch *b)
{
	free(b->pieces);
	b->pieces = NULL;
	b->cap_pieces = 0;
}
