/*
 * tools/wire.h: the control channel's framing.
 *
 * The daemon listens on POOL_DIR/control.sock (a Unix stream socket, mode
 * 0600, in a 0700 pool directory).  One request per connection:
 *
 *   request:  "MPFS" u32 argc, then argc NUL-terminated strings
 *   response: i32 exit status, u32 out_len, out bytes, u32 err_len, err bytes
 *
 * Integers are little-endian.  A request is at most WIRE_MAX bytes.
 */
#ifndef MAPPERFS_WIRE_H
#define MAPPERFS_WIRE_H

#include <stddef.h>

#define WIRE_MAX	(64u << 20)	/* bytes: room for million-region tables */
#define CONTROL_SOCKET	"control.sock"

/* Writes a request.  0 or -errno. */
int wire_send_request(int fd, int argc, char *const *argv);
/* Reads a request; *argv is one malloc'ed block (free(*argv)).  0 or -errno. */
int wire_recv_request(int fd, int *argc, char ***argv);
int wire_send_response(int fd, int status, const char *out, size_t out_len,
		       const char *err, size_t err_len);
/* Reads a response; out/err malloc'ed and NUL-terminated.  0 or -errno. */
int wire_recv_response(int fd, int *status, char **out, char **err);

/*
 * Connects to the daemon of @pool_dir.  Returns the socket, -ENOENT or
 * -ECONNREFUSED when no daemon listens, or another -errno.
 */
int wire_connect(const char *pool_dir);

#endif
