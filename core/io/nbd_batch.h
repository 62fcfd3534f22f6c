/*
 * core/io/nbd_batch.h: the pieces of an engine's requests (engine.h,
 * struct engine_job) that lie on NBD devices (nbd_link.h), sent with
 * libnbd's asynchronous calls and waited for on the engine's io_uring.
 *
 * For each link its requests use, a batch holds one connection (a slot)
 * for as long as it has pieces in flight there, so that the requests of
 * one thread pipeline on it: the server sees many commands at once on
 * few connections, and a thread with many requests in flight
 * (engine_start) wakes once for many replies.  A busy slot has one poll
 * of its socket on the ring, as libnbd asks (in, and out while it has
 * bytes to send), linked to a timeout at the slot's deadline: the link's
 * timeout after its last sign of life (a piece sent on an idle slot, or
 * one that completed).  When the poll completes, libnbd is told, the
 * pieces that completed are retired, and the slot is armed again while
 * it has pieces left, else its connection is given back.  A connection
 * that drops, or a deadline that passes with the server silent, is
 * closed and its pieces sent again on a new one (nbd_link_get, which
 * blocks) until the deadline; then, or when no connection can be had,
 * they fail.  A job whose last piece is retired goes on the batch's
 * finished list if it is parked; the caller of a job that is not waits
 * for its count of pieces to reach zero.
 *
 * Connections: a batch that holds none takes the ones a job needs in the
 * links' address order, waiting if need be; one that holds some only
 * takes what is to be had at once (nbd_link_take), else refuses the job
 * whole: two threads that each hold one link's only connection never
 * wait for the other's.
 *
 * A segment off the device's block size (min_block > 1) is not the
 * batch's: direct.c reads or writes it whole, read-modify-write if need
 * be.  Segment done counts only grow: a piece is counted when it has
 * completed, so a piece sent again after a drop is counted once.
 */
#ifndef MAPPERFS_NBD_BATCH_H
#define MAPPERFS_NBD_BATCH_H

#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>

#include "segs.h"

#define NBD_BATCH_LINKS	16

struct engine_job;
struct nbd_conn;
struct nbd_link;

struct nbd_piece {
	struct engine_job *job;
	unsigned int seg;		/* index in the job's segs */
	uint32_t at, len;		/* bytes, from the segment's start */
	int64_t cookie;			/* libnbd's; < 0: to be sent */
	unsigned int slot;
};

struct nbd_slot {
	struct nbd_link *link;		/* NULL: the slot is free */
	struct nbd_conn *conn;		/* NULL: none could be had */
	unsigned int armed;		/* SQEs of this slot on the ring */
	bool timed_out;			/* its last poll saw nothing until the deadline */
	uint64_t deadline;		/* ms (nbd_now_ms): its pieces fail after */
	struct __kernel_timespec ts;	/* its linked timeout's */
};

struct nbd_batch {
	struct nbd_slot slots[NBD_BATCH_LINKS];
	struct nbd_piece *pieces;	/* in flight or to be sent, any order */
	unsigned int nr_pieces, cap_pieces;
	struct engine_job *finished;	/* parked jobs whose pieces are all retired */
};

/* Whether @g is the batch's: aligned data of an NBD device. */
bool nbd_batch_takes(const struct seg *g, const char *buf);

/* Whether an engine ring's completion tagged @user_data is a batch's. */
bool nbd_batch_tag(uint64_t user_data);

/* Whether the batch holds a connection (has pieces in flight). */
bool nbd_batch_busy(const struct nbd_batch *b);

/*
 * Sends the pieces of @j's segments that nbd_batch_takes() and arms the
 * polls of their slots on @ring (queued, for the caller to submit).  1
 * if it sent any (@j->nbd_left of them), 0 if it had none, -EAGAIN if a
 * connection could not be had without waiting or no slot is free for a
 * link (nothing sent), -ENOMEM.  May block to connect, and for a
 * connection when the batch held none.  Pieces that cannot be sent (no
 * connection came) fail at once.
 */
int nbd_batch_add(struct nbd_batch *b, struct io_uring *ring, struct engine_job *j);

/*
 * A completion of @ring tagged for the batch (nbd_batch_tag), whose
 * result is @res: tells libnbd, retires what completed, reconnects and
 * resends or fails as above, arms the slot again (queued).  May block
 * to reconnect after a drop.
 */
void nbd_batch_event(struct nbd_batch *b, struct io_uring *ring, uint64_t user_data,
		     int res);

/*
 * The ring will complete nothing more (it broke, or goes away): every
 * piece fails, every connection is closed (commands may be in flight on
 * it).  Parked jobs go on the finished list.
 */
void nbd_batch_abandon(struct nbd_batch *b);

void nbd_batch_release(struct nbd_batch *b);

#endif
