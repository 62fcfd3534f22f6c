#include "lock_wait.h"

#include <errno.h>
#include <stdbool.h>
#include <unistd.h>

#include "pool.h"
#include "wire.h"

/* A daemon serves the pool: it answers on POOL/control.sock. */
static bool daemon_answers(const char *dir)
{
	int fd = wire_connect(dir, NULL, 0);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

int lock_wait(const char *dir, struct lock_wait *w)
{
	unsigned int waited_ms = 0, live_ms = 0, step_ms = 2;
	bool told = false;
	int fd;

	while ((fd = pool_lock(dir, w->who)) == -EBUSY && waited_ms < LOCK_WAIT_MS) {
		if (daemon_answers(dir)) {
			live_ms += step_ms;
			if (live_ms >= w->live_ms) {
				fd = -EISCONN;
				break;
			}
		} else {
			live_ms = 0;
		}
		if (!told && waited_ms >= LOCK_NOTE_MS && w->waiting) {
			pool_lock_holder(dir, w->holder, sizeof(w->holder));
			w->waiting(w->arg, w->holder);
			told = true;
		}
		usleep(step_ms * 1000);
		waited_ms += step_ms;
		step_ms = step_ms * 2 > 100 ? 100 : step_ms * 2;
	}
	if (fd == -EBUSY || fd == -EISCONN)
		pool_lock_holder(dir, w->holder, sizeof(w->holder));
	return fd;
}
