#include "rcu.h"

#include <pthread.h>

#if defined(__SANITIZE_THREAD__)
char rcu_tsan_token;
#endif

/*
 * Park tokens (rcu.h).  A token counts in parked[epoch & 1] as the epoch
 * was when it was taken.  A writer flips the epoch, waits for a grace
 * period, then for the old epoch's count to drop to zero.  A token of the
 * old epoch was taken inside a section that began before the flip was
 * seen: the grace period waits for that section, so its count is visible
 * to the writer by then; a section that began after the flip takes the
 * new epoch.  Writers hold writer_lock, so one flip is waited out before
 * the next.  Every access is sequentially consistent: the writer's store
 * of waiting before its load of a count, and a parker's decrement before
 * its load of waiting, cannot both miss each other.
 */
static _Atomic unsigned int epoch;
static _Atomic long parked[2];
static _Atomic int waiting;
static pthread_mutex_t writer_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;

unsigned int rcu_park(void)
{
	unsigned int token = atomic_load(&epoch) & 1;

	atomic_fetch_add(&parked[token], 1);
	return token;
}

void rcu_unpark(unsigned int token)
{
	RCU_TSAN_RELEASE();
	if (atomic_fetch_sub(&parked[token], 1) == 1 && atomic_load(&waiting)) {
		pthread_mutex_lock(&wake_lock);
		pthread_cond_broadcast(&wake);
		pthread_mutex_unlock(&wake_lock);
	}
}

void rcu_wait_readers(void)
{
	unsigned int old;

	pthread_mutex_lock(&writer_lock);
	old = atomic_fetch_add(&epoch, 1) & 1;
	urcu_memb_synchronize_rcu();
	if (atomic_load(&parked[old])) {
		pthread_mutex_lock(&wake_lock);
		atomic_store(&waiting, 1);
		while (atomic_load(&parked[old]))
			pthread_cond_wait(&wake, &wake_lock);
		atomic_store(&waiting, 0);
		pthread_mutex_unlock(&wake_lock);
	}
	pthread_mutex_unlock(&writer_lock);
	RCU_TSAN_ACQUIRE();
}
