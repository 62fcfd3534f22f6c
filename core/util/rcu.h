/*
 * core/util/rcu.h: the one liburcu flavour the project uses (memb: readers pay
 * two compiler barriers, writers a membarrier).  Include this, never
 * <urcu.h> directly, so every object agrees on the flavour.
 */
#ifndef MAPPERFS_RCU_H
#define MAPPERFS_RCU_H

#define _LGPL_SOURCE
#include <stdatomic.h>
#include <stdbool.h>
#include <urcu/urcu-memb.h>

/*
 * Pointers that RCU protects are C11 _Atomic: readers load them with
 * acquire, the writer publishes with an acq_rel exchange.  On x86 these
 * cost what rcu_dereference/rcu_xchg_pointer cost, and ThreadSanitizer
 * understands them, so the unit tests can check the protocol.
 */
#define rcu_load(ptr)		atomic_load_explicit(&(ptr), memory_order_acquire)
#define rcu_publish(ptr, val)	atomic_exchange_explicit(&(ptr), (val), memory_order_acq_rel)

/*
 * ThreadSanitizer cannot see that a grace period orders every reader's
 * section before the writer's free.  Under TSan each section end releases
 * a token and each grace period acquires it, which tells it so.
 */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
extern char rcu_tsan_token;
#define RCU_TSAN_RELEASE()	__tsan_release(&rcu_tsan_token)
#define RCU_TSAN_ACQUIRE()	__tsan_acquire(&rcu_tsan_token)
#else
#define RCU_TSAN_RELEASE()	do { } while (0)
#define RCU_TSAN_ACQUIRE()	do { } while (0)
#endif

/* A read-side section: never blocks, may nest. */
static inline void rcu_read_begin(void)
{
	urcu_memb_read_lock();
}

static inline void rcu_read_end(void)
{
	RCU_TSAN_RELEASE();
	urcu_memb_read_unlock();
}

/*
 * Whether the calling thread is inside a read section: one thread-local
 * load, for checks of "the caller holds no read section" (volume.c).
 */
static inline bool rcu_reading(void)
{
	return urcu_memb_read_ongoing();
}

/*
 * Parked requests.  A request the data path maps inside a read section
 * and completes later, after the section ended (an NBD read in flight
 * while its thread serves others: engine.h, engine_start), still uses
 * what the section protected (a table, a device).  It holds a park token
 * from inside the section until it completed, and rcu_wait_readers waits
 * for every token taken before it as it waits for every section: a
 * sleepable RCU of two counters, as the kernel's SRCU.  A thread that
 * holds tokens must not call rcu_wait_readers (it would wait for
 * itself): it completes its parked requests first.
 *
 * rcu_park: inside a read section; one atomic add on a shared line.
 * rcu_unpark: anywhere, with what rcu_park returned; wakes a waiting
 * writer when it dropped the last token of its epoch.  Neither blocks.
 */
unsigned int rcu_park(void);
void rcu_unpark(unsigned int token);

/*
 * Waits until every section that began before the call has ended, and
 * every park token taken before it was given back.  Writers are served
 * one at a time.  Blocks.
 */
void rcu_wait_readers(void);

#endif
