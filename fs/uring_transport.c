#include "uring_transport.h"

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "fuse_abi.h"
#include "log.h"
#include "ops.h"
#include "worker.h"

#define PAGE			4096
#define HUGE_PAGE		(2u << 20)
#define RING_PAYLOAD		WORKER_MAX_IO	/* >= the kernel's max_payload_sz */
#define ENTRY_SIZE		(PAGE + RING_PAYLOAD)
#define ENABLE_URING_PARAM	"/sys/module/fuse/parameters/enable_uring"
#define CANCEL_TAG		UINT64_MAX	/* user_data of the cancel poll */
#define ENGINE_TAG		(UINT64_MAX - 1)	/* of the poll of the engine's ring */
#define LOAD_TAG		(UINT64_MAX - 2)	/* of the poll of load_fd */
/* Coalesced answers (uring_transport.h): held while so many are in flight, */
#define COALESCE_DEPTH		8
#define COALESCE_MAX		8	/* this many at most, */
#define COALESCE_NS		50000u	/* the first for this long at most */

/*
 * One ring entry.  Memory (ENTRY_SIZE): one page that holds the entry's
 * header buffer at its start and, at its end, the in-header and op struct
 * copied for libfuse; then the payload buffer, page aligned.  A thread's
 * entries lie side by side in one region backed by huge pages where the
 * kernel has them: the kernel pins the payload's pages for every copy in
 * or out, and 1 MiB reads cost the daemon 12% less CPU that way.
 */
struct ring_entry {
	char *mem;			/* ENTRY_SIZE bytes in the thread's region */
	struct fuse_uring_req_header *hdr;	/* at mem */
	char *payload;			/* at mem + PAGE */
	struct iovec iov[2];		/* REGISTER: header, payload */
	bool live;			/* registered, not torn down */
	/* the request in it */
	uint64_t unique;
	uint32_t opcode;
	bool replied;
	bool parked;			/* its READ or WRITE is in flight (io) */
	struct volume_io io;
	struct ring_entry *again;	/* answer_parked's list */
	struct ring_entry *held_next;	/* rt->held's list */
	bool loading;			/* its READ waits for its pool's loader (wait) */
	struct volume_wait wait;
	struct ring_thread *rt;		/* for entry_loaded, on the loader's thread */
	struct ring_entry *loaded_next;	/* rt->loaded's list */
};

/* One serving thread, its ring, and the entries it serves. */
struct ring_thread {
	struct uring_transport *t;
	unsigned int qid;
	pthread_t thread;
	bool thread_ok;
	struct worker w;		/* reply: ring_reply; no read_buf (serve_io) */
	struct io_uring ring;
	bool ring_ok;
	int result;			/* of the last step reported */
	struct ring_entry *serving;	/* the entry whose request runs */
	unsigned int parked;		/* entries whose request is parked */
	/*
	 * Reads that miss wait for their pool's loader (the thread has
	 * other entries to serve meanwhile).  Each load over is pushed on
	 * @loaded and counted on @load_fd, an eventfd polled on the ring;
	 * @loading counts the waits whose count was not read yet: until it
	 * is 0, a loader may still write to @load_fd.
	 */
	bool waits;
	int load_fd;			/* -1: none */
	unsigned int loading;
	struct ring_entry *_Atomic loaded;
	uint64_t no_spin_until;		/* ns: spin() backs off until then */
	/* Answered parked requests whose commits are held (coalesced). */
	struct ring_entry *held;
	unsigned int nr_held;
	uint64_t held_since;		/* ns (CLOCK_MONOTONIC): the first's answer */
	struct ring_entry *e;		/* t->per_thread of them */
	char *region;			/* their memory */
};

enum phase {
	PHASE_PREPARE,		/* threads make their rings */
	PHASE_REGISTER,		/* threads hand their entries over and serve */
	PHASE_QUIT,		/* never started: threads exit */
};

struct uring_transport {
	struct fuse_session *se;
	const struct ops_io *io;	/* READ, WRITE, FSYNC without libfuse */
	int fd;				/* /dev/fuse */
	int cancel_fd;			/* eventfd: uring_transport_cancel */
	unsigned int nr_queues, per_queue, nr;
	unsigned int per_thread;	/* ring entries per thread */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	enum phase phase;
	unsigned int reported;		/* threads done with the phase's step */
	uint64_t spin_ns;		/* how long a quiet spell may be spun through */
	_Atomic uint64_t last_served;	/* ns (CLOCK_MONOTONIC): the last batch, any queue */
	_Atomic bool *spinning;		/* per queue: one of its threads spins */
	struct ring_thread th[];
};

/* Counts the CPUs in a list such as "0-3,8,10-11". */
static unsigned int count_cpu_list(const char *s)
{
	unsigned int n = 0;

	while (*s >= '0' && *s <= '9') {
		char *end;
		unsigned long a = strtoul(s, &end, 10), b = a;

		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		if (b >= a)
			n += (unsigned int)(b - a + 1);
		if (*end != ',')
			break;
		s = end + 1;
	}
	return n;
}

unsigned int uring_transport_nr_queues(void)
{
	char buf[256] = "";
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	unsigned int n = 0;

	if (f) {
		if (fgets(buf, sizeof(buf), f))
			n = count_cpu_list(buf);
		fclose(f);
	}
	return n ? n : (unsigned int)get_nprocs_conf();
}

int uring_transport_check_kernel(const char **why)
{
	FILE *f = fopen(ENABLE_URING_PARAM, "re");
	int c;

	if (!f) {
		*why = "this kernel has no FUSE over io_uring (no " ENABLE_URING_PARAM ")";
		return -EOPNOTSUPP;
	}
	c = fgetc(f);
	fclose(f);
	if (c != 'Y' && c != 'y' && c != '1') {
		*why = "it is switched off (echo Y > " ENABLE_URING_PARAM ")";
		return -EOPNOTSUPP;
	}
	return 0;
}

/* ---- phases: each thread reports its step, the caller waits for all ---- */

static void report(struct ring_thread *rt, int result)
{
	struct uring_transport *t = rt->t;

	pthread_mutex_lock(&t->lock);
	rt->result = result;
	t->reported++;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

/* Waits until every running thread reported; returns the first error. */
static int wait_reports(struct uring_transport *t, unsigned int running)
{
	int r = 0;

	pthread_mutex_lock(&t->lock);
	while (t->reported < running)
		pthread_cond_wait(&t->cond, &t->lock);
	for (unsigned int i = 0; i < t->nr; i++)
		if (t->th[i].thread_ok && t->th[i].result && !r)
			r = t->th[i].result;
	t->reported = 0;
	pthread_mutex_unlock(&t->lock);
	return r;
}

static void set_phase(struct uring_transport *t, enum phase phase)
{
	pthread_mutex_lock(&t->lock);
	t->phase = phase;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

static enum phase wait_phase_after_prepare(struct uring_transport *t)
{
	enum phase phase;

	pthread_mutex_lock(&t->lock);
	while (t->phase == PHASE_PREPARE)
		pthread_cond_wait(&t->cond, &t->lock);
	phase = t->phase;
	pthread_mutex_unlock(&t->lock);
	return phase;
}

/* ---- one thread ---- */

/* Pins the thread to its queue's CPU and names it uring-qN (perf, top, tests). */
static void pin_to_cpu(struct ring_thread *rt)
{
	char name[16];
	cpu_set_t set;
	int r;

	snprintf(name, sizeof(name), "uring-q%u", rt->qid);
	pthread_setname_np(pthread_self(), name);
	CPU_ZERO(&set);
	CPU_SET(rt->qid, &set);
	r = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (r && rt == &rt->t->th[rt->qid * rt->t->per_queue])
		log_warn("cannot pin the io_uring threads of CPU %u: %s; they run unpinned",
			 rt->qid, strerror(r));
}

static void entry_loaded(struct volume_wait *w, int result);

static void entry_init(struct ring_thread *rt, struct ring_entry *e, char *mem)
{
	e->rt = rt;
	e->wait.loaded = entry_loaded;
	e->mem = mem;
	e->hdr = (struct fuse_uring_req_header *)e->mem;
	e->payload = e->mem + PAGE;
	e->iov[0] = (struct iovec){ e->hdr, sizeof(*e->hdr) };
	e->iov[1] = (struct iovec){ e->payload, RING_PAYLOAD };
}

static int entries_init(struct ring_thread *rt)
{
	unsigned int n = rt->t->per_thread;
	size_t size = (size_t)n * ENTRY_SIZE;

	rt->e = calloc(n, sizeof(rt->e[0]));
	if (!rt->e || posix_memalign((void **)&rt->region, HUGE_PAGE, size))
		return -ENOMEM;
	madvise(rt->region, size, MADV_HUGEPAGE);	/* a hint: fine if refused */
	for (unsigned int i = 0; i < n; i++)
		entry_init(rt, &rt->e[i], rt->region + (size_t)i * ENTRY_SIZE);
	return 0;
}

static int ring_setup(struct ring_thread *rt)
{
	unsigned int flags = IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER |
			     IORING_SETUP_DEFER_TASKRUN;
	unsigned int n = rt->t->per_thread;
	int r;

	r = entries_init(rt);
	if (r)
		return r;
	r = worker_enter(&rt->w);
	if (r)
		return r;
	if (rt->waits) {
		rt->load_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (rt->load_fd < 0)
			return -errno;
	}
	/* One SQE per entry, one for the cancel poll, the engine's, the loads'. */
	r = io_uring_queue_init(n + 3, &rt->ring, flags);
	if (r == -EINVAL)	/* before 6.1: no DEFER_TASKRUN */
		r = io_uring_queue_init(n + 3, &rt->ring, IORING_SETUP_SQE128);
	if (r)
		return r;
	rt->ring_ok = true;
	/* /dev/fuse as fixed file 0: no file lookup per command. */
	return io_uring_register_files(&rt->ring, &rt->t->fd, 1);
}

static void ring_teardown(struct ring_thread *rt)
{
	if (rt->ring_ok)
		io_uring_queue_exit(&rt->ring);
	rt->ring_ok = false;
	if (rt->w.engine_ok)
		worker_leave(&rt->w);
	if (rt->load_fd >= 0)
		close(rt->load_fd);
	rt->load_fd = -1;
}

static void ring_free(struct ring_thread *rt)
{
	free(rt->region);
	free(rt->e);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Queues a command for entry @e: REGISTER or COMMIT_AND_FETCH.  The ring
 * has one SQE per entry: 0, or -EBUSY if that broke.
 */
static int queue_cmd(struct ring_thread *rt, struct ring_entry *e, enum fuse_uring_cmd op)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&rt->ring);
	struct fuse_uring_cmd_req *req;

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 2 * sizeof(*sqe));	/* SQE128: two slots */
	req = (struct fuse_uring_cmd_req *)sqe->cmd;
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->flags = IOSQE_FIXED_FILE;
	sqe->fd = 0;
	sqe->cmd_op = op;
	sqe->user_data = (uint64_t)(e - rt->e);
	if (op == FUSE_IO_URING_CMD_REGISTER) {
		sqe->addr = (uintptr_t)e->iov;
		sqe->len = 2;
		e->unique = 0;
	}
	req->qid = (uint16_t)rt->qid;
	req->commit_id = e->unique;
	return 0;
}

/* Polls @fd on the ring (multishot), its completions tagged @tag. */
static int arm_poll(struct ring_thread *rt, int fd, uint64_t tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&rt->ring);

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 2 * sizeof(*sqe));
	io_uring_prep_poll_multishot(sqe, fd, POLLIN);
	io_uring_sqe_set_data64(sqe, tag);
	return 0;
}

/*
 * Polls the engine's ring on this one: parked requests completed there
 * wake the thread as new requests do.
 */
static int arm_engine_poll(struct ring_thread *rt)
{
	return arm_poll(rt, engine_fd(&rt->w.engine), ENGINE_TAG);
}

/* Polls load_fd: a load a read waited for is over. */
static int arm_load_poll(struct ring_thread *rt)
{
	return arm_poll(rt, rt->load_fd, LOAD_TAG);
}

/*
 * Hands every entry to the kernel.  A refusal completes at once; an
 * accepted entry completes only when a request arrives.  So a completion
 * with an error right after the submission means "refused"; the serving
 * loop reads the completions.
 */
static int ring_register(struct ring_thread *rt)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&rt->ring);
	struct io_uring_cqe *cqe;
	unsigned int head;
	int r;

	if (!sqe)
		return -EBUSY;
	/* uring_transport_cancel writes the eventfd: a completion that ends us. */
	memset(sqe, 0, 2 * sizeof(*sqe));
	io_uring_prep_poll_add(sqe, rt->t->cancel_fd, POLLIN);
	io_uring_sqe_set_data64(sqe, CANCEL_TAG);
	r = rt->t->io->start ? arm_engine_poll(rt) : 0;	/* only parked requests need it */
	if (!r && rt->waits)
		r = arm_load_poll(rt);
	if (r)
		return r;
	for (unsigned int i = 0; i < rt->t->per_thread; i++) {
		r = queue_cmd(rt, &rt->e[i], FUSE_IO_URING_CMD_REGISTER);
		if (r)
			return r;
		rt->e[i].live = true;
	}
	r = io_uring_submit(&rt->ring);
	if (r < 0)
		return r;
	r = 0;
	io_uring_for_each_cqe(&rt->ring, head, cqe) {
		if (cqe->user_data < LOAD_TAG && cqe->res < 0 && !r)
			r = cqe->res;
	}
	return r;
}

static void commit_error(struct ring_entry *e, int err)
{
	struct fuse_out_header oh = {
		.len = sizeof(oh), .error = -err, .unique = e->unique,
	};

	memcpy(e->hdr->in_out, &oh, sizeof(oh));
	e->hdr->ring_ent_in_out.payload_sz = 0;
	e->replied = true;
}

/* Commits @len bytes the handler left at the start of the payload. */
static void commit_payload(struct ring_entry *e, uint32_t len)
{
	struct fuse_out_header oh = {
		.len = (uint32_t)sizeof(oh) + len, .unique = e->unique,
	};

	memcpy(e->hdr->in_out, &oh, sizeof(oh));
	e->hdr->ring_ent_in_out.payload_sz = len;
	e->replied = true;
}

/* Answers READ or WRITE in @e with @n, bytes or -errno. */
static void answer_io(struct ring_entry *e, ssize_t n)
{
	struct fuse_write_out out = { 0 };

	if (n < 0) {
		commit_error(e, (int)-n);
	} else if (e->opcode == FUSE_READ) {
		commit_payload(e, (uint32_t)n);
	} else {
		out.size = (uint32_t)n;
		memcpy(e->payload, &out, sizeof(out));
		commit_payload(e, sizeof(out));
	}
}

static void drain(struct ring_thread *rt);

/*
 * Serves READ or WRITE in @e with the blocking calls, after drain().  A
 * READ that misses its map waits for its pool's loader if @may_wait
 * (-EINPROGRESS: entry_loaded tells when it is over).
 */
static ssize_t serve_blocking(struct ring_thread *rt, struct ring_entry *e, bool may_wait)
{
	const struct ops_io *io = rt->t->io;

	drain(rt);
	if (e->opcode == FUSE_READ) {
		const struct fuse_read_in *a = (const void *)e->hdr->op_in;

		return io->read(a->fh, a->offset, a->size, e->payload,
				may_wait ? &e->wait : NULL);
	} else {
		const struct fuse_write_in *a = (const void *)e->hdr->op_in;

		return io->write(a->fh, a->offset, e->payload, a->size, a->flags);
	}
}

/* Holds the commit of @e, answered: coalesced answers (uring_transport.h). */
static void hold(struct ring_thread *rt, struct ring_entry *e)
{
	if (!rt->nr_held++)
		rt->held_since = now_ns();
	e->held_next = rt->held;
	rt->held = e;
}

/* Whether the held answers may wait for more: see COALESCE_DEPTH. */
static bool keep_holding(const struct ring_thread *rt)
{
	return rt->nr_held < COALESCE_MAX && rt->parked >= COALESCE_DEPTH &&
	       now_ns() - rt->held_since < COALESCE_NS;
}

/* Queues the held commits.  False if one could not be queued. */
static bool commit_held(struct ring_thread *rt)
{
	bool ok = true;

	while (rt->held) {
		struct ring_entry *e = rt->held;

		rt->held = e->held_next;
		ok &= queue_cmd(rt, e, FUSE_IO_URING_CMD_COMMIT_AND_FETCH) == 0;
	}
	rt->nr_held = 0;
	return ok;
}

/*
 * Answers the parked requests that completed, their commits queued
 * (each also fetching the entry's next request) or held.  Those the devices
 * failed go to the target's retry once every parked one has completed
 * and given its token back (volume_finish, volume_retry).  Returns false
 * if a commit could not be queued.
 */
static bool answer_parked(struct ring_thread *rt)
{
	struct engine_job *j = engine_reap(&rt->w.engine);
	struct ring_entry *again = NULL;
	bool ok = true;

	while (j) {
		struct engine_job *next = j->next;
		struct volume_io *io = (struct volume_io *)((char *)j -
							    offsetof(struct volume_io, job));
		struct ring_entry *e = (struct ring_entry *)((char *)io -
							     offsetof(struct ring_entry, io));
		ssize_t n = rt->t->io->finish(io);

		e->parked = false;
		rt->parked--;
		if (n == -EAGAIN) {
			e->again = again;
			again = e;
		} else {
			answer_io(e, n);
			/* held only where the wait is timed without a timeout
			 * SQE, whose tag would be CANCEL_TAG's (EXT_ARG) */
			if (rt->ring.features & IORING_FEAT_EXT_ARG)
				hold(rt, e);
			else
				ok &= queue_cmd(rt, e, FUSE_IO_URING_CMD_COMMIT_AND_FETCH) == 0;
		}
		j = next;
	}
	while (again) {
		struct ring_entry *e = again;

		again = e->again;
		drain(rt);
		answer_io(e, rt->t->io->retry(&e->io));
		ok &= queue_cmd(rt, e, FUSE_IO_URING_CMD_COMMIT_AND_FETCH) == 0;
	}
	return ok;
}

/*
 * A load that @w's read waited for is over: on the loader's thread, puts
 * the entry on its ring thread's list and counts it on load_fd, whose
 * poll wakes the thread.  Touches the entry only before it is on the
 * list (the thread may serve it at once), the thread only to write to
 * load_fd (it waits for that count before it ends: wait_loads).
 */
static void entry_loaded(struct volume_wait *w, int result)
{
	struct ring_entry *e = (struct ring_entry *)((char *)w - offsetof(struct ring_entry, wait));
	struct ring_thread *rt = e->rt;
	struct ring_entry *head = atomic_load_explicit(&rt->loaded, memory_order_relaxed);
	int fd = rt->load_fd;

	(void)result;		/* the read faults or fails on its own */
	do
		e->loaded_next = head;
	while (!atomic_compare_exchange_weak_explicit(&rt->loaded, &head, e,
						      memory_order_release,
						      memory_order_relaxed));
	if (eventfd_write(fd, 1))
		log_error("io_uring queue %u: cannot wake its thread for a loaded read: %s",
			  rt->qid, strerror(errno));
}

/*
 * Serves the reads whose loads are over (each maps again, and faults in
 * place what was unloaded again meanwhile), their commits queued.
 * Returns false if a commit could not be queued.
 */
static bool answer_loaded(struct ring_thread *rt)
{
	struct ring_entry *e;
	eventfd_t n;
	bool ok = true;

	if (eventfd_read(rt->load_fd, &n) == 0)
		rt->loading -= (unsigned int)n;
	e = atomic_exchange_explicit(&rt->loaded, NULL, memory_order_acquire);
	while (e) {
		struct ring_entry *next = e->loaded_next;

		e->loading = false;
		answer_io(e, serve_blocking(rt, e, false));
		ok &= queue_cmd(rt, e, FUSE_IO_URING_CMD_COMMIT_AND_FETCH) == 0;
		e = next;
	}
	return ok;
}

/*
 * Before the thread ends: every read that waits for a load answered, and
 * every loader's write to load_fd counted, so none comes after.  Blocks
 * for the loads in flight.
 */
static void wait_loads(struct ring_thread *rt)
{
	while (rt->loading) {
		struct pollfd pfd = { .fd = rt->load_fd, .events = POLLIN };

		if (poll(&pfd, 1, -1) < 0 && errno != EINTR) {
			log_error("io_uring queue %u: cannot wait for its reads' loads: %s",
				  rt->qid, strerror(errno));
			return;
		}
		answer_loaded(rt);
	}
}

/*
 * Before a request that may block: every parked one completed and
 * answered, its commit queued, so that the thread holds nothing that what
 * it waits for could wait for (engine.h).
 */
static void drain(struct ring_thread *rt)
{
	if (rt->parked) {
		engine_drain(&rt->w.engine);
		answer_parked(rt);
	}
	commit_held(rt);
}

/*
 * The data path, parsed here and served by the ops_io calls: no request
 * allocated, no session lock, no reply assembled and copied.  A read
 * lands in the payload buffer, which is the reply; a write's data is
 * where the kernel put it.  A READ or WRITE the engine can carry
 * without the thread is parked (e->parked: answered later by
 * answer_parked); anything else first drains the parked ones.  False for
 * every other request, which libfuse serves: so no read reply on a ring
 * thread points into a device's mapping (fs/ops.c), and the thread never
 * touches one.
 */
static bool serve_io(struct ring_thread *rt, struct ring_entry *e, uint32_t op_sz,
		     uint32_t payload_sz)
{
	const struct fuse_in_header *in = (const void *)e->hdr->in_out;
	const void *op = e->hdr->op_in;
	const struct ops_io *io = rt->t->io;
	ssize_t n = -EIO;	/* an op struct too short, a size that lies */

	switch (in->opcode) {
	case FUSE_READ: {
		const struct fuse_read_in *a = op;

		if (op_sz >= sizeof(*a)) {
			n = io->start ? io->start(&e->io, a->fh, false, a->offset, e->payload,
						  a->size, 0) : -EAGAIN;
			if (n == -EINPROGRESS)
				break;
			n = serve_blocking(rt, e, rt->waits);
			if (n == -EINPROGRESS) {	/* waits for a load */
				e->loading = true;
				rt->loading++;
				return true;
			}
		}
		break;
	}
	case FUSE_WRITE: {
		const struct fuse_write_in *a = op;

		if (op_sz >= sizeof(*a) && a->size == payload_sz) {
			n = io->start ? io->start(&e->io, a->fh, true, a->offset, e->payload,
						  a->size, a->flags) : -EAGAIN;
			if (n != -EINPROGRESS)
				n = serve_blocking(rt, e, false);
		}
		break;
	}
	case FUSE_FSYNC: {
		const struct fuse_fsync_in *a = op;

		drain(rt);
		if (op_sz >= sizeof(*a))
			n = io->fsync(a->fh);
		if (n >= 0)
			commit_payload(e, 0);
		else
			commit_error(e, (int)-n);
		return true;
	}
	default:
		drain(rt);
		return false;
	}
	if (n == -EINPROGRESS) {
		e->parked = true;
		rt->parked++;
	} else {
		answer_io(e, n);
	}
	return true;
}

/*
 * Serves the request in @e: the data path itself (serve_io), anything
 * else rebuilt as libfuse reads it, in front of the payload.
 */
static void serve_request(struct ring_thread *rt, struct ring_entry *e)
{
	const struct fuse_in_header *in = (const void *)e->hdr->in_out;
	uint32_t payload_sz = e->hdr->ring_ent_in_out.payload_sz;
	struct fuse_buf fbuf = { .flags = 0 };
	uint32_t op_sz;
	char *msg;

	e->unique = e->hdr->ring_ent_in_out.commit_id;
	e->opcode = in->opcode;
	e->replied = false;
	if (in->len < sizeof(*in) + payload_sz || payload_sz > RING_PAYLOAD ||
	    in->len - sizeof(*in) - payload_sz > FUSE_URING_OP_IN_OUT_SZ) {
		log_error("io_uring request %llu (opcode %u) is malformed: length %u, "
			  "payload %u; answering EIO", (unsigned long long)e->unique,
			  in->opcode, in->len, payload_sz);
		commit_error(e, EIO);
		return;
	}
	op_sz = in->len - (uint32_t)sizeof(*in) - payload_sz;
	if (serve_io(rt, e, op_sz, payload_sz))
		return;
	msg = e->payload - op_sz - sizeof(*in);
	memcpy(msg, in, sizeof(*in));
	memcpy(msg + sizeof(*in), e->hdr->op_in, op_sz);
	fbuf.mem = msg;
	fbuf.size = in->len;
	rt->serving = e;
	fuse_session_process_buf(rt->t->se, &fbuf);
	rt->serving = NULL;
	if (!e->replied)	/* the kernel waits for every fetched request */
		commit_error(e, EIO);
}

static struct ring_thread *ring_thread_of(struct worker *w)
{
	return (struct ring_thread *)((char *)w - offsetof(struct ring_thread, w));
}

/*
 * The ring thread's reply hook (worker.h): the reply to the request being
 * served goes into its entry, for the thread to commit; whatever else is
 * written on this thread (a notification a handler sends) goes to
 * /dev/fuse.
 */
static bool ring_reply(struct worker *w, const struct iovec *iov, int count, ssize_t *res)
{
	struct ring_entry *e = ring_thread_of(w)->serving;
	const struct fuse_out_header *oh = iov[0].iov_base;
	size_t used = 0;

	if (!e || e->replied || oh->unique != e->unique)
		return false;
	for (int i = 1; i < count; i++) {
		char *to = e->payload + used;

		if (iov[i].iov_len > RING_PAYLOAD - used) {
			log_error("reply to request %llu is larger than the ring's %u bytes",
				  (unsigned long long)e->unique, RING_PAYLOAD);
			commit_error(e, EIO);
			*res = -1;
			errno = EINVAL;
			return true;
		}
		memcpy(to, iov[i].iov_base, iov[i].iov_len);
		used += iov[i].iov_len;
	}
	memcpy(e->hdr->in_out, oh, sizeof(*oh));
	e->hdr->ring_ent_in_out.payload_sz = (uint32_t)used;
	e->replied = true;
	*res = (ssize_t)(sizeof(*oh) + used);
	return true;
}

/*
 * What became of an entry's command: @res 0, a request to serve; -ENOENT
 * or -EIO, the kernel lost our commit (we offer the entry anew); anything
 * else, the entry is gone (the session ended, or a refusal).  Queues the
 * entry's next command; returns false when the entry is gone.
 */
static bool entry_completed(struct ring_thread *rt, struct ring_entry *e, int res)
{
	if (res == 0) {
		serve_request(rt, e);
		return e->parked || e->loading ||
		       queue_cmd(rt, e, FUSE_IO_URING_CMD_COMMIT_AND_FETCH) == 0;
	}
	if (res == -ENOENT || res == -EIO) {
		log_warn("io_uring queue %u: commit of request %llu failed (%s); "
			 "registering the entry again", rt->qid,
			 (unsigned long long)e->unique, strerror(-res));
		return queue_cmd(rt, e, FUSE_IO_URING_CMD_REGISTER) == 0;
	}
	if (res != -ENOTCONN && res != -ECONNABORTED && res != -ECANCELED)
		log_error("an io_uring entry of queue %u stops: %s", rt->qid, strerror(-res));
	return false;
}

/* Times this thread was switched out while runnable (a yield that let another run). */
static long switched_out(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) ? 0 : ru.ru_nivcsw;
}

/*
 * Submits what the ring holds and polls it for the next request while
 * requests keep arriving (some queue served one within spin_ns) and
 * nothing else wants this CPU: the first yield that lets another task run
 * ends the spin, and the thread does not spin again for SPIN_BACKOFF_NS.
 * One thread per queue spins; a thread that does not spin submits
 * nothing (serve()'s wait does, in the same system call).
 */
#define SPIN_BACKOFF_NS	10000000u
static void spin(struct ring_thread *rt)
{
	struct uring_transport *t = rt->t;
	_Atomic bool *flag = &t->spinning[rt->qid];
	uint64_t now = now_ns();
	long before;

	if (now < rt->no_spin_until)
		return;
	if (atomic_exchange_explicit(flag, true, memory_order_acquire))
		return;
	io_uring_submit(&rt->ring);
	before = switched_out();
	while (!io_uring_cq_ready(&rt->ring)) {
		uint64_t last = atomic_load_explicit(&t->last_served, memory_order_relaxed);

		if (last < now && now - last > t->spin_ns)	/* later than now: just served */
			break;
		sched_yield();
		if (switched_out() != before) {
			rt->no_spin_until = now + SPIN_BACKOFF_NS;
			break;
		}
		io_uring_get_events(&rt->ring);
		now = now_ns();
	}
	atomic_store_explicit(flag, false, memory_order_release);
}

/*
 * Submits what the ring holds and waits for a completion; while answers
 * are held, only until the first has waited COALESCE_NS (-ETIME).  0 or
 * -errno.
 */
static int submit_and_wait(struct ring_thread *rt)
{
	struct __kernel_timespec ts = { 0 };
	struct io_uring_cqe *cqe;
	uint64_t waited;

	if (!rt->held)
		return io_uring_submit_and_wait(&rt->ring, 1);
	waited = now_ns() - rt->held_since;
	if (waited < COALESCE_NS)
		ts.tv_nsec = (long long)(COALESCE_NS - waited);
	return io_uring_submit_and_wait_timeout(&rt->ring, &cqe, 1, &ts, NULL);
}

/*
 * Serves until every entry is gone or the transport is cancelled.  Each
 * pass takes all completions at hand, serves their requests one after the
 * other (parking those the engine carries), answers the parked ones that
 * completed (the engine's ring, polled on this one, says when), and
 * commits them all (each commit also fetching) with one io_uring_enter,
 * which then sleeps until the next request or completion arrives (those
 * answers held to coalesce, until the next or the end of their hold); with
 * spin on, the commits go first and the thread polls a while (spin()),
 * and what the spin found is served without another system call.  A
 * cancel ends the thread after the pass that saw it: what it took is
 * answered, parked ones too.
 */
static void serve(struct ring_thread *rt)
{
	unsigned int n = rt->t->per_thread, live = n, cap = n + 3;
	struct { uint64_t tag; int res; unsigned int flags; } done[cap];
	bool cancelled = false;

	while (live) {
		struct io_uring_cqe *cqe;
		unsigned int head, nr = 0;
		bool engine = false, loads = false;
		int r;

		io_uring_for_each_cqe(&rt->ring, head, cqe) {
			if (nr == cap)
				break;
			done[nr].tag = cqe->user_data;
			done[nr].res = cqe->res;
			done[nr].flags = cqe->flags;
			nr++;
		}
		io_uring_cq_advance(&rt->ring, nr);
		for (unsigned int k = 0; k < nr; k++) {
			struct ring_entry *e = &rt->e[done[k].tag >= LOAD_TAG ? 0 : done[k].tag];

			if (done[k].tag == CANCEL_TAG) {
				cancelled = true;
			} else if (done[k].tag == ENGINE_TAG) {
				engine = true;
				if (!(done[k].flags & IORING_CQE_F_MORE) && arm_engine_poll(rt))
					log_error("io_uring queue %u: cannot poll its io engine",
						  rt->qid);
			} else if (done[k].tag == LOAD_TAG) {
				loads = true;
				if (!(done[k].flags & IORING_CQE_F_MORE) && arm_load_poll(rt))
					log_error("io_uring queue %u: cannot poll its reads' loads",
						  rt->qid);
			} else if (e->live && !entry_completed(rt, e, done[k].res)) {
				e->live = false;
				live--;
			}
		}
		/* Completed meanwhile, or while a request drained them. */
		if ((engine || rt->parked) && !answer_parked(rt))
			log_error("io_uring queue %u: cannot answer a request", rt->qid);
		if (loads && !answer_loaded(rt))
			log_error("io_uring queue %u: cannot answer a request", rt->qid);
		if (rt->held && !keep_holding(rt) && !commit_held(rt))
			log_error("io_uring queue %u: cannot answer a request", rt->qid);
		if (cancelled) {
			drain(rt);
			wait_loads(rt);
			io_uring_submit(&rt->ring);	/* the answers */
			break;
		}
		if (!live)
			break;
		if (nr && rt->t->spin_ns) {
			atomic_store_explicit(&rt->t->last_served, now_ns(), memory_order_relaxed);
			spin(rt);
		}
		if (io_uring_cq_ready(&rt->ring) && !io_uring_sq_ready(&rt->ring))
			continue;	/* at hand (the spin's, or past the cap): no wait */
		r = submit_and_wait(rt);
		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY && r != -ETIME) {
			log_error("io_uring queue %u stops: %s", rt->qid, strerror(-r));
			break;
		}
	}
	drain(rt);	/* no request leaves its park token behind */
	wait_loads(rt);	/* nor a load that would wake a thread gone */
}

static void *ring_main(void *arg)
{
	struct ring_thread *rt = arg;
	int r;

	pin_to_cpu(rt);
	r = ring_setup(rt);
	report(rt, r);
	if (!r && wait_phase_after_prepare(rt->t) == PHASE_REGISTER) {
		r = ring_register(rt);
		report(rt, r);
		serve(rt);
	}
	ring_teardown(rt);
	return NULL;
}

/* ---- the transport ---- */

static unsigned int running(const struct uring_transport *t)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < t->nr; i++)
		n += t->th[i].thread_ok;
	return n;
}

int uring_transport_prepare(struct fuse_session *se, const struct ops_io *io,
			    unsigned int entries, unsigned int batch, unsigned int spin_us,
			    struct uring_transport **out)
{
	unsigned int nr_queues = uring_transport_nr_queues();
	unsigned int per_thread = entries < batch ? entries : batch;
	unsigned int per_queue = (entries + per_thread - 1) / per_thread;
	unsigned int nr = nr_queues * per_queue;
	struct uring_transport *t = calloc(1, sizeof(*t) + nr * sizeof(t->th[0]));
	int r = 0;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->spinning = calloc(nr_queues, sizeof(t->spinning[0]));
	t->cancel_fd = eventfd(0, EFD_CLOEXEC);
	if (!t->spinning || t->cancel_fd < 0) {
		r = t->spinning ? -errno : -ENOMEM;
		if (t->cancel_fd >= 0)
			close(t->cancel_fd);
		free(t->spinning);
		free(t);
		return r;
	}
	t->se = se;
	t->io = io;
	t->spin_ns = (uint64_t)spin_us * 1000;
	t->fd = fuse_session_fd(se);
	t->nr_queues = nr_queues;
	t->per_queue = per_queue;
	t->per_thread = per_thread;
	t->nr = nr;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	for (unsigned int i = 0; i < nr && !r; i++) {
		struct ring_thread *rt = &t->th[i];

		rt->t = t;
		rt->qid = i / per_queue;
		rt->w.reply = ring_reply;
		rt->waits = per_thread > 1;	/* the top of uring_transport.h says why */
		rt->load_fd = -1;
		r = -pthread_create(&rt->thread, NULL, ring_main, rt);
		rt->thread_ok = r == 0;
	}
	if (!r)
		r = wait_reports(t, running(t));
	if (r) {
		uring_transport_join(t);
		return r;
	}
	*out = t;
	return 0;
}

/*
 * The kernel switches to the rings once every queue holds an entry, even
 * if it refused some (a refusal also tells it to fall back, but a later
 * acceptance that completes the set wins).  So the rings serve exactly
 * when every queue has an accepted entry.
 */
int uring_transport_start(struct uring_transport *t)
{
	int r;

	set_phase(t, PHASE_REGISTER);
	r = wait_reports(t, running(t));
	for (unsigned int q = 0; q < t->nr_queues; q++) {
		bool held = false;

		for (unsigned int i = q * t->per_queue; i < (q + 1) * t->per_queue; i++)
			held |= t->th[i].thread_ok && t->th[i].result == 0;
		if (!held)
			return r ? r : -EIO;
	}
	if (r)
		log_warn("the kernel refused some io_uring entries (%s); the rest serve",
			 strerror(-r));
	return 0;
}

void uring_transport_cancel(struct uring_transport *t)
{
	uint64_t one = 1;

	if (t && write(t->cancel_fd, &one, sizeof(one)) != sizeof(one))
		log_error("cannot end the io_uring threads: %s", strerror(errno));
}

unsigned int uring_transport_threads_per_queue(const struct uring_transport *t)
{
	return t->per_queue;
}

unsigned int uring_transport_entries_per_thread(const struct uring_transport *t)
{
	return t->per_thread;
}

void uring_transport_join(struct uring_transport *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	if (t->phase == PHASE_PREPARE)
		t->phase = PHASE_QUIT;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	for (unsigned int i = 0; i < t->nr; i++) {
		if (!t->th[i].thread_ok)
			continue;
		pthread_join(t->th[i].thread, NULL);
		ring_free(&t->th[i]);
	}
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	close(t->cancel_fd);
	free(t->spinning);
	free(t);
}
