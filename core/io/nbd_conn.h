/*
 * core/io/nbd_conn.h: one connection to an NBD export, a libnbd handle
 * driven with its asynchronous calls.  A link (nbd_link.h) holds several
 * and hands them to threads; one thread uses a connection at a time.
 *
 * Every wait here has a deadline (CLOCK_MONOTONIC milliseconds): a server
 * that accepts a connection and then says nothing (a stopped process, a
 * hung host) costs the time left, never more.
 */
#ifndef MAPPERFS_NBD_CONN_H
#define MAPPERFS_NBD_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct nbd_handle;

struct nbd_conn {
	struct nbd_handle *h;
	struct nbd_conn *next;		/* the link's idle list */
	uint64_t idle_since;		/* ms (nbd_now_ms): when it went on that list */
};

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t nbd_now_ms(void);
/* Milliseconds from now to @deadline, 0 if it passed. */
int nbd_remaining_ms(uint64_t deadline);

/*
 * Connects to @uri and completes the handshake before @deadline; a URI
 * with tls-psk-file=PATH (nbds://IDENTITY@HOST/?tls-psk-file=PATH) has
 * that key file opened here, never through a link at its end, and read
 * by libnbd from the descriptor.  The
 * connection, or NULL and a phrase in @why ("no answer" when the deadline
 * passed).  Blocks.
 */
struct nbd_conn *nbd_conn_open(const char *uri, uint64_t deadline, char *why, size_t why_len);
/*
 * Whose TLS key files connections take (besides root's): the pool
 * owner's, set when the pool opens (psk_file.h).  Root (0) until then.
 */
void nbd_conn_set_key_owner(uid_t uid);
/* Closes at once, whatever is in flight: no disconnect is asked for. */
void nbd_conn_close(struct nbd_conn *c);

/*
 * Waits for the socket of @h as libnbd asks, until @deadline, and tells
 * libnbd what happened.  0, -ETIMEDOUT, or -EIO when the handle died.
 */
int nbd_conn_poll(struct nbd_handle *h, uint64_t deadline);

/*
 * Reads @len bytes at @off on @c before @deadline (a whole request, the
 * server's block size met by the caller).  0, -EIO for an error the
 * server answered, -ENOTCONN when the connection dropped or hung.
 */
int nbd_conn_pread(struct nbd_conn *c, void *buf, size_t len, uint64_t off,
		   uint64_t deadline);

/* Whether @c's connection is gone (dead or closed). */
bool nbd_conn_dropped(const struct nbd_conn *c);
/*
 * Whether the command that just failed on @c (libnbd's errno of this
 * thread) failed because the connection went: it dropped, or the server
 * is shutting down (ESHUTDOWN: a server stopped with SIGTERM answers so
 * and waits for its clients to go), not because the server answered an
 * error for the data.
 */
bool nbd_conn_failed_by_drop(const struct nbd_conn *c);

#endif
