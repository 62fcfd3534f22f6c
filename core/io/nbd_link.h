/*
 * core/io/nbd_link.h: a raw device that is an NBD export, reached through
 * libnbd (nbd://HOST[:PORT]/EXPORT, nbd+unix:///EXPORT?socket=PATH).
 *
 * A link holds connections to one export.  A thread's io engine takes
 * one for as long as it has requests in flight on the link and gives it
 * back after (nbd_link_get/put, nbd_batch.h), driving it with libnbd's
 * asynchronous calls, the connection's socket polled on that thread's
 * io_uring; a thread that parks requests pipelines them all on it.
 * Where the server says flush is safe across connections (multi-conn),
 * a link holds up to NBD_LINK_CONNS of them, opened as threads ask, as
 * many as the daemon's default threads, so that no thread waits for
 * another's connection (bench/nbd.sh, threads of one request each: 16
 * connections for 32 threads read 64 KiB at QD32 40% slower than 32);
 * else one, which threads take in turn.  A flush on any
 * connection then covers every write any connection completed, which is
 * what a thin commit's data flush relies on (device_sync, engine_sync).
 *
 * A dropped connection is reopened, and its requests sent again, until
 * the link's timeout has passed since they were sent; then they fail with
 * EIO (and a mirror leg on the link fails, so its volume serves from the
 * others).  A server that says nothing for that long (hung) is dropped
 * the same way.  That is the NBD kernel client's dead-connection timeout,
 * not dm-multipath's queue_if_no_path, which queues forever and leaves
 * its callers unkillable: a request here never waits longer than the
 * timeout (docs/distributed.md), and once the connections have been lost
 * for longer, a request makes one quick try and fails.  An error the
 * server answers on a live connection is the device's: the request fails
 * at once, as a failed sector would; but ESHUTDOWN (a server stopping
 * gracefully) is a drop, and the link lets go of every connection so the
 * server can exit.
 *
 * Identity.  A server restarted empty, or another disk put behind the
 * same address, would answer a reconnect as gladly as the right one.  So
 * every new connection first reads the device's first NBD_LINK_HEAD
 * bytes (where its label lies) and must find what the link knows is
 * there; if not, it is closed and the request waits and fails as for a
 * server that is away, and status says why.
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
#define NBD_LINK_HEAD		4096	/* bytes: the device's identity, its label's start */
#define NBD_LINK_IDLE_MS	5000	/* an idle connection is closed after (nbd_link_tick) */

struct nbd_conn;
struct nbd_link;

/* What the link has seen, for status. */
struct nbd_link_stats {
	bool reconnecting;		/* a connection dropped, none opened since */
	uint64_t down_ms;		/* for how long, if reconnecting */
	char reason[160];		/* why the last connection failed, or "" */
	unsigned int conns;		/* open connections */
	unsigned int max_conns;		/* how many it opens at most */
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
 * Connects to @uri (within the timeout), reads what the server offers and
 * the device's first NBD_LINK_HEAD bytes, its identity.  Blocks.  0, or
 * -errno with a phrase in @why: -EHOSTUNREACH when no connection could be
 * made, -EROFS for a read-only export, -ENOTSUP for block size
 * constraints above 4 KiB, -EIO.
 */
int nbd_link_open(const char *uri, struct nbd_link **out, char *why, size_t why_len);
void nbd_link_close(struct nbd_link *l);

uint64_t nbd_link_size(const struct nbd_link *l);		/* bytes */
unsigned int nbd_link_min_block(const struct nbd_link *l);	/* bytes, 1..4096 */
uint32_t nbd_link_max_request(const struct nbd_link *l);	/* bytes */
unsigned int nbd_link_timeout_ms(const struct nbd_link *l);
void nbd_link_stats(struct nbd_link *l, struct nbd_link_stats *out);

/*
 * A connection of @l for the calling thread, until @deadline (ms, as
 * nbd_now_ms): an idle one, else a new one if the link may hold another,
 * else the next to go idle.  A new connection must show the device's
 * identity (its first NBD_LINK_HEAD bytes as the link last knew them): a
 * server restarted empty, or another disk behind the same address, is
 * refused, never served.  While the link has lost its connections it
 * reconnects, with a growing pause, until @deadline; once they are lost
 * for longer than the timeout, one try, so that requests fail at once
 * while the server stays away.  An extra connection the server does not
 * take (it caps them) lowers what the link opens to what it has.  NULL
 * when none could be had.  Blocks.
 */
struct nbd_conn *nbd_link_get(struct nbd_link *l, uint64_t deadline);
/*
 * The same, but never waits for a connection another thread holds: NULL
 * at once when the link holds all it may and none is idle.  For a thread
 * that holds connections of other links already (nbd_batch.h): waiting
 * there could wait for a thread that waits for it.  Blocks only to
 * connect.
 */
struct nbd_conn *nbd_link_take(struct nbd_link *l, uint64_t deadline);
/*
 * What the link does while nobody asks (about once a second, from the
 * pool's monitor): closes connections idle for NBD_LINK_IDLE_MS, so that
 * a server told to stop (nbdkit on SIGTERM waits for its clients) can,
 * and the next request opens what it needs (with multi-conn only: there a
 * flush on any connection covers the writes of every one, closed or not;
 * a single connection stays, its writes not yet flushed); and, every few
 * seconds while the link has lost its connections, tries one
 * (QUICK_CONNECT_MS at most), so that status says when the server is
 * back before a request finds out.  Blocks up to a second.
 */
void nbd_link_tick(struct nbd_link *l);

/*
 * Whether a connection can be had now (QUICK_CONNECT_MS at most), shown
 * to be the device's; it is kept idle.  Blocks up to a second.
 */
bool nbd_link_probe(struct nbd_link *l);

/* Gives @c back; a connection that died, or has requests left, is closed instead. */
void nbd_link_put(struct nbd_link *l, struct nbd_conn *c);
/*
 * Closes @c, at once and whatever it has in flight (no disconnect is
 * asked: a hung server would never answer it), as a lost connection, and
 * the idle ones with it (the server that lost one has likely lost all):
 * the link says reconnecting until it opens another.
 */
void nbd_link_drop(struct nbd_link *l, struct nbd_conn *c);

/*
 * Counts a request sent again after its connection dropped, and tells
 * whether its deadline (ms) still allows it.
 */
bool nbd_link_retry(struct nbd_link *l, uint64_t deadline);
/* Counts a request (or a piece of one) that failed for good. */
void nbd_link_failed(struct nbd_link *l);

/*
 * Whole-request calls for everything outside the io engine (labels,
 * layout areas, read-modify-writes, flushes, zeroing): each takes a
 * connection, retries as above within the timeout, and gives it back.
 * Blocks.  0 or -errno (-EIO for a server error or the timeout;
 * -EOPNOTSUPP where the export cannot: trim, zero).  Reads and writes
 * must lie inside the export and meet its block size.  A write over the
 * first NBD_LINK_HEAD bytes (a label) changes the identity new
 * connections must show; the engine's writes never reach them.
 */
int nbd_link_pread(struct nbd_link *l, void *buf, size_t len, uint64_t off);
int nbd_link_pwrite(struct nbd_link *l, const void *buf, size_t len, uint64_t off);
int nbd_link_flush(struct nbd_link *l);
int nbd_link_trim(struct nbd_link *l, uint64_t off, uint64_t len);
int nbd_link_zero(struct nbd_link *l, uint64_t off, uint64_t len, bool punch);

#endif
