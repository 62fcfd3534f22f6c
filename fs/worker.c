#include "worker.h"

#include <stddef.h>

#include "rcu.h"

static __thread struct worker *self;

struct worker *worker_self(void)
{
	return self;
}

int worker_enter(struct worker *w)
{
	int r;

	urcu_memb_register_thread();
	/* The ring is made here: IORING_SETUP_SINGLE_ISSUER binds it to us. */
	r = engine_init(&w->engine, WORKER_RING_DEPTH);
	w->engine_ok = r == 0;
	if (r) {
		urcu_memb_unregister_thread();
		return r;
	}
	self = w;
	return 0;
}

void worker_leave(struct worker *w)
{
	self = NULL;
	if (w->engine_ok)
		engine_exit(&w->engine);
	w->engine_ok = 0;
	urcu_memb_unregister_thread();
}

bool worker_reply(const struct iovec *iov, int count, ssize_t *res)
{
	struct worker *w = self;

	return w && w->reply && w->reply(w, iov, count, res);
}
