/*
 * core/util/netaddr.h: the addresses an NBD export listens on, as
 * mapperctl takes them (--unix PATH, --tcp ADDR:PORT), and the listening
 * sockets made on them.  An export binds only where it is told: a TCP
 * address is numeric (IPv4, or IPv6 in brackets) with an explicit port,
 * never a name that resolves to some set of interfaces.
 */
#ifndef MAPPERFS_NETADDR_H
#define MAPPERFS_NETADDR_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

/* Bytes of a Unix socket path at most (sun_path less its NUL). */
#define NETADDR_UNIX_PATH_MAX	107

/*
 * Parses "ADDR:PORT": ADDR a numeric IPv4 address or "[IPv6]", PORT
 * 1..65535.  Never blocks (no name lookup).  0, or -EINVAL.
 */
int netaddr_parse_tcp(const char *text, struct sockaddr_storage *out, socklen_t *len);

/*
 * A listening TCP socket on @text (netaddr_parse_tcp), SO_REUSEADDR,
 * close-on-exec, in *fd.  Never blocks.  0, or -errno: -EINVAL (the text),
 * -EADDRINUSE, -EADDRNOTAVAIL (no interface has it), -EACCES (a port below
 * 1024 without the right to it).
 */
int netaddr_listen_tcp(const char *text, int *fd);

/*
 * A listening Unix socket at @path, close-on-exec, in *fd; the socket file
 * is created with mode @mode (less the umask) at once, never wider for a
 * moment.  Never blocks.  0, or -errno: -EADDRINUSE (something is at the
 * path), -ENAMETOOLONG, -ENOENT (no such directory), -EACCES.
 */
int netaddr_listen_unix(const char *path, mode_t mode, int *fd);

/*
 * Whether @path is a Unix socket nobody listens on (connect() is refused):
 * what a process that died without removing its socket leaves behind.
 * Never blocks (a listener's backlog takes the connection at once).
 */
bool netaddr_unix_is_stale(const char *path);

#endif
