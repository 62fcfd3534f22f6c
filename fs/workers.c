#include "workers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rcu.h"
#include "stop.h"

/* Header (40 bytes) + fuse_write_in (40 bytes) before a WRITE payload. */
#define WRITE_PAYLOAD_OFFSET	80
#define PAGE			4096
/* libfuse reads up to 256 pages + one header page per request. */
#define RECV_SIZE		((256 + 1) * PAGE)

struct workers {
	unsigned int nr;
	struct worker w[];
};

static __thread struct worker *self;

struct worker *worker_self(void)
{
	return self;
}

static void worker_leave(void *arg)
{
	(void)arg;
	urcu_memb_unregister_thread();
}

/*
 * A worker can be cancelled only while it waits in read() for a request
 * (libfuse's own loop does the same): a request it took is always served
 * and answered first.  The kernel ends the session with ENODEV when the
 * mount goes away; that worker tells main().
 */
static void *worker_main(void *arg)
{
	struct worker *w = arg;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	self = w;
	urcu_memb_register_thread();
	/* The ring is made here: IORING_SETUP_SINGLE_ISSUER binds it to us. */
	w->engine_ok = engine_init(&w->engine, WORKER_RING_DEPTH) == 0;
	if (!w->engine_ok) {
		log_error("cannot set up io_uring for a worker; it will not serve");
		urcu_memb_unregister_thread();
		return NULL;
	}
	pthread_cleanup_push(worker_leave, w);
	while (!fuse_session_exited(w->se)) {
		int r;

		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		r = fuse_session_receive_buf(w->se, &w->fbuf);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		if (r == -EINTR)
			continue;
		if (r <= 0)
			break;
		fuse_session_process_buf(w->se, &w->fbuf);
		/* libfuse sets size to the bytes read; give the room back. */
		w->fbuf.size = RECV_SIZE;
	}
	stop_session_over();
	pthread_cleanup_pop(1);
	return NULL;
}

static int worker_init(struct worker *w, struct fuse_session *se)
{
	w->se = se;
	if (posix_memalign((void **)&w->recv_mem, PAGE, RECV_SIZE + PAGE))
		return -ENOMEM;
	w->fbuf.mem = w->recv_mem + PAGE - WRITE_PAYLOAD_OFFSET;
	w->fbuf.size = RECV_SIZE;
	if (posix_memalign(&w->read_buf, PAGE, WORKER_MAX_IO)) {
		free(w->recv_mem);
		return -ENOMEM;
	}
	return 0;
}

static void worker_release(struct worker *w)
{
	if (w->engine_ok)
		engine_exit(&w->engine);
	free(w->read_buf);
	free(w->recv_mem);
}

int workers_start(struct fuse_session *se, unsigned int nr, struct workers **out)
{
	struct workers *ws = calloc(1, sizeof(*ws) + nr * sizeof(ws->w[0]));
	int r = 0;

	if (!ws)
		return -ENOMEM;
	for (ws->nr = 0; ws->nr < nr; ws->nr++) {
		struct worker *w = &ws->w[ws->nr];

		r = worker_init(w, se);
		if (r)
			break;
		r = -pthread_create(&w->thread, NULL, worker_main, w);
		if (r) {
			worker_release(w);
			break;
		}
	}
	*out = ws;
	return r;
}

void workers_cancel(struct workers *ws)
{
	for (unsigned int i = 0; i < ws->nr; i++)
		pthread_cancel(ws->w[i].thread);
}

void workers_join(struct workers *ws)
{
	for (unsigned int i = 0; i < ws->nr; i++) {
		pthread_join(ws->w[i].thread, NULL);
		worker_release(&ws->w[i]);
	}
	free(ws);
}
