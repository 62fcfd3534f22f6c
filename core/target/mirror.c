#include "mirror.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "log.h"
#include "rcu.h"

#define SWEEP_SECONDS	5	/* md's bitmap daemon_sleep */
#define READ_SPREAD	20	/* log2 bytes: reads alternate legs per MiB */

struct mirror {
	struct target target;
	char *name;
	unsigned int nr_legs;
	struct target *_Atomic leg[MIRROR_LEGS_MAX];
	char *leg_name[MIRROR_LEGS_MAX];
	char why[MIRROR_LEGS_MAX][64];		/* lock: why a leg failed (this run) */
	char stall[MIRROR_STALL_LEN];		/* lock: why the copy waits, or "" */
	uint64_t announced[MIRROR_LEGS_MAX];	/* the thread's: region a rebuild was logged from */
	struct mirror_log *log;
	_Atomic uint64_t size;
	_Atomic uint64_t rate;			/* copy bytes/s, 0: no limit */
	_Atomic uint64_t resynced;

	pthread_mutex_t lock;			/* the thread's wake-ups */
	pthread_cond_t kick;
	bool stopping, kicked, started;
	pthread_t thread;
};

static struct mirror *to_mirror(struct target *t)
{
	return (struct mirror *)t;
}

static uint8_t leg_state(struct mirror *m, unsigned int leg)
{
	return atomic_load_explicit(&m->log->leg_state[leg], memory_order_acquire);
}

/* The first in-sync leg, or -1. */
static int first_in_sync(struct mirror *m)
{
	for (unsigned int i = 0; i < m->nr_legs; i++)
		if (leg_state(m, i) == MIRROR_LEG_IN_SYNC && rcu_load(m->leg[i]))
			return (int)i;
	return -1;
}

/* In-sync legs (with their devices) other than @except (-1: none). */
static unsigned int in_sync_except(struct mirror *m, int except)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < m->nr_legs; i++)
		n += (int)i != except && leg_state(m, i) == MIRROR_LEG_IN_SYNC &&
		     rcu_load(m->leg[i]);
	return n;
}

static unsigned int in_sync_legs(struct mirror *m)
{
	return in_sync_except(m, -1);
}

/* ---- the fast path ---------------------------------------------------------- */

/* The leg a read of @off goes to: spread by offset over the in-sync legs. */
static int read_leg(struct mirror *m, uint64_t off, bool nosync)
{
	unsigned int n = in_sync_legs(m), pick;

	if (!n)
		return -1;
	if (nosync)
		return first_in_sync(m);
	pick = (unsigned int)((off >> READ_SPREAD) % n);
	for (unsigned int i = 0; i < m->nr_legs; i++)
		if (leg_state(m, i) == MIRROR_LEG_IN_SYNC && rcu_load(m->leg[i]) && !pick--)
			return (int)i;
	return -1;
}

static int mirror_map(struct target *t, enum io_dir dir, uint64_t off,
		      uint32_t len, struct segs *out)
{
	struct mirror *m = to_mirror(t);
	uint64_t first = mirror_region(m->log, off), last = mirror_region(m->log, off + len - 1);
	_Atomic uint8_t *st;
	bool nosync = false;
	int r, leg;

	/* The count, then the array: a grow publishes the array first. */
	if (last >= atomic_load_explicit(&m->log->nr_regions, memory_order_acquire))
		return dir == IO_WRITE ? MAP_DEFER : -EIO;	/* the log grows after the table */
	st = rcu_load(m->log->state);
	for (uint64_t i = first; i <= last; i++) {
		uint8_t s = atomic_load_explicit(&st[i], memory_order_acquire);

		if (dir == IO_READ) {
			nosync |= s & MIRROR_NOSYNC;
			continue;
		}
		if (!(s & MIRROR_DIRTY) || (s & MIRROR_SYNCING))
			return MAP_DEFER;
		if (!(s & MIRROR_SEEN))
			atomic_fetch_or_explicit(&st[i], MIRROR_SEEN, memory_order_relaxed);
	}
	if (dir == IO_READ) {
		leg = read_leg(m, off, nosync);
		if (leg < 0)
			return -EIO;
		return rcu_load(m->leg[leg])->ops->map(rcu_load(m->leg[leg]), dir, off, len, out);
	}
	for (unsigned int i = 0; i < m->nr_legs; i++) {
		struct target *l = rcu_load(m->leg[i]);

		if (!l || leg_state(m, i) == MIRROR_LEG_FAILED)
			continue;
		r = l->ops->map(l, dir, off, len, out);
		if (r != MAP_REMAPPED)
			return r < 0 ? r : -EIO;
	}
	return out->nr ? MAP_REMAPPED : -EIO;
}

/* ---- one leg at a time ------------------------------------------------------ */

/* Reads or writes [off, off + len) of leg @leg alone.  0 or -errno. */
static int leg_io(struct mirror *m, struct engine *e, unsigned int leg, enum io_dir dir,
		  uint64_t off, uint32_t len, void *buf)
{
	struct segs segs;
	struct target *l;
	int r;

	segs_init(&segs);
	rcu_read_begin();
	l = rcu_load(m->leg[leg]);
	r = l ? l->ops->map(l, dir, off, len, &segs) : -ENODEV;
	if (r == MAP_REMAPPED)
		r = dir == IO_READ ? engine_read(e, &segs, buf) : engine_write(e, &segs, buf);
	else if (r > 0)
		r = -EIO;
	rcu_read_end();
	segs_release(&segs);
	return r;
}

/* Marks @leg failed for @why; @planned (a replace) is news, not an error. */
static int fail_leg(struct mirror *m, unsigned int leg, const char *why, bool planned)
{
	int r;

	if (leg_state(m, leg) == MIRROR_LEG_FAILED)
		return 0;
	if (!in_sync_except(m, (int)leg))
		return -EBUSY;			/* no other leg has the data */
	pthread_mutex_lock(&m->lock);
	snprintf(m->why[leg], sizeof(m->why[leg]), "%s", why);
	pthread_mutex_unlock(&m->lock);
	r = mirror_log_set_leg(m->log, leg, MIRROR_LEG_FAILED, 0);
	if (planned && !r)
		log_info("volume '%s': leg %u (%s) taken out: %s; %u leg(s) in sync meanwhile",
			 m->name, leg, m->leg_name[leg], why, in_sync_legs(m));
	else
		log_error("volume '%s': leg %u (%s) failed: %s; serving degraded from %u leg(s)%s",
			  m->name, leg, m->leg_name[leg], why, in_sync_legs(m),
			  r ? " (the failure could not be recorded in the log)" : "");
	return r;
}

int mirror_fail_leg(struct target *t, unsigned int leg, const char *why)
{
	return fail_leg(to_mirror(t), leg, why, false);
}

int mirror_retire_leg(struct target *t, unsigned int leg, const char *why)
{
	return fail_leg(to_mirror(t), leg, why, true);
}

/* Whether a region of [off, off + len) may differ between the legs. */
static bool range_nosync(struct mirror *m, uint64_t off, uint32_t len)
{
	uint64_t first = mirror_region(m->log, off), last = mirror_region(m->log, off + len - 1);
	_Atomic uint8_t *st;
	bool nosync = false;

	rcu_read_begin();
	st = rcu_load(m->log->state);
	for (uint64_t i = first; i <= last && i < atomic_load(&m->log->nr_regions); i++)
		nosync |= atomic_load_explicit(&st[i], memory_order_acquire) & MIRROR_NOSYNC;
	rcu_read_end();
	return nosync;
}

/*
 * The leg the fast path read from failed: it is read again, and failed if
 * it fails again (a transient error fails nothing), then the others are
 * tried in turn.  Starting from leg 0 instead would pass over a failing
 * leg that is not the first, and the volume would lose a copy unseen.
 */
static int mirror_read_failed(struct target *t, struct engine *e, uint64_t off,
			      uint32_t len, void *buf, int err)
{
	struct mirror *m = to_mirror(t);
	int chosen = read_leg(m, off, range_nosync(m, off, len)), r = err;

	if (chosen >= 0) {
		r = leg_io(m, e, (unsigned int)chosen, IO_READ, off, len, buf);
		if (!r)
			return 0;
		mirror_fail_leg(t, (unsigned int)chosen, "a read failed");
	}
	for (unsigned int i = 0; i < m->nr_legs; i++) {
		if ((int)i == chosen || leg_state(m, i) != MIRROR_LEG_IN_SYNC)
			continue;
		r = leg_io(m, e, i, IO_READ, off, len, buf);
		if (!r)
			return 0;
		mirror_fail_leg(t, i, "a read failed");
	}
	return r;
}

static int mirror_write_failed(struct target *t, struct engine *e, uint64_t off,
			       uint32_t len, const void *buf, int err)
{
	struct mirror *m = to_mirror(t);
	unsigned int ok = 0;

	for (unsigned int i = 0; i < m->nr_legs; i++) {
		if (leg_state(m, i) == MIRROR_LEG_FAILED)
			continue;
		if (!leg_io(m, e, i, IO_WRITE, off, len, (void *)buf))
			ok++;
		else if (mirror_fail_leg(t, i, "a write failed") == -EBUSY)
			return err;	/* the last in-sync leg: the write did not happen */
	}
	return ok ? 0 : err;
}

static int mirror_write_deferred(struct target *t, struct engine *e, uint64_t off,
				 uint32_t len, const void *buf)
{
	struct mirror *m = to_mirror(t);
	struct segs segs;
	int r;

	if (mirror_region(m->log, off + len - 1) >= atomic_load(&m->log->nr_regions))
		return -EIO;	/* past the log: size and log disagree */
	segs_init(&segs);
	do {
		r = mirror_log_mark(m->log, mirror_region(m->log, off),
				    mirror_region(m->log, off + len - 1));
		if (r) {
			log_error("volume '%s': cannot record a write in its log: %s",
				  m->name, strerror(-r));
			break;
		}
		segs_reset(&segs);
		rcu_read_begin();
		r = mirror_map(t, IO_WRITE, off, len, &segs);
		if (r == MAP_REMAPPED)
			r = engine_write(e, &segs, buf);
		rcu_read_end();
	} while (r == MAP_DEFER);	/* cleaned or being copied again meanwhile */
	segs_release(&segs);
	if (r == -EIO)
		r = mirror_write_failed(t, e, off, len, buf, r);
	return r;
}

static void mirror_no_end_write(struct target *t)
{
	(void)t;
}

/* ---- slow paths --------------------------------------------------------------- */

static int leg_flush(struct mirror *m, struct engine *e, unsigned int leg);

static int mirror_flush(struct target *t, struct engine *e)
{
	struct mirror *m = to_mirror(t);
	unsigned int ok = 0;
	int r = -EIO;

	for (unsigned int i = 0; i < m->nr_legs; i++) {
		if (leg_state(m, i) == MIRROR_LEG_FAILED)
			continue;
		r = leg_flush(m, e, i);
		if (!r)
			ok++;
		else if (r != -ENODEV && mirror_fail_leg(t, i, "a flush failed") == -EBUSY)
			return r;
	}
	return ok ? 0 : r;
}

static int mirror_discard(struct target *t, struct engine *e, uint64_t off,
			  uint64_t len, enum discard_mode mode)
{
	struct mirror *m = to_mirror(t);
	int r = mirror_log_mark(m->log, mirror_region(m->log, off),
				mirror_region(m->log, off + len - 1));

	for (unsigned int i = 0; !r && i < m->nr_legs; i++) {
		struct target *l;

		rcu_read_begin();	/* a replaced leg is freed after a grace period */
		l = rcu_load(m->leg[i]);
		if (l && leg_state(m, i) != MIRROR_LEG_FAILED)
			r = l->ops->discard(l, e, off, len, mode);
		rcu_read_end();
	}
	return r;
}

static int mirror_seek(struct target *t, uint64_t off, uint64_t size, int whence,
		       uint64_t *out)
{
	struct mirror *m = to_mirror(t);
	struct target *l;
	int leg, r;

	rcu_read_begin();	/* a replaced leg is freed after a grace period */
	leg = first_in_sync(m);
	l = leg < 0 ? NULL : rcu_load(m->leg[leg]);
	r = l ? l->ops->seek(l, off, size, whence, out) :
		target_seek_all_data(t, off, size, whence, out);
	rcu_read_end();
	return r;
}

/* ---- the thread ---------------------------------------------------------------- */

/*
 * Copies region @region from the first in-sync leg to the legs @to asks
 * for (a bit per leg), writes to it waiting meanwhile.  0 or -errno.
 */
static int copy_region(struct mirror *m, struct engine *e, uint64_t region, unsigned int to)
{
	uint64_t off = region * m->log->region_size, size = atomic_load(&m->size);
	uint32_t len = (uint32_t)(size - off < m->log->region_size ? size - off : m->log->region_size);
	void *buf = engine_scratch(e, m->log->region_size);
	int from, r = -EIO;

	if (!buf)
		return -ENOMEM;
	mirror_log_set_bits(m->log, region, MIRROR_SYNCING);
	rcu_wait_readers();		/* the writes that saw it unsyncing are done */
	while ((from = first_in_sync(m)) >= 0) {
		r = leg_io(m, e, (unsigned int)from, IO_READ, off, len, buf);
		if (!r || mirror_fail_leg(&m->target, (unsigned int)from, "a read failed") == -EBUSY)
			break;
	}
	for (unsigned int i = 0; !r && i < m->nr_legs; i++)
		if ((to & (1u << i)) && (int)i != from && leg_state(m, i) != MIRROR_LEG_FAILED &&
		    leg_io(m, e, i, IO_WRITE, off, len, buf))
			mirror_fail_leg(&m->target, i, "a write of the resync failed");
	if (!r)
		mirror_log_clear_bits(m->log, region, MIRROR_NOSYNC | MIRROR_SYNCING);
	else
		mirror_log_clear_bits(m->log, region, MIRROR_SYNCING);
	return r;
}

static bool stopping(struct mirror *m)
{
	bool s;

	pthread_mutex_lock(&m->lock);
	s = m->stopping;
	pthread_mutex_unlock(&m->lock);
	return s;
}

static void throttle(struct mirror *m, const struct timespec *t0, uint64_t bytes);

/* Resyncs every NOSYNC region to the legs resync_targets names, at the rate. */
/*
 * The legs a resync of @region copies to: those in sync, and those being
 * rebuilt or catching up below their cursor (past it, their rebuild copies
 * the region anyway: a resync there would copy it twice).
 */
static unsigned int resync_targets(struct mirror *m, uint64_t region)
{
	unsigned int to = 0;

	for (unsigned int i = 0; i < m->nr_legs; i++) {
		uint8_t st = leg_state(m, i);

		if (st == MIRROR_LEG_IN_SYNC ||
		    ((st == MIRROR_LEG_REBUILDING || st == MIRROR_LEG_CATCHING_UP) &&
		     atomic_load(&m->log->cursor[i]) > region))
			to |= 1u << i;
	}
	return to;
}

static void resync(struct mirror *m, struct engine *e)
{
	uint64_t n = atomic_load(&m->log->nr_regions), done = 0;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t i = 0; i < n && !stopping(m); i++) {
		uint8_t s;

		rcu_read_begin();
		s = atomic_load(&rcu_load(m->log->state)[i]);
		rcu_read_end();
		if (!(s & MIRROR_NOSYNC))
			continue;
		if (copy_region(m, e, i, resync_targets(m, i)))
			continue;
		done++;
		throttle(m, &t0, done * m->log->region_size);
	}
	if (!done)
		return;
	atomic_fetch_add(&m->resynced, done);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	log_info("volume '%s': resynced %llu dirty region(s) of %llu (%llu MiB) in %.2f s",
		 m->name, (unsigned long long)done, (unsigned long long)n,
		 (unsigned long long)(done * m->log->region_size >> 20),
		 (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
}

/* Waits so that @bytes since @t0 go no faster than the rate. */
static void throttle(struct mirror *m, const struct timespec *t0, uint64_t bytes)
{
	struct timespec now, until;
	double due, spent;

	uint64_t rate = atomic_load(&m->rate);

	if (!rate)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	due = (double)bytes / (double)rate;
	spent = (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
	if (due <= spent)
		return;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(due - spent);
	until.tv_nsec += (long)((due - spent - (double)(time_t)(due - spent)) * 1e9);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&m->lock);
	if (!m->stopping)
		pthread_cond_timedwait(&m->kick, &m->lock, &until);
	pthread_mutex_unlock(&m->lock);
}

/*
 * fdatasync of leg @leg's devices, inside a read section: a replace frees
 * the leg it replaced after a grace period (blocking in a section only
 * delays grace periods).  0 or -errno.
 */
static int leg_flush(struct mirror *m, struct engine *e, unsigned int leg)
{
	struct target *l;
	int r;

	rcu_read_begin();
	l = rcu_load(m->leg[leg]);
	r = l ? l->ops->flush(l, e) : -ENODEV;
	rcu_read_end();
	return r;
}

/* Whether legs @a and @b put [off, off + len) on the same bytes of the same devices. */
static bool legs_same(struct mirror *m, int a, unsigned int b, uint64_t off, uint32_t len)
{
	struct segs sa, sb;
	struct target *la, *lb;
	bool same = false;

	if (a < 0)
		return false;
	segs_init(&sa);
	segs_init(&sb);
	rcu_read_begin();
	la = rcu_load(m->leg[a]);
	lb = rcu_load(m->leg[b]);
	if (la && lb && la->ops->map(la, IO_READ, off, len, &sa) == MAP_REMAPPED &&
	    lb->ops->map(lb, IO_READ, off, len, &sb) == MAP_REMAPPED && sa.nr == sb.nr) {
		same = true;
		for (unsigned int i = 0; same && i < sa.nr; i++)
			same = sa.v[i].dev == sb.v[i].dev && sa.v[i].dev_off == sb.v[i].dev_off &&
			       sa.v[i].len == sb.v[i].len;
	}
	rcu_read_end();
	segs_release(&sa);
	segs_release(&sb);
	return same;
}

/* Whether region @i's bit is set: written while a leg was away. */
static bool region_dirty(struct mirror *m, uint64_t i)
{
	bool dirty;

	rcu_read_begin();
	dirty = atomic_load(&rcu_load(m->log->state)[i]) & MIRROR_DIRTY;
	rcu_read_end();
	return dirty;
}

/*
 * Rebuilds leg @leg from its cursor on: every region of a new leg
 * (REBUILDING), only those whose bit is set for one that came back
 * (CATCHING_UP: the bits were kept while it was away).  A region where it
 * holds the same bytes as the leg it copies from (a move's legs share
 * what does not move) is passed over.
 */
static struct log_limit stall_logged;

/*
 * The copy to @leg cannot read region @region from any leg in sync (@r;
 * 0: it could again): it waits for the next pass, the reason in status.
 * The leg it copies to is not at fault, and nothing is failed.
 */
static void stall(struct mirror *m, unsigned int leg, uint64_t region, int r)
{
	pthread_mutex_lock(&m->lock);
	if (r)
		snprintf(m->stall, sizeof(m->stall), "region %llu cannot be read from a leg in "
			 "sync (%s)", (unsigned long long)region, strerror(-r));
	else
		m->stall[0] = 0;
	pthread_mutex_unlock(&m->lock);
	if (r)
		log_error_limited(&stall_logged, "volume '%s': the copy to leg %u (%s) waits: region "
				  "%llu cannot be read from a leg in sync (%s); tried again in a moment",
				  m->name, leg, m->leg_name[leg], (unsigned long long)region,
				  strerror(-r));
}

static void rebuild(struct mirror *m, struct engine *e, unsigned int leg)
{
	uint8_t mode = leg_state(m, leg);
	uint64_t i = atomic_load(&m->log->cursor[leg]), copied = 0;
	bool catching_up = mode == MIRROR_LEG_CATCHING_UP;
	struct timespec t0;
	int r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (m->announced[leg] != i)	/* a copy that waits is not announced each pass */
		log_info("volume '%s': %s leg %u (%s) from region %llu of %llu", m->name,
			 catching_up ? "catching up" : "rebuilding", leg, m->leg_name[leg],
			 (unsigned long long)i, (unsigned long long)atomic_load(&m->log->nr_regions));
	m->announced[leg] = i;
	for (; i < atomic_load(&m->log->nr_regions); i++) {
		uint64_t off = i * m->log->region_size, size = atomic_load(&m->size);
		uint32_t len = (uint32_t)(size - off < m->log->region_size ? size - off :
					  m->log->region_size);

		if (stopping(m) || leg_state(m, leg) != mode)
			break;
		if ((catching_up && !region_dirty(m, i)) ||
		    legs_same(m, first_in_sync(m), leg, off, len)) {
			atomic_store(&m->log->cursor[leg], i + 1);
			continue;
		}
		/* A leg the copy cannot write is failed in copy_region; here the source. */
		r = copy_region(m, e, i, 1u << leg);
		if (r) {
			stall(m, leg, i, r);
			break;
		}
		if (leg_flush(m, e, leg)) {
			mirror_fail_leg(&m->target, leg, "the rebuild could not flush it");
			return;
		}
		stall(m, leg, i, 0);
		/*
		 * On its media before the log says so: a power cut keeps it.
		 * A failure of the leg meanwhile (a write of the copy, or of
		 * the volume) wins: the rebuild stops.
		 */
		if (mirror_log_advance(m->log, leg, mode, mode, i + 1))
			break;
		atomic_store(&m->log->cursor[leg], i + 1);
		throttle(m, &t0, ++copied * m->log->region_size);
	}
	if (leg_state(m, leg) != mode)
		return;
	if (i < atomic_load(&m->log->nr_regions)) {
		mirror_log_advance(m->log, leg, mode, mode, i);
		return;
	}
	if (mirror_log_advance(m->log, leg, mode, MIRROR_LEG_IN_SYNC, 0))
		return;		/* it failed at the last moment */
	log_info("volume '%s': leg %u (%s) %s, in sync (%llu region(s) copied)", m->name, leg,
		 m->leg_name[leg], catching_up ? "caught up" : "rebuilt",
		 (unsigned long long)copied);
}

/* Clears the bits of regions left alone for a period. */
static void sweep(struct mirror *m, struct engine *e)
{
	uint64_t *cleared;
	size_t nr;

	if (mirror_log_sweep(m->log, &cleared, &nr) || !nr)
		return;
	rcu_wait_readers();			/* writes that saw them dirty are done */
	if (!mirror_flush(&m->target, e)) {	/* and on every leg's media */
		if (!mirror_log_commit_clean(m->log, cleared, nr) && !mirror_log_dirty(m->log))
			log_info("volume '%s': every region clean in its log", m->name);
	} else
		for (size_t i = 0; i < nr; i++)	/* keep them dirty */
			mirror_log_set_bits(m->log, cleared[i], MIRROR_DIRTY);
	free(cleared);
}

static void *mirror_main(void *arg)
{
	struct mirror *m = arg;
	struct engine e;
	bool ready;

	urcu_memb_register_thread();
	ready = !engine_init(&e, 8);
	if (!ready)
		log_error("volume '%s': no io engine for its resync: %s", m->name,
			  "regions stay dirty until the next start");
	while (ready && !stopping(m)) {
		struct timespec until;

		resync(m, &e);
		for (unsigned int i = 0; i < m->nr_legs; i++)
			if ((leg_state(m, i) == MIRROR_LEG_REBUILDING ||
			     leg_state(m, i) == MIRROR_LEG_CATCHING_UP) && atomic_load(&m->leg[i]))
				rebuild(m, &e, i);
		sweep(m, &e);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += SWEEP_SECONDS;
		pthread_mutex_lock(&m->lock);
		while (!m->stopping && !m->kicked &&
		       pthread_cond_timedwait(&m->kick, &m->lock, &until) != ETIMEDOUT)
			;
		m->kicked = false;
		pthread_mutex_unlock(&m->lock);
	}
	if (ready)
		engine_exit(&e);
	urcu_memb_unregister_thread();
	return NULL;
}

static void kick(struct mirror *m)
{
	pthread_mutex_lock(&m->lock);
	m->kicked = true;
	pthread_cond_signal(&m->kick);
	pthread_mutex_unlock(&m->lock);
}

/* ---- life ---------------------------------------------------------------------- */

static uint64_t mirror_mapped(struct target *t, uint64_t size)
{
	(void)t;
	return size;
}

static void mirror_destroy(struct target *t)
{
	struct mirror *m = to_mirror(t);

	pthread_mutex_lock(&m->lock);
	m->stopping = true;
	pthread_cond_signal(&m->kick);
	pthread_mutex_unlock(&m->lock);
	if (m->started)
		pthread_join(m->thread, NULL);
	for (unsigned int i = 0; i < m->nr_legs; i++) {
		struct target *l = atomic_load(&m->leg[i]);

		if (l)
			l->ops->destroy(l);
		free(m->leg_name[i]);
	}
	mirror_log_close(m->log);
	pthread_cond_destroy(&m->kick);
	pthread_mutex_destroy(&m->lock);
	free(m->name);
	free(m);
}

static const struct target_ops mirror_ops = {
	.name = "mirror",
	.map = mirror_map,
	.fault = target_loads_nothing,
	.fault_release = target_holds_nothing,
	.fault_start = target_faults_inline,
	.write_deferred = mirror_write_deferred,
	.read_failed = mirror_read_failed,
	.write_failed = mirror_write_failed,
	.end_write = mirror_no_end_write,
	.flush = mirror_flush,
	.discard = mirror_discard,
	.seek = mirror_seek,
	.mapped_bytes = mirror_mapped,
	.destroy = mirror_destroy,
};

bool mirror_is(const struct target *t)
{
	return t->ops == &mirror_ops;
}

int mirror_create(const char *name, uint64_t size, struct target **legs,
		  const char *const *leg_names, unsigned int nr_legs,
		  struct mirror_log *log, uint64_t rate, struct target **out)
{
	struct mirror *m = nr_legs >= 2 && nr_legs <= MIRROR_LEGS_MAX ? calloc(1, sizeof(*m)) : NULL;
	int r = m ? 0 : nr_legs >= 2 && nr_legs <= MIRROR_LEGS_MAX ? -ENOMEM : -EINVAL;

	if (m) {
		m->target.ops = &mirror_ops;
		m->name = strdup(name);
		m->nr_legs = nr_legs;
		m->log = log;
		for (unsigned int i = 0; i < MIRROR_LEGS_MAX; i++)
			m->announced[i] = UINT64_MAX;
		atomic_init(&m->rate, rate);
		atomic_init(&m->size, size);
		for (unsigned int i = 0; i < nr_legs; i++) {
			atomic_init(&m->leg[i], legs[i]);
			legs[i] = NULL;
			m->leg_name[i] = strdup(leg_names[i]);
			if (!m->leg_name[i])
				r = -ENOMEM;
		}
		log = NULL;
		pthread_mutex_init(&m->lock, NULL);
		pthread_cond_init(&m->kick, NULL);
		if (!m->name)
			r = -ENOMEM;
		for (unsigned int i = 0; !r && i < nr_legs; i++)
			if (!atomic_load(&m->leg[i]) && leg_state(m, i) != MIRROR_LEG_FAILED)
				r = mirror_fail_leg(&m->target, i, "its device could not be opened");
		if (!r && !in_sync_legs(m))
			r = -ENODEV;
		if (r) {
			m->stopping = true;
			for (unsigned int i = 0; i < nr_legs; i++) {
				struct target *l = atomic_load(&m->leg[i]);

				if (l)
					l->ops->destroy(l);
				free(m->leg_name[i]);
			}
			mirror_log_close(m->log);
			free(m->name);
			free(m);
			m = NULL;
		}
	}
	for (unsigned int i = 0; legs && i < nr_legs; i++)
		if (legs[i])
			legs[i]->ops->destroy(legs[i]);
	mirror_log_close(log);
	if (!r)
		*out = &m->target;
	return r;
}

int mirror_start(struct target *t)
{
	struct mirror *m = to_mirror(t);
	int r = 0;

	pthread_mutex_lock(&m->lock);
	if (!m->started && !m->stopping) {
		r = -pthread_create(&m->thread, NULL, mirror_main, m);
		m->started = !r;
	}
	pthread_mutex_unlock(&m->lock);
	return r;
}

void mirror_status(struct target *t, struct mirror_status *out)
{
	struct mirror *m = to_mirror(t);
	uint64_t n = atomic_load(&m->log->nr_regions), nosync = 0;
	_Atomic uint8_t *st;

	memset(out, 0, sizeof(*out));
	out->nr_legs = m->nr_legs;
	rcu_read_begin();
	st = rcu_load(m->log->state);
	for (uint64_t i = 0; i < n; i++)
		nosync += !!(atomic_load(&st[i]) & MIRROR_NOSYNC);
	rcu_read_end();
	out->sync_total = n;
	out->sync_done = n - nosync;
	for (unsigned int i = 0; i < m->nr_legs; i++) {
		out->leg_state[i] = leg_state(m, i);
		if (out->leg_state[i] == MIRROR_LEG_REBUILDING ||
		    out->leg_state[i] == MIRROR_LEG_CATCHING_UP) {
			uint64_t c = atomic_load(&m->log->cursor[i]);

			if (c >= n)		/* in sync once the log says so */
				c = n - 1;
			if (out->sync_done > c)
				out->sync_done = c;
		}
	}
	out->dirty = mirror_log_dirty(m->log);
	out->resynced = atomic_load(&m->resynced);
	pthread_mutex_lock(&m->lock);
	for (unsigned int i = 0; i < m->nr_legs; i++)
		snprintf(out->why[i], sizeof(out->why[i]), "%s",
			 m->why[i][0] ? m->why[i] : "failed before this start of the daemon");
	snprintf(out->stall, sizeof(out->stall), "%s", m->stall);
	pthread_mutex_unlock(&m->lock);
}

void mirror_set_rate(struct target *t, uint64_t bytes_per_s)
{
	atomic_store(&to_mirror(t)->rate, bytes_per_s);
	kick(to_mirror(t));
}

struct target *mirror_leg(struct target *t, unsigned int leg)
{
	return atomic_load(&to_mirror(t)->leg[leg]);
}

int mirror_grow(struct target *t, uint64_t size)
{
	struct mirror *m = to_mirror(t);
	uint64_t old = atomic_exchange(&m->size, size);	/* before the regions it copies */
	int r = mirror_log_grow(m->log, (size + m->log->region_size - 1) / m->log->region_size,
				old / m->log->region_size);

	if (r)
		atomic_store(&m->size, old);
	kick(m);		/* resync what grew */
	return r;
}

int mirror_attach_leg(struct target *t, unsigned int leg, struct target *leg_target)
{
	struct mirror *m = to_mirror(t);
	struct target *none = NULL;

	if (!atomic_compare_exchange_strong(&m->leg[leg], &none, leg_target)) {
		leg_target->ops->destroy(leg_target);
		return -EBUSY;
	}
	rcu_wait_readers();	/* nothing loaded the leg as missing any more */
	return 0;
}

int mirror_readd_leg(struct target *t, unsigned int leg)
{
	struct mirror *m = to_mirror(t);
	int r;

	if (leg_state(m, leg) != MIRROR_LEG_FAILED)
		return -EALREADY;
	if (!atomic_load(&m->leg[leg]))
		return -ENODEV;
	r = mirror_log_set_leg(m->log, leg, MIRROR_LEG_CATCHING_UP, 0);
	kick(m);
	return r;
}

int mirror_replace_leg(struct target *t, unsigned int leg, struct target *leg_target,
		       const char *name)
{
	struct mirror *m = to_mirror(t);
	char *copy = strdup(name), *old_name;
	struct target *old;
	int r = mirror_fail_leg(t, leg, "being replaced");

	if (r || !copy) {
		free(copy);
		leg_target->ops->destroy(leg_target);
		return r ? r : -ENOMEM;
	}
	old = rcu_publish(m->leg[leg], leg_target);
	rcu_wait_readers();
	if (old)
		old->ops->destroy(old);
	old_name = m->leg_name[leg];
	m->leg_name[leg] = copy;
	free(old_name);
	r = mirror_log_set_leg(m->log, leg, MIRROR_LEG_REBUILDING, 0);
	kick(m);
	return r;
}
