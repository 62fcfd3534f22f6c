/*
 * tools/wire.h: the control channel's framing.
 *
 * The daemon listens on POOL_DIR/control.sock (a Unix stream socket, mode
 * 0600, in a 0700 pool directory).  One request per connection:
 *
 *   request:  "MPFS" u32 argc, then argc NUL-terminated strings
 *   response: any number of notes, then the result:
 *     note:   u32 WIRE_NOTE, u32 len, len bytes: a line for stderr that the
 *             daemon sends while the command waits ("waiting for ...")
 *     result: i32 exit status (0..255), u32 out_len, out bytes, u32 err_len,
 *             err bytes
 *
 * Integers are little-endian.  A request is at most WIRE_MAX bytes.  A
 * request may carry one open file (SCM_RIGHTS, with its first bytes): the
 * file the command reads or writes, which mapperctl opened with its
 * caller's rights, so that a pipe or its own standard input or output
 * reaches the daemon, and the daemon opens no path for a client (cmd.h,
 * input_option and output_option).
 */
#ifndef MAPPERFS_WIRE_H
#define MAPPERFS_WIRE_H

#include <stddef.h>
#include <stdio.h>

#define WIRE_MAX	(64u << 20)	/* bytes: room for million-region tables */
#define CONTROL_SOCKET	"control.sock"
#define WIRE_NOTE	0x45544f4eu	/* "NOTE": no exit status is that large */

/* Writes a request, with open file @file unless it is -1.  0 or -errno. */
int wire_send_request(int fd, int argc, char *const *argv, int file);
/*
 * Reads a request; *argv is one malloc'ed block (free(*argv)).  The file
 * it carries, if any, is in *file (close it), else -1; with @file NULL,
 * one is closed.  The whole request must arrive within @timeout_ms of the
 * call (-1: no limit), however it trickles in: a peer that sends a byte
 * now and then holds the reader no longer than that.  @fd must block.
 * 0 or -errno (and no file): -ETIMEDOUT when time ran out, -EPROTO for a
 * request that is not one.
 */
int wire_recv_request(int fd, int *argc, char ***argv, int *file, int timeout_ms);
int wire_send_response(int fd, int status, const char *out, size_t out_len,
		       const char *err, size_t err_len);
/*
 * Writes a note (@line, with its newline) before the response.  Does not
 * wait for room in the socket: -EAGAIN if there is none.  0 or -errno.
 */
int wire_send_note(int fd, const char *line);
/*
 * Reads a response; out/err malloc'ed and NUL-terminated.  Notes that
 * come first are written to @notes as they arrive (NULL: dropped).
 * 0 or -errno.
 */
int wire_recv_response(int fd, int *status, char **out, char **err, FILE *notes);

/*
 * Connects to the daemon of @pool_dir, if it may be trusted with what
 * this process sends (a command line, an open file): POOL/control.sock
 * must be a socket, not a link, with no other name, owned by root or by
 * this user, and the process that listens on it (SO_PEERCRED) must run as
 * root or as this user.  The pool's owner may be someone else, who could
 * put a listener of theirs there.  Sends nothing.  Returns the socket,
 * -ENOENT or -ECONNREFUSED when no daemon listens, -EPERM when the socket
 * or its listener is not trusted (said in @why, @why_len bytes, if not
 * NULL: "'POOL/control.sock' is served by uid 1000 ..."), or another
 * -errno.
 */
int wire_connect(const char *pool_dir, char *why, size_t why_len);

#endif
