#include "workers.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "stop.h"
#include "transport.h"
#include "worker.h"

/* Header (40 bytes) + fuse_write_in (40 bytes) before a WRITE payload. */
#define WRITE_PAYLOAD_OFFSET	80
#define PAGE			4096
/* libfuse reads up to 256 pages + one header page per request. */
#define RECV_SIZE		((256 + 1) * PAGE)

/* A thread reading requests from /dev/fuse. */
struct dev_worker {
	pthread_t thread;
	struct fuse_session *se;
	struct worker w;
	char *recv_mem;			/* allocation behind fbuf.mem */
	struct fuse_buf fbuf;
};

struct workers {
	struct fuse_session *se;
	unsigned int nr, max;
	struct dev_worker w[];
};

static void dev_worker_leave(void *arg)
{
	worker_leave(arg);
}

/*
 * A worker can be cancelled only while it waits in read() for a request
 * (libfuse's own loop does the same): a request it took is always served
 * and answered first.  The kernel ends the session with ENODEV when the
 * mount goes away; that worker tells main().
 */
static void *dev_worker_main(void *arg)
{
	struct dev_worker *dw = arg;

	pthread_setname_np(pthread_self(), "fuse-dev");
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	if (worker_enter(&dw->w)) {
		log_error("cannot set up io_uring for a worker; it will not serve");
		return NULL;
	}
	pthread_cleanup_push(dev_worker_leave, &dw->w);
	while (!fuse_session_exited(dw->se)) {
		int r;

		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		r = fuse_session_receive_buf(dw->se, &dw->fbuf);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		if (r == -EINTR)
			continue;
		if (r <= 0)
			break;
		fuse_session_process_buf(dw->se, &dw->fbuf);
		/* libfuse sets size to the bytes read; give the room back. */
		dw->fbuf.size = RECV_SIZE;
	}
	transport_session_ended();
	stop_session_over();
	pthread_cleanup_pop(1);
	return NULL;
}

static int dev_worker_init(struct dev_worker *dw, struct fuse_session *se)
{
	dw->se = se;
	if (posix_memalign((void **)&dw->recv_mem, PAGE, RECV_SIZE + PAGE))
		return -ENOMEM;
	dw->fbuf.mem = dw->recv_mem + PAGE - WRITE_PAYLOAD_OFFSET;
	dw->fbuf.size = RECV_SIZE;
	if (posix_memalign(&dw->w.read_buf, PAGE, WORKER_MAX_IO)) {
		free(dw->recv_mem);
		return -ENOMEM;
	}
	return 0;
}

static void dev_worker_release(struct dev_worker *dw)
{
	free(dw->w.read_buf);
	free(dw->recv_mem);
}

int workers_add(struct workers *ws, unsigned int nr)
{
	int r = 0;

	if (nr > ws->max)
		nr = ws->max;
	while (ws->nr < nr) {
		struct dev_worker *dw = &ws->w[ws->nr];

		r = dev_worker_init(dw, ws->se);
		if (r)
			break;
		r = -pthread_create(&dw->thread, NULL, dev_worker_main, dw);
		if (r) {
			dev_worker_release(dw);
			break;
		}
		ws->nr++;
	}
	return r;
}

int workers_start(struct fuse_session *se, unsigned int nr, unsigned int max,
		  struct workers **out)
{
	struct workers *ws = calloc(1, sizeof(*ws) + max * sizeof(ws->w[0]));

	*out = ws;
	if (!ws)
		return -ENOMEM;
	ws->se = se;
	ws->max = max;
	return workers_add(ws, nr);
}

void workers_cancel(struct workers *ws)
{
	for (unsigned int i = 0; i < ws->nr; i++)
		pthread_cancel(ws->w[i].thread);
}

void workers_join(struct workers *ws)
{
	if (!ws)
		return;
	for (unsigned int i = 0; i < ws->nr; i++) {
		pthread_join(ws->w[i].thread, NULL);
		dev_worker_release(&ws->w[i]);
	}
	free(ws);
}
