/*
 * core/pool/pool_export.c: volumes served over NBD (mapperctl export,
 * unexport), in the pool service.
 *
 * The service keeps the records and runs nothing.  An export is a row
 * (which volume, where it listens, read-only or not), checked, recorded
 * and then shown in memory in the usual shape.  The daemon's exporter
 * (fs/exporter.c) reads the list after every command and runs, restarts
 * and stops one nbdkit per export on the volume's file, and tells the
 * service how each fares (pool_export_set_state), so that status and list
 * say it whichever process asks.  With no daemon an export is "stopped":
 * it is served when a daemon next serves the pool.
 *
 * nbdkit reaches the volume through its file in the mount, by name, and
 * opens it anew for each client.  So what takes that file away is refused
 * while the volume is exported (pool_export_refuse): remove and deactivate,
 * as while the file is open, and rename, which an open file survives but
 * the export's next client would not.  Unexport first.
 */
#include "pool_int.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "log.h"
#include "nbd_uri.h"
#include "netaddr.h"
#include "psk_file.h"

const char *pool_export_state_name(enum pool_export_state s)
{
	switch (s) {
	case POOL_EXPORT_SERVING:
		return "serving";
	case POOL_EXPORT_RESTARTING:
		return "restarting";
	case POOL_EXPORT_FAILED:
		return "failed";
	case POOL_EXPORT_STOPPED:
		break;
	}
	return "stopped";
}

void pool_export_uri(const struct export_rec *e, char *buf, size_t len)
{
	bool tls = e->tls_psk[0];

	if (e->transport == EXPORT_TCP && tls)
		snprintf(buf, len, "nbds://%s@%s/?tls-psk-file=%s", e->tls_identity, e->address,
			 e->tls_psk);
	else if (e->transport == EXPORT_TCP)
		snprintf(buf, len, "nbd://%s", e->address);
	else if (tls)
		snprintf(buf, len, "nbds+unix://%s@/?socket=%s&tls-psk-file=%s", e->tls_identity,
			 e->address, e->tls_psk);
	else
		snprintf(buf, len, "nbd+unix:///?socket=%s", e->address);
}

/* The export of volume @id, or NULL.  Admin lock held. */
static struct pool_export_info *export_of(struct pool *p, int64_t id)
{
	for (size_t i = 0; i < p->nr_exports; i++)
		if (p->exports[i].rec.volume == id)
			return &p->exports[i];
	return NULL;
}

/* The export listening at @e's address, or NULL.  Admin lock held. */
static struct pool_export_info *export_at(struct pool *p, const struct export_rec *e)
{
	for (size_t i = 0; i < p->nr_exports; i++)
		if (p->exports[i].rec.transport == e->transport &&
		    !strcmp(p->exports[i].rec.address, e->address))
			return &p->exports[i];
	return NULL;
}

/* A Unix socket's path: absolute, short enough, in a directory, nothing there. */
static int check_unix_path(const char *path, struct pool_error *err)
{
	char dir[PATH_MAX];
	struct stat st;

	if (path[0] != '/')
		return pool_fail(err, -EINVAL, "socket path '%s' is not absolute", path);
	if (strlen(path) > NETADDR_UNIX_PATH_MAX)
		return pool_fail(err, -ENAMETOOLONG,
				 "socket path '%s' is longer than a socket takes (%d bytes)", path,
				 NETADDR_UNIX_PATH_MAX);
	if (!lstat(path, &st))
		return pool_fail(err, -EEXIST, "'%s' exists: an export makes its socket itself",
				 path);
	snprintf(dir, sizeof(dir), "%s", path);
	if (stat(dirname(dir), &st) || !S_ISDIR(st.st_mode))
		return pool_fail(err, -ENOENT, "no directory for socket '%s'", path);
	return 0;
}

/* A TCP address: numeric, with a port, and free now. */
static int check_tcp_address(const char *addr, struct pool_error *err)
{
	int fd, r = netaddr_listen_tcp(addr, &fd);

	if (!r) {
		close(fd);
		return 0;
	}
	if (r == -EINVAL)
		return pool_fail(err, r, "invalid TCP address '%s': ADDR:PORT, with ADDR a numeric "
				 "IPv4 address or [IPv6], PORT 1-65535", addr);
	if (r == -EADDRINUSE)
		return pool_fail(err, r, "TCP address '%s' is in use", addr);
	if (r == -EADDRNOTAVAIL)
		return pool_fail(err, r, "TCP address '%s' is on no interface of this host", addr);
	return pool_fail(err, r, "cannot listen on TCP address '%s': %s", addr, strerror(-r));
}

static int check_export(struct pool *p, const char *name, const struct export_rec *e,
			struct pool_volume **out, struct pool_error *err)
{
	struct pool_export_info *other;
	struct pool_volume *v;
	char uri[POOL_EXPORT_URI_MAX];
	int r;

	r = pool_volume_get(p, name, NULL, false, &v, err);
	if (r)
		return r;
	if (!v->type->served)
		return pool_fail(err, -EINVAL, "'%s' is a %s, not a volume", name, v->type->words);
	if (v->rec.inactive)
		return pool_fail(err, -EINVAL, "volume '%s' is inactive: activate it first", name);
	if ((other = export_of(p, v->rec.id))) {
		pool_export_uri(&other->rec, uri, sizeof(uri));
		return pool_fail(err, -EEXIST, "volume '%s' is exported already, on %s", name,
				 uri);
	}
	if ((other = export_at(p, e))) {
		struct pool_volume *owner = pool_volume_by_id(p, other->rec.volume);

		return pool_fail(err, -EEXIST, "address '%s' is taken by the export of volume '%s'",
				 e->address, owner ? owner->rec.name : "?");
	}
	r = e->transport == EXPORT_UNIX ? check_unix_path(e->address, err) :
					  check_tcp_address(e->address, err);
	if (!r)
		*out = v;
	return r;
}

int pool_check_psk(struct pool *p, const char *path, char *identity, struct pool_error *err)
{
	char why[160];
	int fd = psk_file_open(path, pool_owner(p)->uid, identity, why, sizeof(why));

	if (fd < 0)
		return pool_fail(err, fd, "TLS key file '%.300s' %s", path, why);
	close(fd);
	return 0;
}

/* @e's key file, as nbdkit will be given it; its first identity into @e. */
static int check_tls(struct pool *p, struct export_rec *e, struct pool_error *err)
{
	return pool_check_psk(p, e->tls_psk, e->tls_identity, err);
}

static int record_export(struct pool *p, void *arg)
{
	return p->meta->ops->export_insert(p->meta, arg);
}

static int record_unexport(struct pool *p, void *arg)
{
	return p->meta->ops->export_delete(p->meta, *(int64_t *)arg);
}

int pool_export(struct pool *p, const char *name, struct export_rec *e,
		struct pool_error *err)
{
	struct pool_export_info *grown;
	struct export_rec row = *e;
	struct pool_volume *v = NULL;
	char uri[POOL_EXPORT_URI_MAX];
	int r;

	pool_admin_lock(p);
	r = check_export(p, name, e, &v, err);
	if (!r && row.tls_psk[0])
		r = check_tls(p, &row, err);
	if (r)
		goto out;
	/* room first: once recorded, showing it cannot fail */
	grown = realloc(p->exports, (p->nr_exports + 1) * sizeof(*grown));
	if (!grown) {
		r = pool_fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	p->exports = grown;
	row.volume = v->rec.id;
	r = pool_record_unarchived(p, "record the export", record_export, &row, err);
	if (r)
		goto out;
	memset(&p->exports[p->nr_exports], 0, sizeof(p->exports[0]));
	p->exports[p->nr_exports].rec = row;
	p->nr_exports++;
	*e = row;
	pool_export_uri(&row, uri, sizeof(uri));
	log_info("exported volume '%s' on %s%s%s", name, uri, row.read_only ? ", read-only" : "",
		 row.tls_psk[0] ? ", TLS required" : "");
out:
	pool_admin_unlock(p);
	return r;
}

int pool_unexport(struct pool *p, const char *name, struct pool_error *err)
{
	struct pool_export_info *e;
	struct pool_volume *v;
	int64_t id;
	int r;

	pool_admin_lock(p);
	r = pool_volume_get(p, name, NULL, true, &v, err);
	if (r)
		goto out;
	id = v->rec.id;
	e = export_of(p, id);
	if (!e) {
		r = pool_fail(err, -ENOENT, "volume '%s' is not exported", name);
		goto out;
	}
	r = pool_record_unarchived(p, "record the end of the export", record_unexport, &id, err);
	if (r)
		goto out;
	*e = p->exports[--p->nr_exports];
	log_info("volume '%s' is no longer exported", name);
out:
	pool_admin_unlock(p);
	return r;
}

/* A copy of @e with its volume's name and whether its file is served. */
static void fill_info(struct pool *p, const struct pool_export_info *e,
		      struct pool_export_info *out)
{
	struct pool_volume *v = pool_volume_by_id(p, e->rec.volume);

	*out = *e;
	pool_export_uri(&e->rec, out->uri, sizeof(out->uri));
	snprintf(out->volume, sizeof(out->volume), "%s", v ? v->rec.name : "");
	out->served = v && v->published;
}

int pool_exports(struct pool *p, struct pool_export_info **out, size_t *nr)
{
	struct pool_export_info *v = NULL;
	int r = 0;

	pool_admin_lock(p);
	if (p->nr_exports && !(v = calloc(p->nr_exports, sizeof(*v))))
		r = -ENOMEM;
	for (size_t i = 0; v && i < p->nr_exports; i++)
		fill_info(p, &p->exports[i], &v[i]);
	*nr = v ? p->nr_exports : 0;
	*out = v;
	pool_admin_unlock(p);
	return r;
}

void pool_export_set_state(struct pool *p, int64_t volume, enum pool_export_state s, int pid,
			   const char *reason)
{
	struct pool_export_info *e;

	pool_admin_lock(p);
	e = export_of(p, volume);
	if (e) {
		e->state = s;
		e->pid = pid;
		snprintf(e->reason, sizeof(e->reason), "%s", reason ? reason : "");
	}
	pool_admin_unlock(p);
}

int pool_exports_attach(struct pool *p, const struct pool_meta_image *img,
			struct pool_error *err)
{
	if (!img->nr_exports)
		return 0;
	p->exports = calloc(img->nr_exports, sizeof(*p->exports));
	if (!p->exports)
		return pool_fail(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < img->nr_exports; i++)
		p->exports[i].rec = img->exports[i];
	p->nr_exports = img->nr_exports;
	return 0;
}

int pool_export_refuse(struct pool *p, const struct pool_volume *v, struct pool_error *err)
{
	struct pool_export_info *e = export_of(p, v->rec.id);
	char uri[POOL_EXPORT_URI_MAX];

	if (!e)
		return 0;
	pool_export_uri(&e->rec, uri, sizeof(uri));
	return pool_fail(err, -EBUSY, "volume '%s' is exported (on %s): unexport it first",
			 v->rec.name, uri);
}

void pool_report_export(struct pool *p, struct json *j, const struct pool_volume *v)
{
	struct pool_export_info *e = export_of(p, v->rec.id);
	char uri[POOL_EXPORT_URI_MAX];

	if (!e)
		return;
	pool_export_uri(&e->rec, uri, sizeof(uri));
	json_object_begin(j, "export");
	json_string(j, "uri", uri);
	json_string(j, "transport", e->rec.transport == EXPORT_TCP ? "tcp" : "unix");
	json_string(j, "address", e->rec.address);
	json_bool(j, "read_only", e->rec.read_only);
	json_bool(j, "tls", e->rec.tls_psk[0] != 0);
	json_string(j, "state", pool_export_state_name(e->state));
	if (e->pid)
		json_u64(j, "pid", (uint64_t)e->pid);
	if (e->reason[0])
		json_string(j, "reason", e->reason);
	json_object_end(j);
}

struct pool_export_info *pool_export_info_of(struct pool *p, const struct pool_volume *v)
{
	struct pool_export_info *e = export_of(p, v->rec.id), *copy;

	if (!e || !(copy = malloc(sizeof(*copy))))
		return NULL;
	fill_info(p, e, copy);
	return copy;
}

/* ---- an NBD URI that names one of the pool's own exports ------------------- */

static bool wildcard(const struct sockaddr_storage *s)
{
	if (s->ss_family == AF_INET)
		return ((const struct sockaddr_in *)s)->sin_addr.s_addr == htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)s)->sin6_addr);
}

/* Whether @a (a resolved address) is what @listen listens on. */
static bool same_endpoint(const struct sockaddr *a, const struct sockaddr_storage *listen)
{
	if (a->sa_family != listen->ss_family)
		return false;
	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)listen;

		return x->sin_port == y->sin_port &&
		       (wildcard(listen) || x->sin_addr.s_addr == y->sin_addr.s_addr);
	}
	if (a->sa_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)listen;

		return x->sin6_port == y->sin6_port &&
		       (wildcard(listen) || !memcmp(&x->sin6_addr, &y->sin6_addr, 16));
	}
	return false;
}

/* The export of @p that TCP URI @uri reaches, or NULL.  Admin lock held. */
static const struct pool_export_info *served_tcp(struct pool *p, const char *uri)
{
	char host[256], port[16];
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *res;
	const struct pool_export_info *hit = NULL;

	if (!nbd_uri_host(uri, host, sizeof(host), port, sizeof(port)) ||
	    getaddrinfo(host, port, &hints, &res))
		return NULL;
	for (size_t i = 0; i < p->nr_exports && !hit; i++) {
		struct sockaddr_storage listen;
		socklen_t len;

		if (p->exports[i].rec.transport != EXPORT_TCP ||
		    netaddr_parse_tcp(p->exports[i].rec.address, &listen, &len))
			continue;
		for (struct addrinfo *ai = res; ai && !hit; ai = ai->ai_next)
			if (same_endpoint(ai->ai_addr, &listen))
				hit = &p->exports[i];
	}
	freeaddrinfo(res);
	return hit;
}

/* The export of @p whose socket Unix URI @uri names, or NULL.  Admin lock held. */
static const struct pool_export_info *served_unix(struct pool *p, const char *uri)
{
	char sock[PATH_MAX], real[PATH_MAX], theirs[PATH_MAX];

	if (!nbd_uri_socket(uri, sock, sizeof(sock)))
		return NULL;
	if (!realpath(sock, real))
		snprintf(real, sizeof(real), "%s", sock);
	for (size_t i = 0; i < p->nr_exports; i++)
		if (p->exports[i].rec.transport == EXPORT_UNIX &&
		    (!strcmp(p->exports[i].rec.address, real) ||
		     (realpath(p->exports[i].rec.address, theirs) && !strcmp(theirs, real))))
			return &p->exports[i];
	return NULL;
}

bool pool_export_named_by(struct pool *p, const char *uri, char *volume, size_t len)
{
	const struct pool_export_info *e;
	struct pool_volume *v;

	pool_admin_lock(p);
	e = strstr(uri, "+unix://") ? served_unix(p, uri) : served_tcp(p, uri);
	v = e ? pool_volume_by_id(p, e->rec.volume) : NULL;
	snprintf(volume, len, "%s", v ? v->rec.name : "");
	pool_admin_unlock(p);
	return e != NULL;
}
