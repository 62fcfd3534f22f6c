/*
 * core/io/nbd_batch.h: the segments of one engine request that lie on NBD
 * devices (nbd_link.h), sent with libnbd's asynchronous calls and waited
 * for on the engine's io_uring.
 *
 * The engine starts the batch before it queues the request's local
 * segments, and finishes it after, so the network and the local devices
 * work at once (a mirror with a remote leg writes both legs together).
 * Start takes one connection of each link the segments name (at most
 * NBD_BATCH_LINKS, in the links' address order; start again for the
 * rest) and sends every piece; finish arms one poll of each connection's
 * socket on the ring, linked to a timeout at the slot's deadline (the
 * link's timeout after the start), tells libnbd what the poll saw, and
 * retires the pieces that completed, until none is left.  A connection
 * that drops is closed once its poll is reaped, and its pieces go again
 * on a new one (nbd_link_get) until the deadline; then, or when the
 * deadline passes with the server silent, they fail.  Every SQE the
 * batch puts on the ring has completed when finish returns: nothing it
 * armed is left to be reaped by the engine's next request.
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

#define NBD_BATCH_LINKS	8

struct nbd_conn;
struct nbd_link;

struct nbd_piece {
	unsigned int seg;		/* index in the request's segs */
	uint32_t at, len;		/* bytes, from the segment's start */
	int64_t cookie;			/* libnbd's; < 0: to be sent */
	unsigned int slot;
};

struct nbd_slot {
	struct nbd_link *link;
	struct nbd_conn *conn;		/* NULL: none could be had */
	unsigned int armed;		/* SQEs of this slot on the ring */
	bool timed_out;			/* its last poll saw nothing until the deadline */
	uint64_t deadline;		/* ms (nbd_now_ms): its pieces fail after */
};

struct nbd_batch {
	struct nbd_slot slots[NBD_BATCH_LINKS];
	unsigned int nr_slots;
	struct nbd_piece *pieces;
	unsigned int nr_pieces, cap_pieces;
};

/* Whether @g is the batch's: aligned data of an NBD device. */
bool nbd_batch_takes(const struct seg *g, const char *buf);

/*
 * Sends the pieces of the segments of @s that nbd_batch_takes() and that
 * are not done, on up to NBD_BATCH_LINKS links.  May block for a
 * connection (nbd_link_get).  1 if it took any (finish them), 0 if none
 * is left, -ENOMEM.
 */
int nbd_batch_start(struct nbd_batch *b, struct segs *s, char *buf, bool write);

/*
 * Waits on @ring for every piece sent, as above; adds what completed to
 * the segments' done, and gives the connections back.  0, -EIO when a
 * piece failed (logged), or -errno of the ring (nothing is left on it).
 * Blocks.
 */
int nbd_batch_finish(struct nbd_batch *b, struct io_uring *ring, struct segs *s,
		     char *buf, bool write);

void nbd_batch_release(struct nbd_batch *b);	/* frees the pieces' array */

#endif
