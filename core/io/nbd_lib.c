/*
 * core/io/nbd_lib.c: libnbd, opened at the first handle made.
 *
 * Linking libnbd made every program of ours load it at start, and with it
 * GnuTLS and libxml2 with ICU: on this machine a program that links them
 * and does nothing took 17.7 ms to run, one that links only libc 9.3, and
 * mapperctl 18.7, so half of every admin command's wall time was loading
 * libraries that only a pool with NBD devices uses.  So libnbd is opened
 * with dlopen when the first handle is made (nbd_create), as systemd opens
 * its optional libraries, and the functions of libnbd.h that core/io calls
 * are defined here, each calling the library's own through a pointer.
 * Callers stay written against libnbd.h; a function added to them is
 * added to the list below or the link fails.  Without the library,
 * nbd_create returns NULL and nbd_get_error says why.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include <libnbd.h>

/* Every function but those that work without the library (below). */
#define NBD_CALLS(X)									\
	X(int, nbd_aio_command_completed, (struct nbd_handle *h, uint64_t cookie),	\
	  (h, cookie))									\
	X(int, nbd_aio_connect_uri, (struct nbd_handle *h, const char *uri), (h, uri))	\
	X(int, nbd_aio_disconnect, (struct nbd_handle *h, uint32_t flags), (h, flags))	\
	X(int64_t, nbd_aio_flush,							\
	  (struct nbd_handle *h, nbd_completion_callback cb, uint32_t flags), (h, cb, flags)) \
	X(unsigned, nbd_aio_get_direction, (struct nbd_handle *h), (h))			\
	X(int, nbd_aio_get_fd, (struct nbd_handle *h), (h))				\
	X(int, nbd_aio_in_flight, (struct nbd_handle *h), (h))				\
	X(int, nbd_aio_is_closed, (struct nbd_handle *h), (h))				\
	X(int, nbd_aio_is_connecting, (struct nbd_handle *h), (h))			\
	X(int, nbd_aio_is_dead, (struct nbd_handle *h), (h))				\
	X(int, nbd_aio_is_ready, (struct nbd_handle *h), (h))				\
	X(int, nbd_aio_notify_read, (struct nbd_handle *h), (h))			\
	X(int, nbd_aio_notify_write, (struct nbd_handle *h), (h))			\
	X(int64_t, nbd_aio_pread,							\
	  (struct nbd_handle *h, void *buf, size_t count, uint64_t offset,		\
	   nbd_completion_callback cb, uint32_t flags), (h, buf, count, offset, cb, flags)) \
	X(int64_t, nbd_aio_pwrite,							\
	  (struct nbd_handle *h, const void *buf, size_t count, uint64_t offset,	\
	   nbd_completion_callback cb, uint32_t flags), (h, buf, count, offset, cb, flags)) \
	X(int64_t, nbd_aio_trim,							\
	  (struct nbd_handle *h, uint64_t count, uint64_t offset,			\
	   nbd_completion_callback cb, uint32_t flags), (h, count, offset, cb, flags))	\
	X(int64_t, nbd_aio_zero,							\
	  (struct nbd_handle *h, uint64_t count, uint64_t offset,			\
	   nbd_completion_callback cb, uint32_t flags), (h, count, offset, cb, flags))	\
	X(int, nbd_can_flush, (struct nbd_handle *h), (h))				\
	X(int, nbd_can_multi_conn, (struct nbd_handle *h), (h))				\
	X(int, nbd_can_trim, (struct nbd_handle *h), (h))				\
	X(int, nbd_can_zero, (struct nbd_handle *h), (h))				\
	X(int64_t, nbd_get_block_size, (struct nbd_handle *h, int size_type), (h, size_type)) \
	X(int64_t, nbd_get_size, (struct nbd_handle *h), (h))				\
	X(int, nbd_is_read_only, (struct nbd_handle *h), (h))				\
	X(int, nbd_set_handle_name, (struct nbd_handle *h, const char *name), (h, name)) \
	X(int, nbd_set_pread_initialize, (struct nbd_handle *h, bool request), (h, request)) \
	X(int, nbd_set_request_structured_replies, (struct nbd_handle *h, bool request),	\
	  (h, request))									\
	X(int, nbd_set_tls_psk_file, (struct nbd_handle *h, const char *file), (h, file))

#define NBD_OWN(X)									\
	X(struct nbd_handle *, nbd_create, (void), ())					\
	X(void, nbd_close, (struct nbd_handle *h), (h))					\
	X(const char *, nbd_get_error, (void), ())					\
	X(int, nbd_get_errno, (void), ())

#define POINTER(ret, name, params, args) ret (*name) params;
static struct {
	NBD_CALLS(POINTER)
	NBD_OWN(POINTER)
} lib;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[256];	/* empty once loaded */

static void load(void)
{
	void *so = dlopen("libnbd.so.0", RTLD_NOW | RTLD_LOCAL);

	if (!so) {
		snprintf(load_error, sizeof(load_error), "cannot load libnbd: %s", dlerror());
		return;
	}
#define RESOLVE(ret, name, params, args)						\
	if (!(*(void **)&lib.name = dlsym(so, #name))) {				\
		snprintf(load_error, sizeof(load_error), "libnbd.so.0 has no %s", #name); \
		return;									\
	}
	NBD_CALLS(RESOLVE)
	NBD_OWN(RESOLVE)
#undef RESOLVE
}

/* The library is loaded: every handle came from nbd_create. */
#define FORWARD(ret, name, params, args)						\
	ret name params									\
	{										\
		return lib.name args;							\
	}
NBD_CALLS(FORWARD)

struct nbd_handle *nbd_create(void)
{
	pthread_once(&once, load);
	return load_error[0] ? NULL : lib.nbd_create();
}

void nbd_close(struct nbd_handle *h)
{
	if (h)
		lib.nbd_close(h);
}

const char *nbd_get_error(void)
{
	pthread_once(&once, load);
	return load_error[0] ? load_error : lib.nbd_get_error();
}

int nbd_get_errno(void)
{
	pthread_once(&once, load);
	return load_error[0] ? ENOSYS : lib.nbd_get_errno();
}
