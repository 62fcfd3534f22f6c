#include "nbd_batch.h"

#include <errno.h>
#include <libnbd.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "direct.h"
#include "engine.h"
#include "log.h"
#include "nbd_conn.h"
#include "nbd_link.h"

/* Piece states besides a cookie (>= 0: sent, not yet reaped). */
#define PIECE_UNSENT	(-1)

/* user_data of the batch's SQEs: the kind, and the slot below. */
#define TAG_POLL	(1ull << 32)
#define TAG_TIMEOUT	(2ull << 32)
#define TAG_SLOT(d)	((unsigned int)((d) & 0xffffffffu))

bool nbd_batch_takes(const struct seg *g, const char *buf)
{
	return g->dev && g->dev->nbd && g->done < g->len &&
	       direct_aligned(g->dev, g->dev_off, g->len, buf + g->buf_off);
}

bool nbd_batch_tag(uint64_t user_data)
{
	return (user_data & (TAG_POLL | TAG_TIMEOUT)) != 0;
}

bool nbd_batch_busy(const struct nbd_batch *b)
{
	for (unsigned int i = 0; i < NBD_BATCH_LINKS; i++)
		if (b->slots[i].link)
			return true;
	return false;
}

/* The slot of @l, or NBD_BATCH_LINKS. */
static unsigned int slot_of(const struct nbd_batch *b, const struct nbd_link *l)
{
	for (unsigned int i = 0; i < NBD_BATCH_LINKS; i++)
		if (b->slots[i].link == l)
			return i;
	return NBD_BATCH_LINKS;
}

static void report(const struct nbd_piece *p, const char *why)
{
	static struct log_limit limit;
	const struct seg *g = &p->job->segs->v[p->seg];

	log_error_limited(&limit, "%s of %u bytes at offset %llu of '%s' failed: %s",
			  p->job->write ? "write" : "read", p->len,
			  (unsigned long long)(g->dev_off + p->at), g->dev->path, why);
}

/* Piece @i is over (done, or failed: @why); it leaves the batch. */
static void retire(struct nbd_batch *b, unsigned int i, const char *why)
{
	struct nbd_piece *p = &b->pieces[i];
	struct engine_job *j = p->job;
	struct seg *g = &j->segs->v[p->seg];

	if (why) {
		report(p, why);
		nbd_link_failed(b->slots[p->slot].link);
		g->done = g->len;
		j->result = -EIO;
	} else if (!j->result) {
		g->done += p->len;
	}
	if (--j->nbd_left == 0 && j->parked) {
		j->next = b->finished;
		b->finished = j;
	}
	*p = b->pieces[--b->nr_pieces];
}

/* Pieces of @slot: in flight (sent), or to be sent. */
static unsigned int pending(const struct nbd_batch *b, unsigned int slot, bool unsent)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < b->nr_pieces; i++)
		if (b->pieces[i].slot == slot &&
		    (unsent ? b->pieces[i].cookie == PIECE_UNSENT : b->pieces[i].cookie >= 0))
			n++;
	return n;
}

/* Every piece of @slot fails with @why. */
static void fail_slot(struct nbd_batch *b, unsigned int slot, const char *why)
{
	for (unsigned int i = b->nr_pieces; i-- > 0;)
		if (b->pieces[i].slot == slot)
			retire(b, i, why);
}

/* Sends @p on its slot's connection; a refusal leaves it unsent. */
static void send_piece(struct nbd_batch *b, struct nbd_piece *p)
{
	struct nbd_handle *h = b->slots[p->slot].conn->h;
	struct seg *g = &p->job->segs->v[p->seg];
	char *at = p->job->buf + g->buf_off + p->at;
	uint64_t off = g->dev_off + p->at;
	int64_t cookie = p->job->write
		? nbd_aio_pwrite(h, at, p->len, off, NBD_NULL_COMPLETION, 0)
		: nbd_aio_pread(h, at, p->len, off, NBD_NULL_COMPLETION, 0);

	p->cookie = cookie >= 0 ? cookie : PIECE_UNSENT;
}

/*
 * One poll of @slot's socket, as libnbd wants it, linked to its timeout:
 * two SQEs, both queued or neither (-EBUSY: the ring has no room).
 */
static int arm(struct nbd_batch *b, unsigned int slot, struct io_uring *ring)
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
	sl->ts.tv_sec = ms / 1000;
	sl->ts.tv_nsec = (long long)(ms % 1000) * 1000000;
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_link_timeout(sqe, &sl->ts, 0);
	io_uring_sqe_set_data64(sqe, TAG_TIMEOUT | slot);
	sl->armed = 2;
	return 0;
}

/*
 * @slot's connection dropped or hung: closed, and what it had not done
 * sent again on another while the link's timeout allows, else failed.
 */
static void resend(struct nbd_batch *b, unsigned int slot)
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
	if (!sl->conn) {
		fail_slot(b, slot, "the NBD server did not come back within the timeout");
		return;
	}
	for (unsigned int i = 0; i < b->nr_pieces; i++)
		if (b->pieces[i].slot == slot && b->pieces[i].cookie == PIECE_UNSENT)
			send_piece(b, &b->pieces[i]);
}

/* Retires what completed on @slot's connection; whether any did. */
static bool reap(struct nbd_batch *b, unsigned int slot)
{
	struct nbd_slot *sl = &b->slots[slot];
	bool progress = false;

	for (unsigned int i = b->nr_pieces; i-- > 0;) {
		struct nbd_piece *p = &b->pieces[i];
		int r;

		if (p->slot != slot || p->cookie < 0)
			continue;
		r = nbd_aio_command_completed(sl->conn->h, (uint64_t)p->cookie);
		if (r == 1) {
			retire(b, i, NULL);
			progress = true;
		} else if (r < 0 && nbd_conn_failed_by_drop(sl->conn)) {
			p->cookie = PIECE_UNSENT;
		} else if (r < 0) {
			retire(b, i, nbd_get_error());
		}
	}
	return progress;
}

/*
 * @slot has no SQE on the ring: its completions retired, its connection
 * replaced if it dropped or hung, and armed again while it has pieces,
 * else given back and the slot freed.
 */
static void settle(struct nbd_batch *b, unsigned int slot, struct io_uring *ring)
{
	struct nbd_slot *sl = &b->slots[slot];

	if (!sl->conn) {
		fail_slot(b, slot, "no connection to the NBD server");
	} else {
		if (reap(b, slot))
			sl->deadline = nbd_now_ms() + nbd_link_timeout_ms(sl->link);
		if (sl->timed_out || nbd_conn_dropped(sl->conn) || pending(b, slot, true))
			resend(b, slot);
	}
	if (sl->conn && pending(b, slot, false)) {
		if (!arm(b, slot, ring))
			return;
		fail_slot(b, slot, "the io_uring has no room");
		nbd_link_drop(sl->link, sl->conn);
		sl->conn = NULL;
	}
	/* Nothing in flight: what a new connection would not take fails. */
	fail_slot(b, slot, "the NBD connection took no more requests");
	if (sl->conn)
		nbd_link_put(sl->link, sl->conn);
	*sl = (struct nbd_slot){ .link = NULL };
}

static int by_link(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(struct nbd_link *const *)a;
	uintptr_t y = (uintptr_t)*(struct nbd_link *const *)b;

	return (x > y) - (x < y);
}

/*
 * Slots for the links @j names that have none: taken in the links'
 * address order, waiting if the batch held no connection; else only
 * what is to be had at once.  0, or -EAGAIN with nothing taken.
 */
static int take_links(struct nbd_batch *b, struct engine_job *j)
{
	struct nbd_link *want[NBD_BATCH_LINKS];
	unsigned int nr = 0, free_slots = 0, taken[NBD_BATCH_LINKS];
	bool wait = !nbd_batch_busy(b);
	struct segs *s = j->segs;

	for (unsigned int i = 0; i < NBD_BATCH_LINKS; i++)
		free_slots += !b->slots[i].link;
	for (unsigned int i = 0; i < s->nr; i++) {
		struct nbd_link *l;
		unsigned int k;

		if (!nbd_batch_takes(&s->v[i], j->buf))
			continue;
		l = s->v[i].dev->nbd;
		if (slot_of(b, l) < NBD_BATCH_LINKS)
			continue;
		for (k = 0; k < nr && want[k] != l; k++)
			;
		if (k < nr)
			continue;
		if (nr == free_slots)
			return -EAGAIN;
		want[nr++] = l;
	}
	qsort(want, nr, sizeof(want[0]), by_link);
	for (unsigned int k = 0; k < nr; k++) {
		uint64_t deadline = nbd_now_ms() + nbd_link_timeout_ms(want[k]);
		unsigned int i = slot_of(b, NULL);
		struct nbd_slot *sl = &b->slots[i];

		*sl = (struct nbd_slot){ .link = want[k], .deadline = deadline };
		sl->conn = wait ? nbd_link_get(want[k], deadline) : nbd_link_take(want[k], deadline);
		taken[k] = i;
		if (sl->conn || wait)
			continue;
		for (unsigned int m = 0; m <= k; m++) {
			struct nbd_slot *t = &b->slots[taken[m]];

			if (t->conn)
				nbd_link_put(t->link, t->conn);
			*t = (struct nbd_slot){ .link = NULL };
		}
		return -EAGAIN;
	}
	return 0;
}

static int add_piece(struct nbd_batch *b, struct engine_job *j, unsigned int seg,
		     uint32_t at, uint32_t len, unsigned int slot)
{
	if (b->nr_pieces == b->cap_pieces) {
		unsigned int cap = b->cap_pieces ? 2 * b->cap_pieces : 64;
		struct nbd_piece *v = realloc(b->pieces, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->pieces = v;
		b->cap_pieces = cap;
	}
	b->pieces[b->nr_pieces++] = (struct nbd_piece){ j, seg, at, len, PIECE_UNSENT, slot };
	return 0;
}

int nbd_batch_add(struct nbd_batch *b, struct io_uring *ring, struct engine_job *j)
{
	struct segs *s = j->segs;
	unsigned int first = b->nr_pieces;
	bool idle[NBD_BATCH_LINKS];
	int r = take_links(b, j);

	if (r)
		return r;
	j->nbd_left = 0;
	for (unsigned int i = 0; i < s->nr; i++) {
		struct seg *g = &s->v[i];
		unsigned int slot;
		uint32_t max;

		if (!nbd_batch_takes(g, j->buf))
			continue;
		slot = slot_of(b, g->dev->nbd);
		max = nbd_link_max_request(g->dev->nbd);
		for (uint32_t at = g->done; at < g->len;) {
			uint32_t n = g->len - at < max ? g->len - at : max;

			if (add_piece(b, j, i, at, n, slot)) {
				b->nr_pieces = first;	/* nothing was sent */
				for (unsigned int k = 0; k < NBD_BATCH_LINKS; k++)
					if (b->slots[k].link && !b->slots[k].armed)
						settle(b, k, ring);
				return -ENOMEM;
			}
			j->nbd_left++;
			at += n;
		}
	}
	if (!j->nbd_left)
		return 0;
	for (unsigned int k = 0; k < NBD_BATCH_LINKS; k++)
		idle[k] = !b->slots[k].armed;
	for (unsigned int i = first; i < b->nr_pieces; i++) {
		struct nbd_piece *p = &b->pieces[i];

		if (b->slots[p->slot].conn)
			send_piece(b, p);
	}
	/* Slots this job woke: armed (or, with no connection, failed). */
	for (unsigned int k = 0; k < NBD_BATCH_LINKS; k++)
		if (b->slots[k].link && idle[k])
			settle(b, k, ring);
	return 1;
}

/* What a poll of @slot saw, told to libnbd. */
static void polled(struct nbd_slot *sl, int res)
{
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

void nbd_batch_event(struct nbd_batch *b, struct io_uring *ring, uint64_t user_data,
		     int res)
{
	unsigned int slot = TAG_SLOT(user_data);
	struct nbd_slot *sl;

	if (slot >= NBD_BATCH_LINKS || !b->slots[slot].armed)
		return;
	sl = &b->slots[slot];
	sl->armed--;
	if ((user_data & TAG_POLL) && sl->conn)
		polled(sl, res);
	if (!sl->armed)
		settle(b, slot, ring);
}

void nbd_batch_abandon(struct nbd_batch *b)
{
	for (unsigned int k = 0; k < NBD_BATCH_LINKS; k++) {
		struct nbd_slot *sl = &b->slots[k];

		if (!sl->link)
			continue;
		fail_slot(b, k, "the io engine stopped");
		if (sl->conn)
			nbd_link_drop(sl->link, sl->conn);
		*sl = (struct nbd_slot){ .link = NULL };
	}
}

void nbd_batch_release(struct nbd_batch *b)
{
	free(b->pieces);
	b->pieces = NULL;
	b->nr_pieces = 0;
	b->cap_pieces = 0;
}
