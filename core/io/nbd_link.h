/*
 * core/io/nbd_link.h: a raw device that is an NBD export, reached through
 * libnbd (nbd://HOST[:PORT]/EXPORT, nbd+unix:///EXPORT?socket=PATH).
 *
 * A link holds connections to one export.  A thread takes one for a
 * request and gives it back after (nbd_link_get/put), so the io engine
 * of each thread drives its own connection with libnbd's asynchronous
 * calls, the connection's socket polled on that thread's io_uring
 * (engine.c).  Where the server says flush is safe across connections
 * (multi-conn), a link holds up to NBD_LINK_CONNS of them, opened as
 * threads ask, as many as the daemon's default threads, so that no
 * thread waits for another's connection (bench/nbd.sh: 16 connections
 * for 32 threads read 64 KiB at QD32 40% slower than 32); else one,
 * which threads take in turn.  A flush on any
 * connection then covers every write any connection completed, which is
 * what a thin commit's data flush relies on (device_sync, engine_sync).
 *
 * A dropped connection is reopened, and its requests sent again, until
 * the link's timeout has passed since the drop; then they fail with EIO
 * (and a mirror leg on the link fails, so its volume serves from the
 * others).  That is the NBD kernel client's dead-connection timeout, not
 * dm-multipath's queue_if_no_path, which queues forever and leaves its
 * callers unkillable: a request here never waits longer than the timeout
 * (docs/distributed.md).  An error the server answers on a live
 * connection is the device's: the request fails at once, as a failed
 * sector would.
 *
 * Requests keep the server's block size constraints: its minimum is the
 * device's unit (dio_off_align: a request off it is read-modify-written
 * by direct.c, under the device's range lock), its maximum splits larger
 * ones.  device.c claims a link's URI as it claims a file.
 *
 * Thread safety: the link's own state takes a mutex; a connection is used
 * by the one thread that took it.
 */
#ifndef MAPPERFS_NBD_LINK_H
#define MAPPERFS_NBD_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NBD_LINK_CONNS		32	/* connections per link, with multi-conn */
#define NBD_LINK_TIMEOUT_MS	30000	/* default: as the NBD kernel client's */

struct nbd_handle;
struct nbd_link;

/* One connection: a libnbd handle, used by one thread at a time. */
struct nbd_conn {
	struct nbd_handle *h;
	struct nbd_conn *next;		/* the link's idle list */
};

/* What the link has seen, for status. */
struct nbd_link_stats {
	bool reconnecting;		/* a connection dropped, none opened since */
	unsigned int conns;		/* open connections */
	bool multi_conn;
	uint64_t reconnects;		/* connections reopened after a drop */
	uint64_t retried;		/* requests sent again on a new connection */
	uint64_t failed;		/* requests failed: a server error or the timeout */
};

/* Whether @path names an NBD export (a libnbd URI) rather than a file. */
bool nbd_link_is_uri(const char *path);

/*
 * Sets the timeout of links opened after the call (milliseconds, > 0):
 * the daemon's -o nbd_timeout.
 */
void nbd_link_set_timeout(unsigned int ms);

/*
 * Connects to @uri (within the timeout) and reads what the server offers.
 * Blocks.  0, or -errno with a phrase in @why: -EINVAL for a URI libnbd
 * refuses, -EHOSTUNREACH when no connection could be made, -EROFS for a
 * read-only export, -ENOTSUP for block size constraints above 4 KiB.
 */
int nbd_link_open(const char *uri, struct nbd_link **out, char *why, size_t why_len);
void nbd_link_close(struct nbd_link *l);

uint64_t nbd_link_size(const struct nbd_link *l);		/* bytes */
unsigned int nbd_link_min_block(const struct nbd_link *l);	/* bytes, 1..4096 */
uint32_t nbd_link_max_request(const struct nbd_link *l);	/* bytes */
unsigned int nbd_link_timeout_ms(const struct nbd_link *l);
const char *nbd_link_uri(const struct nbd_link *l);
void nbd_link_stats(struct nbd_link *l, struct nbd_link_stats *out);

/*
 * A connection of @l for the calling thread, opened if none is idle and
 * the link may hold another; waits for one otherwise, and reconnects
 * while the link has none, until the timeout.  NULL when the timeout
 * passed (or out of memory).  Blocks.
 */
struct nbd_conn *nbd_link_get(struct nbd_link *l);
/* Gives @c back; a connection that died, or has requests left, is closed instead. */
void nbd_link_put(struct nbd_link *l, struct nbd_conn *c);
/*
 * Closes @c, at once and whatever it has in flight (no disconnect is
 * asked: a hung server would never answer it), as a lost connection: the
 * link says reconnecting until it opens another.
 */
void nbd_link_drop(struct nbd_link *l, struct nbd_conn *c);

/*
 * Whether a request that failed on @c failed because the connection
 * dropped (send it again on another: nbd_link_retry), not because the
 * server answered an error.
 */
bool nbd_conn_dropped(const struct nbd_conn *c);
/*
 * Counts a request sent again after @c dropped, and tells whether the
 * timeout still allows it (@since_ms: CLOCK_MONOTONIC milliseconds when
 * the request first failed).
 */
bool nbd_link_retry(struct nbd_link *l, uint64_t since_ms);
/* Counts a request (or a piece of one) that failed for good. */
void nbd_link_failed(struct nbd_link *l);

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t nbd_link_now_ms(void);

/*
 * Whole-request calls for everything outside the io engine (labels,
 * layout areas, read-modify-writes, flushes, zeroing): each takes a
 * connection, retries as above, and gives it back.  Blocks.  0 or -errno
 * (-EIO for a server error or the timeout; -EOPNOTSUPP where the export
 * cannot: trim, zero).  Reads and writes must lie inside the export.
 */
int nbd_link_pread(struct nbd_link *l, void *buf, size_t len, uint64_t off);
int nbd_link_pwrite(struct nbd_link *l, const void *buf, size_t len, uint64_t off);
int nbd_link_flush(struct nbd_link *l);
int nbd_link_trim(struct nbd_link *l, uint64_t off, uint64_t len);
int nbd_link_zero(struct nbd_link *l, uint64_t off, uint64_t len, bool punch);

#endif
