#include "uring_transport.h"

#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>

#include "fuse_abi.h"
#include "log.h"
#include "workers.h"

#define PAGE			4096
#define RING_PAYLOAD		WORKER_MAX_IO	/* >= the kernel's max_payload_sz */
#define RING_DEPTH		2		/* one command in flight per thread */
#define ENABLE_URING_PARAM	"/sys/module/fuse/parameters/enable_uring"

/*
 * One serving thread and its ring entry.  Memory: one page that holds the
 * entry's header buffer at its start and, at its end, the in-header and op
 * struct copied for libfuse; then the payload buffer, page aligned.
 */
struct ring_thread {
	struct uring_transport *t;
	unsigned int qid;
	pthread_t thread;
	bool thread_ok;
	struct worker w;		/* read_buf is the payload buffer */
	struct io_uring ring;
	bool ring_ok;
	char *mem;			/* PAGE + RING_PAYLOAD */
	struct fuse_uring_req_header *hdr;	/* at mem */
	char *payload;			/* at mem + PAGE */
	struct iovec iov[2];		/* REGISTER: header, payload */
	int result;			/* of the last step reported */
	/* the request being served */
	uint64_t unique;
	bool replied;
};

enum phase {
	PHASE_PREPARE,		/* threads make their rings */
	PHASE_REGISTER,		/* threads hand their entries over and serve */
	PHASE_QUIT,		/* never started: threads exit */
};

struct uring_transport {
	struct fuse_session *se;
	int fd;				/* /dev/fuse */
	unsigned int nr_queues, per_queue, nr;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	enum phase phase;
	unsigned int reported;		/* threads done with the phase's step */
	struct ring_thread th[];
};

static __thread struct ring_thread *serving;

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

static int ring_setup(struct ring_thread *rt)
{
	unsigned int flags = IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER |
			     IORING_SETUP_DEFER_TASKRUN;
	int r;

	if (posix_memalign((void **)&rt->mem, PAGE, PAGE + RING_PAYLOAD))
		return -ENOMEM;
	rt->hdr = (struct fuse_uring_req_header *)rt->mem;
	rt->payload = rt->mem + PAGE;
	rt->iov[0] = (struct iovec){ rt->hdr, sizeof(*rt->hdr) };
	rt->iov[1] = (struct iovec){ rt->payload, RING_PAYLOAD };
	rt->w.read_buf = rt->payload;
	r = worker_enter(&rt->w);
	if (r)
		return r;
	r = io_uring_queue_init(RING_DEPTH, &rt->ring, flags);
	if (r == -EINVAL)	/* before 6.1: no DEFER_TASKRUN */
		r = io_uring_queue_init(RING_DEPTH, &rt->ring, IORING_SETUP_SQE128);
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
}

/*
 * Queues a command for our entry: REGISTER or COMMIT_AND_FETCH.  The ring
 * has room for two and holds at most one: 0, or -EBUSY if that broke.
 */
static int queue_cmd(struct ring_thread *rt, enum fuse_uring_cmd op)
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
	if (op == FUSE_IO_URING_CMD_REGISTER) {
		sqe->addr = (uintptr_t)rt->iov;
		sqe->len = 2;
	}
	req->qid = (uint16_t)rt->qid;
	req->commit_id = rt->unique;
	return 0;
}

/*
 * Submits what is queued and waits for our entry's command to complete.
 * Returns its result: 0 (a request is in the entry) or -errno.
 */
static int submit_and_wait(struct ring_thread *rt)
{
	struct io_uring_cqe *cqe;
	int r;

	for (;;) {
		r = io_uring_submit_and_wait(&rt->ring, 1);
		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
			return r;
		if (io_uring_peek_cqe(&rt->ring, &cqe) == 0)
			break;
	}
	r = cqe->res;
	io_uring_cqe_seen(&rt->ring, cqe);
	return r;
}

/*
 * Hands the entry to the kernel.  A refusal completes at once; an accepted
 * entry completes only when a request arrives, so an empty completion
 * queue right after the submission means "accepted".
 */
static int ring_register(struct ring_thread *rt)
{
	struct io_uring_cqe *cqe;
	int r;

	rt->unique = 0;
	r = queue_cmd(rt, FUSE_IO_URING_CMD_REGISTER);
	if (r)
		return r;
	r = io_uring_submit(&rt->ring);
	if (r < 0)
		return r;
	if (io_uring_peek_cqe(&rt->ring, &cqe) == 0 && cqe->res < 0) {
		r = cqe->res;
		io_uring_cqe_seen(&rt->ring, cqe);
		return r;
	}
	return 0;
}

static void commit_error(struct ring_thread *rt, int err)
{
	struct fuse_out_header oh = {
		.len = sizeof(oh), .error = -err, .unique = rt->unique,
	};

	memcpy(rt->hdr->in_out, &oh, sizeof(oh));
	rt->hdr->ring_ent_in_out.payload_sz = 0;
	rt->replied = true;
}

/* Rebuilds the request as libfuse reads it, in front of the payload, and serves it. */
static void serve_request(struct ring_thread *rt)
{
	const struct fuse_in_header *in = (const void *)rt->hdr->in_out;
	uint32_t payload_sz = rt->hdr->ring_ent_in_out.payload_sz;
	struct fuse_buf fbuf = { .flags = 0 };
	size_t op_sz;
	char *msg;

	rt->unique = rt->hdr->ring_ent_in_out.commit_id;
	rt->replied = false;
	if (in->len < sizeof(*in) + payload_sz || payload_sz > RING_PAYLOAD ||
	    in->len - sizeof(*in) - payload_sz > FUSE_URING_OP_IN_OUT_SZ) {
		log_error("io_uring request %llu (opcode %u) is malformed: length %u, "
			  "payload %u; answering EIO", (unsigned long long)rt->unique,
			  in->opcode, in->len, payload_sz);
		commit_error(rt, EIO);
		return;
	}
	op_sz = in->len - sizeof(*in) - payload_sz;
	msg = rt->payload - op_sz - sizeof(*in);
	memcpy(msg, in, sizeof(*in));
	memcpy(msg + sizeof(*in), rt->hdr->op_in, op_sz);
	fbuf.mem = msg;
	fbuf.size = in->len;
	serving = rt;
	fuse_session_process_buf(rt->t->se, &fbuf);
	serving = NULL;
	if (!rt->replied)	/* the kernel waits for every fetched request */
		commit_error(rt, EIO);
}

bool uring_transport_reply(const struct iovec *iov, int count, ssize_t *res)
{
	struct ring_thread *rt = serving;
	const struct fuse_out_header *oh = iov[0].iov_base;
	size_t used = 0;

	if (!rt || rt->replied || oh->unique != rt->unique)
		return false;
	for (int i = 1; i < count; i++) {
		char *to = rt->payload + used;

		if (iov[i].iov_len > RING_PAYLOAD - used) {
			log_error("reply to request %llu is larger than the ring's %u bytes",
				  (unsigned long long)rt->unique, RING_PAYLOAD);
			commit_error(rt, EIO);
			*res = -1;
			errno = EINVAL;
			return true;
		}
		/* A read served into the payload buffer is already in place. */
		if (iov[i].iov_base != to)
			memmove(to, iov[i].iov_base, iov[i].iov_len);
		used += iov[i].iov_len;
	}
	memcpy(rt->hdr->in_out, oh, sizeof(*oh));
	rt->hdr->ring_ent_in_out.payload_sz = (uint32_t)used;
	rt->replied = true;
	*res = (ssize_t)(sizeof(*oh) + used);
	return true;
}

/* The session ended, or the entry is gone for a reason we cannot mend. */
static bool fatal(int r)
{
	return r != -ENOENT && r != -EIO;
}

static void serve(struct ring_thread *rt, int r)
{
	for (;;) {
		if (r == 0) {
			serve_request(rt);
			r = queue_cmd(rt, FUSE_IO_URING_CMD_COMMIT_AND_FETCH);
		} else if (!fatal(r)) {
			/* The kernel lost our commit; offer the entry anew. */
			log_warn("io_uring queue %u: commit of request %llu failed (%s); "
				 "registering the entry again", rt->qid,
				 (unsigned long long)rt->unique, strerror(-r));
			rt->unique = 0;
			r = queue_cmd(rt, FUSE_IO_URING_CMD_REGISTER);
		}
		if (r) {
			if (r != -ENOTCONN && r != -ECONNABORTED && r != -ECANCELED)
				log_error("io_uring queue %u stops: %s", rt->qid, strerror(-r));
			return;
		}
		r = submit_and_wait(rt);
	}
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
		if (!r)
			serve(rt, submit_and_wait(rt));
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

int uring_transport_prepare(struct fuse_session *se, unsigned int per_queue,
			    struct uring_transport **out)
{
	unsigned int nr_queues = uring_transport_nr_queues();
	unsigned int nr = nr_queues * per_queue;
	struct uring_transport *t = calloc(1, sizeof(*t) + nr * sizeof(t->th[0]));
	int r = 0;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->se = se;
	t->fd = fuse_session_fd(se);
	t->nr_queues = nr_queues;
	t->per_queue = per_queue;
	t->nr = nr;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	for (unsigned int i = 0; i < nr && !r; i++) {
		struct ring_thread *rt = &t->th[i];

		rt->t = t;
		rt->qid = i / per_queue;
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

unsigned int uring_transport_threads(const struct uring_transport *t)
{
	return t->nr;
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
		free(t->th[i].mem);
	}
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
