#include "transport.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fuse_abi.h"
#include "worker.h"

struct open_out {				/* struct fuse_open_out */
	uint64_t fh;
	uint32_t open_flags;
	int32_t backing_id;
};

/*
 * INIT bookkeeping.  The INIT request is read and answered by one /dev/fuse
 * worker; main() waits for the answer.  init_unique is the only field the
 * reply path reads for every reply: 0 (no request has unique 0) once INIT
 * was answered.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	_Atomic uint64_t init_unique;	/* the INIT request's, until answered */
	uint64_t offered;		/* the kernel's INIT flags, 64 bits */
	_Atomic uint64_t want;		/* what we ask for where offered */
	uint64_t granted;		/* offered & want, once answered */
	bool answered;
	bool ended;			/* a worker saw the session end */
	_Atomic int kind;		/* enum transport_kind */
} tp = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
};

static __thread bool parallel_open_pending;

void transport_mark_parallel_open(void)
{
	parallel_open_pending = true;
}

void transport_want_init_flags(uint64_t flags)
{
	atomic_fetch_or(&tp.want, flags);
}

static void mark_parallel_open(struct iovec *iov, int count)
{
	parallel_open_pending = false;
	/* iov[0] is the out header, iov[1] the handler's own open_out. */
	if (count == 2 && iov[1].iov_len == sizeof(struct open_out))
		((struct open_out *)iov[1].iov_base)->open_flags |=
			FOPEN_PARALLEL_DIRECT_WRITES;
}

/* Adds what we want and the kernel offered to libfuse's INIT reply. */
static uint64_t add_init_flags(struct iovec *iov, int count)
{
	struct fuse_init_out *out;
	uint64_t add;

	if (count != 2 || iov[1].iov_len < offsetof(struct fuse_init_out, unused))
		return 0;		/* an error reply, or a pre-7.23 one */
	out = iov[1].iov_base;
	add = atomic_load(&tp.want) & tp.offered;
	if (add >> 32) {
		out->flags |= FUSE_INIT_EXT;
		out->flags2 |= (uint32_t)(add >> 32);
	}
	out->flags |= (uint32_t)add;
	return add;
}

static void init_answered(uint64_t granted, bool ok)
{
	pthread_mutex_lock(&tp.lock);
	atomic_store(&tp.init_unique, 0);
	tp.granted = ok ? granted : 0;
	tp.answered = true;
	pthread_cond_broadcast(&tp.cond);
	pthread_mutex_unlock(&tp.lock);
}

static ssize_t transport_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	const struct fuse_out_header *oh = iov[0].iov_base;
	uint64_t init_unique = atomic_load_explicit(&tp.init_unique, memory_order_relaxed);
	uint64_t granted;
	ssize_t n;

	(void)userdata;
	if (parallel_open_pending)
		mark_parallel_open(iov, count);
	if (worker_reply(iov, count, &n))
		return n;
	if (!init_unique || oh->unique != init_unique)
		return writev(fd, iov, count);
	granted = add_init_flags(iov, count);
	n = writev(fd, iov, count);
	init_answered(granted, n >= 0);
	return n;
}

/* Notes the INIT request's unique and its 64 bits of flags. */
static void note_init(const void *buf, ssize_t n)
{
	const struct fuse_in_header *in = buf;
	const struct fuse_init_in *arg = (const void *)(in + 1);
	uint64_t flags;

	if (n < (ssize_t)(sizeof(*in) + offsetof(struct fuse_init_in, unused)))
		return;
	flags = arg->flags;
	if (flags & FUSE_INIT_EXT)
		flags |= (uint64_t)arg->flags2 << 32;
	pthread_mutex_lock(&tp.lock);
	tp.offered = flags;
	atomic_store(&tp.init_unique, in->unique);
	pthread_mutex_unlock(&tp.lock);
}

static ssize_t transport_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);

	(void)userdata;
	if (n >= (ssize_t)sizeof(struct fuse_in_header) &&
	    ((const struct fuse_in_header *)buf)->opcode == FUSE_INIT)
		note_init(buf, n);
	return n;
}

static const struct fuse_custom_io transport_io = {
	.writev = transport_writev,
	.read = transport_read,
};

int transport_install(struct fuse_session *se)
{
	return fuse_session_custom_io(se, &transport_io, fuse_session_fd(se));
}

int transport_wait_init(uint64_t *granted)
{
	int r;

	pthread_mutex_lock(&tp.lock);
	while (!tp.answered && !tp.ended)
		pthread_cond_wait(&tp.cond, &tp.lock);
	r = tp.answered ? 0 : -ENOTCONN;
	*granted = tp.granted;
	pthread_mutex_unlock(&tp.lock);
	return r;
}

void transport_session_ended(void)
{
	pthread_mutex_lock(&tp.lock);
	tp.ended = true;
	pthread_cond_broadcast(&tp.cond);
	pthread_mutex_unlock(&tp.lock);
}

void transport_set_kind(enum transport_kind kind)
{
	atomic_store(&tp.kind, (int)kind);
}

const char *transport_name(void)
{
	return atomic_load(&tp.kind) == TRANSPORT_IO_URING ? "io_uring" : "dev-fuse";
}
