/*
 * core/thin/thin_loader.c: the loader, one thread per thin pool that
 * loads leaves for reads that missed them.
 *
 * A pool over its memory budget (docs/thin.md) unloads leaves, and a read
 * whose leaf is not loaded cannot be mapped until the store gave it back:
 * 20 to 40 us of SQLite.  Faulted in on the thread that serves the read
 * (thin_fault), that is 20 to 40 us during which every other request
 * the thread holds waits too; an io_uring ring thread holds up to eight.
 * So a thread with others to serve hands the miss here instead
 * (fault_start, volume_read_or_wait): the read waits in the queue, its
 * thread goes on serving reads of loaded leaves, and the loader calls the
 * read's done() once the leaf is in; the read then maps again.
 *
 * The queue is a list, in order, of leaves to load, each with the reads
 * that wait for it.  A read that misses a leaf already queued, or being
 * loaded, waits for that load rather than queue another: several misses
 * to one leaf load it once.  A leaf is known by its address in the map;
 * the loader never reads it through that key (it may be gone by then): it
 * loads whatever leaf the volume's directory has at the slot when its
 * turn comes, under the pool lock, as thin_fault would (the pool's
 * load_slot).  A read that needs two leaves (it crosses a leaf's end)
 * waits on the later of the two in the queue, so both were loaded when it
 * is called.
 *
 * What keeps what alive.  A queued load holds its volume's target (its
 * users, as a call outside a read section holds it for volume_reload)
 * until its waits were called: a volume reloaded meanwhile keeps its old
 * target until then.  The loader touches no wait after calling it, and
 * lets go of the target (its users) once it called them all: a reader
 * whose wait was called may still see the load's hold for a moment.
 *
 * Stopping (the pool stops: the daemon ends, a repair restarts it) fails
 * every wait still queued with -EIO at once, from the stopping thread, and
 * lets the load in flight finish and call its own: each read then faults
 * its leaf in itself, or fails.  Nothing is left queued, nobody waits
 * forever.
 *
 * One lock, the queue's: held for list work only, never across a load,
 * and never while a wait is called.  The pool lock is taken by the load
 * alone, never with the queue's held.
 */
#include "thin_loader.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "rcu.h"
#include "target.h"
#include "thin_int.h"

/* A leaf to load, and the reads waiting for it. */
struct thin_load {
	struct thin *th;		/* held: th->target.users */
	uint32_t slot;
	const struct thin_leaf *key;	/* compared, never read */
	struct target_wait *waits;	/* a list through ->next */
	struct thin_load *next;		/* the queue */
};

struct thin_loader {
	int (*load)(struct thin *th, uint32_t slot);
	pthread_mutex_t lock;
	pthread_cond_t wake;		/* a load was queued, or stop */
	struct thin_load *head, *tail;	/* the head is being loaded if @busy */
	bool busy;
	bool running;			/* started and not stopped: queues accepted */
	bool stopping;
	pthread_t thread;
	bool thread_ok;
	_Atomic uint64_t waits;		/* thin_loader_waits */
};

struct thin_loader *thin_loader_new(int (*load)(struct thin *th, uint32_t slot))
{
	struct thin_loader *ld = calloc(1, sizeof(*ld));

	if (!ld)
		return NULL;
	ld->load = load;
	pthread_mutex_init(&ld->lock, NULL);
	pthread_cond_init(&ld->wake, NULL);
	return ld;
}

/* Calls the waits of @l with @result and frees it.  No lock held. */
static void finish(struct thin_load *l, int result)
{
	struct target_wait *w = l->waits;
	struct thin *th = l->th;

	free(l);
	while (w) {
		struct target_wait *next = w->next;

		w->done(w, result);	/* @w is the reader's again */
		w = next;
	}
	atomic_fetch_sub(&th->target.users, 1);
}

static void *loader_main(void *arg)
{
	struct thin_loader *ld = arg;

	urcu_memb_register_thread();
	pthread_mutex_lock(&ld->lock);
	for (;;) {
		struct thin_load *l;
		int r;

		while (!ld->head && !ld->stopping)
			pthread_cond_wait(&ld->wake, &ld->lock);
		if (!ld->head)
			break;			/* stopping: stop failed the rest */
		l = ld->head;
		ld->busy = true;		/* stays at the head: later misses wait on it */
		pthread_mutex_unlock(&ld->lock);
		r = ld->load(l->th, l->slot);
		pthread_mutex_lock(&ld->lock);
		ld->busy = false;
		ld->head = l->next;
		if (!ld->head)
			ld->tail = NULL;
		pthread_mutex_unlock(&ld->lock);
		finish(l, r);
		pthread_mutex_lock(&ld->lock);
	}
	pthread_mutex_unlock(&ld->lock);
	urcu_memb_unregister_thread();
	return NULL;
}

int thin_loader_start(struct thin_loader *ld)
{
	int r = -pthread_create(&ld->thread, NULL, loader_main, ld);

	if (r)
		return r;
	pthread_setname_np(ld->thread, "thin-loader");
	pthread_mutex_lock(&ld->lock);
	ld->thread_ok = ld->running = true;
	pthread_mutex_unlock(&ld->lock);
	return 0;
}

void thin_loader_stop(struct thin_loader *ld)
{
	struct thin_load *rest;

	pthread_mutex_lock(&ld->lock);
	ld->running = false;
	ld->stopping = true;
	/* All but the load in flight, which the loader finishes. */
	if (ld->busy) {
		rest = ld->head->next;
		ld->head->next = NULL;
		ld->tail = ld->head;
	} else {
		rest = ld->head;
		ld->head = ld->tail = NULL;
	}
	pthread_cond_signal(&ld->wake);
	pthread_mutex_unlock(&ld->lock);
	while (rest) {
		struct thin_load *next = rest->next;

		finish(rest, -EIO);
		rest = next;
	}
	if (ld->thread_ok)
		pthread_join(ld->thread, NULL);
	ld->thread_ok = false;
}

void thin_loader_free(struct thin_loader *ld)
{
	if (!ld)
		return;
	pthread_cond_destroy(&ld->wake);
	pthread_mutex_destroy(&ld->lock);
	free(ld);
}

/* The queued load of @key, or NULL.  Queue lock held. */
static struct thin_load *queued(struct thin_loader *ld, const struct thin_leaf *key)
{
	for (struct thin_load *l = ld->head; l; l = l->next)
		if (l->key == key)
			return l;
	return NULL;
}

int thin_loader_queue(struct thin_loader *ld, struct thin *th,
		      const struct thin_load_slot *slots, unsigned int nr,
		      struct target_wait *w)
{
	struct thin_load *fresh[THIN_LOADER_SLOTS] = { NULL }, *last = NULL;
	unsigned int used = 0;
	int r = 0;

	if (!nr || nr > THIN_LOADER_SLOTS)
		return -EAGAIN;
	/* Allocated first: the lock covers list work only. */
	for (unsigned int i = 0; i < nr; i++) {
		fresh[i] = malloc(sizeof(*fresh[i]));
		if (!fresh[i])
			r = -EAGAIN;
	}
	pthread_mutex_lock(&ld->lock);
	if (!ld->running)
		r = -EAGAIN;
	for (unsigned int i = 0; !r && i < nr; i++) {
		struct thin_load *l = queued(ld, slots[i].leaf);

		if (!l) {
			l = fresh[used++];
			*l = (struct thin_load){ .th = th, .slot = slots[i].slot,
						 .key = slots[i].leaf };
			atomic_fetch_add(&th->target.users, 1);
			if (ld->tail)
				ld->tail->next = l;
			else
				ld->head = l;
			ld->tail = l;
			pthread_cond_signal(&ld->wake);
		}
		/* The queue is in order: the later one is loaded after. */
		if (!last)
			last = l;
		for (struct thin_load *k = last->next; k; k = k->next)
			if (k == l)
				last = l;
	}
	if (!r) {
		w->next = last->waits;
		last->waits = w;
		atomic_fetch_add_explicit(&ld->waits, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&ld->lock);
	while (used < nr)
		free(fresh[used++]);
	return r;
}

uint64_t thin_loader_waits(struct thin_loader *ld)
{
	return atomic_load_explicit(&ld->waits, memory_order_relaxed);
}
