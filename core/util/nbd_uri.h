/*
 * core/util/nbd_uri.h: the parts of an NBD URI (libnbd's syntax,
 * nbd://HOST[:PORT]/EXPORT and nbd+unix:///EXPORT?socket=PATH) that
 * mapperfs reads itself: libnbd parses the whole URI when it connects,
 * but a device's default name, whether its socket path is absolute, and
 * whether it names one of the pool's own exports are decided before.
 * One parser for the daemon and the CLI, so they never disagree.  Pure
 * string work: never blocks, allocates nothing.
 */
#ifndef MAPPERFS_NBD_URI_H
#define MAPPERFS_NBD_URI_H

#include <stdbool.h>
#include <stddef.h>

/* Whether @path begins with a URI scheme and "://" (RFC 3986: any case). */
bool nbd_uri_has_scheme(const char *path);

/* Whether @uri's scheme is a Unix socket's (nbd+unix, nbds+unix). */
bool nbd_uri_is_unix(const char *uri);

/*
 * Where the value of query parameter @name (socket, tls-psk-file) begins
 * in @uri, as written (maybe %-encoded), or NULL if the query has none.
 */
const char *nbd_uri_param_at(const char *uri, const char *name);

/*
 * The value of parameter @name, %-decoded, in @out.  False if there is
 * none, it is empty, or it does not fit in @len bytes.
 */
bool nbd_uri_param(const char *uri, const char *name, char *out, size_t len);

/* nbd_uri_param_at and nbd_uri_param of socket=. */
const char *nbd_uri_socket_at(const char *uri);
bool nbd_uri_socket(const char *uri, char *out, size_t len);

/* Whether @uri's scheme asks for TLS (nbds, nbds+unix). */
bool nbd_uri_is_tls(const char *uri);

/*
 * @uri without its parameter @name (the whole "name=value"), in @out;
 * @uri as it is if it has none.  False if it does not fit in @len bytes.
 */
bool nbd_uri_without(const char *uri, const char *name, char *out, size_t len);

/*
 * The export name ("disk" in nbd+unix:///disk?socket=S), not decoded, in
 * @out; NULL if the URI names none or it does not fit, else @out.
 */
const char *nbd_uri_export(const char *uri, char *out, size_t len);

/*
 * The host and port of nbd://[USER@]HOST[:PORT]/... (an IPv6 host in
 * brackets, given without them), the port 10809 when none is written.
 * False if @uri has no authority, its host is empty, or its port is not
 * a number 1..65535.
 */
bool nbd_uri_host(const char *uri, char *host, size_t hlen, char *port, size_t plen);

#endif
