/*
 * fs/exporter.c: see exporter.h.
 *
 * One thread owns every nbdkit the daemon runs, for two reasons: nbdkit
 * runs with --exit-with-parent, which Linux ties to the thread that forked
 * it (PR_SET_PDEATHSIG), so that thread must live as long as the daemon;
 * and one owner needs no lock around the processes.  It sleeps in poll(2)
 * on an eventfd (a sync asked for), each nbdkit's pidfd (it exited) and its
 * standard error (a line for the log), with a timeout for the next
 * restart that is due.
 *
 * A sync reads the pool's list (pool_exports) and makes the running set
 * match it: an export no longer listed is stopped, one new is started.
 * Starting binds the listening socket first, in the daemon: a Unix socket
 * is made 0600 (as the pool's owner, when a root daemon serves another
 * user's pool: the owner's export is the owner's), a TCP socket only on
 * the address given.  The socket stays with the daemon for the export's
 * life, so a restarted nbdkit takes the same one, and clients that come
 * meanwhile wait in its backlog rather than being refused.  A Unix socket
 * nobody listens on at the export's path (a daemon killed before it could
 * remove it) is replaced; anything else there is left alone and the
 * export fails, saying so.  An export that requires TLS has its key file
 * opened as the owner could and checked again (psk_file.h) at each start;
 * nbdkit reads that descriptor, never the path.
 *
 * An nbdkit that dies is started again after a back-off (1 s, doubling to
 * 30 s, back to 1 s once one ran a minute); meanwhile the export shows
 * "restarting" with why.  One that cannot be started (its socket, its
 * volume not served) shows "failed", and is tried again at the next sync
 * (the volume back after a reload) or after the back-off (an address
 * that was taken).  The service holds what status shows
 * (pool_export_set_state); this thread is the only one that sets it.
 */
#include "exporter.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsid.h"
#include "log.h"
#include "nbdkit.h"
#include "netaddr.h"
#include "pool.h"
#include "psk_file.h"

#define BACKOFF_FIRST_MS	1000
#define BACKOFF_MAX_MS		30000
#define RAN_LONG_ENOUGH_MS	60000	/* a run this long starts the back-off again */
#define STOP_GRACE_MS		5000
#define LAST_WORDS_MS		2000	/* a stderr line this close to its exit tells why */
#define SOCKET_MODE		0600

struct export_entry {
	struct pool_export_info info;	/* as the pool listed it at the last sync */
	int listen_fd;			/* -1: not bound */
	dev_t sock_dev;			/* the Unix socket file made, to remove only it */
	ino_t sock_ino;
	struct nbdkit kit;
	uint64_t retry_at_ms;		/* CLOCK_MONOTONIC; 0: none due */
	uint32_t backoff_ms;
};

struct exporter {
	struct pool *pool;
	char *mountpoint;
	char *nbdkit;			/* its path, or NULL: not installed */
	int wake_fd;			/* eventfd: a sync is asked, or the stop */
	pthread_t thread;

	pthread_mutex_t lock;		/* what follows */
	pthread_cond_t synced;
	uint64_t asked, done;		/* syncs asked for and done, counted */
	bool stopping, stopped;

	struct export_entry *v;		/* the thread's own */
	size_t nr;
};

/* ---- one export ------------------------------------------------------- */

static void say_state(struct exporter *ex, struct export_entry *e, enum pool_export_state s,
		      const char *reason)
{
	pool_export_set_state(ex->pool, e->info.rec.volume, s, e->kit.pid, reason);
}

static void log_line(void *arg, const char *text)
{
	struct export_entry *e = arg;

	log_warn("export of volume '%s': %s", e->info.volume, text);
}

/* Binds @e's listening socket.  0, or -errno with @why set. */
static int bind_socket(struct exporter *ex, struct export_entry *e, char *why, size_t len)
{
	struct fsid_saved self = { .switched = false };
	const char *addr = e->info.rec.address;
	struct stat st;
	int r;

	if (e->info.rec.transport == EXPORT_TCP) {
		r = netaddr_listen_tcp(addr, &e->listen_fd);
	} else {
		r = fsid_take(pool_owner(ex->pool), &self);
		if (!r)
			r = netaddr_listen_unix(addr, SOCKET_MODE, &e->listen_fd);
		if (r == -EADDRINUSE && netaddr_unix_is_stale(addr)) {
			/* a daemon killed before it could remove it */
			log_info("export of volume '%s': removing the stale socket '%s'",
				 e->info.volume, addr);
			unlink(addr);
			r = netaddr_listen_unix(addr, SOCKET_MODE, &e->listen_fd);
		}
		fsid_restore(&self);
		if (!r && !lstat(addr, &st)) {
			e->sock_dev = st.st_dev;
			e->sock_ino = st.st_ino;
		}
	}
	if (r) {
		e->listen_fd = -1;
		snprintf(why, len, "cannot listen on '%.200s': %s", addr,
			 r == -EADDRINUSE ? "address in use" : strerror(-r));
	}
	return r;
}

/* Closes @e's socket and removes its file, if it is still the one made. */
static void unbind_socket(struct export_entry *e)
{
	struct stat st;

	if (e->listen_fd < 0)
		return;
	close(e->listen_fd);
	e->listen_fd = -1;
	if (e->info.rec.transport == EXPORT_UNIX && !lstat(e->info.rec.address, &st) &&
	    S_ISSOCK(st.st_mode) && st.st_dev == e->sock_dev && st.st_ino == e->sock_ino)
		unlink(e->info.rec.address);
}

static void schedule_retry(struct export_entry *e)
{
	e->retry_at_ms = nbdkit_now_ms() + e->backoff_ms;
	e->backoff_ms = e->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : e->backoff_ms * 2;
}

/*
 * Opens @e's TLS key file as its owner could and checks it again (it may
 * have changed since the export was made): the descriptor nbdkit reads,
 * or -errno with @why set.
 */
static int open_key_file(struct exporter *ex, struct export_entry *e, char *why, size_t len)
{
	struct fsid_saved self = { .switched = false };
	char identity[PSK_IDENTITY_MAX + 1], what[160];
	int fd = fsid_take(pool_owner(ex->pool), &self);

	if (!fd)
		fd = psk_file_open(e->info.rec.tls_psk, pool_owner(ex->pool)->uid, identity,
				   what, sizeof(what));
	else
		snprintf(what, sizeof(what), "cannot be opened as the pool's owner: %s",
			 strerror(-fd));
	fsid_restore(&self);
	if (fd < 0)
		snprintf(why, len, "TLS key file '%.200s' %s", e->info.rec.tls_psk, what);
	return fd;
}

/* Starts @e's nbdkit, binding its socket first if need be. */
static void start_entry(struct exporter *ex, struct export_entry *e)
{
	char why[POOL_ERROR_LEN], uri[POOL_EXPORT_URI_MAX], file[PATH_MAX];
	int r, psk_fd = -1;

	e->retry_at_ms = 0;
	if (!ex->nbdkit) {
		say_state(ex, e, POOL_EXPORT_FAILED, "nbdkit is not installed (no nbdkit on PATH)");
		return;
	}
	if (!e->info.served) {
		snprintf(why, sizeof(why), "volume '%s' is not served", e->info.volume);
		log_warn("export of volume '%s': not started: %s", e->info.volume, why);
		say_state(ex, e, POOL_EXPORT_FAILED, why);
		return;		/* tried again at the next sync: a reload is one */
	}
	if (e->listen_fd < 0 && bind_socket(ex, e, why, sizeof(why))) {
		log_warn("export of volume '%s': %s", e->info.volume, why);
		say_state(ex, e, POOL_EXPORT_FAILED, why);
		schedule_retry(e);
		return;
	}
	if (e->info.rec.tls_psk[0] && (psk_fd = open_key_file(ex, e, why, sizeof(why))) < 0) {
		log_warn("export of volume '%s': %s", e->info.volume, why);
		say_state(ex, e, POOL_EXPORT_FAILED, why);
		schedule_retry(e);
		return;
	}
	snprintf(file, sizeof(file), "%s/%s", ex->mountpoint, e->info.volume);
	r = nbdkit_spawn(&e->kit, ex->nbdkit, e->listen_fd, file, e->info.rec.read_only, psk_fd);
	if (psk_fd >= 0)
		close(psk_fd);
	if (r) {
		snprintf(why, sizeof(why), "cannot run nbdkit: %s", strerror(-r));
		log_warn("export of volume '%s': %s", e->info.volume, why);
		say_state(ex, e, POOL_EXPORT_FAILED, why);
		schedule_retry(e);
		return;
	}
	pool_export_uri(&e->info.rec, uri, sizeof(uri));
	log_info("export of volume '%s' on %s: nbdkit serves it (pid %d)", e->info.volume, uri,
		 (int)e->kit.pid);
	say_state(ex, e, POOL_EXPORT_SERVING, NULL);
}

/* @e's nbdkit exited on its own: say why, start it again later. */
static void entry_exited(struct exporter *ex, struct export_entry *e)
{
	char how[96], why[POOL_ERROR_LEN];
	pid_t pid = e->kit.pid;
	uint64_t ran;
	int status;
	bool said;

	nbdkit_drain(&e->kit, log_line, e);
	ran = nbdkit_reap(&e->kit, &status);
	if (ran >= RAN_LONG_ENOUGH_MS)
		e->backoff_ms = BACKOFF_FIRST_MS;
	nbdkit_describe_exit(status, how, sizeof(how));
	/* its last words, if they were last: not a client's error of minutes ago */
	said = e->kit.last[0] && nbdkit_now_ms() - e->kit.last_ms <= LAST_WORDS_MS;
	snprintf(why, sizeof(why), "nbdkit (pid %d) %s%s%s%s; restarting in %u s", (int)pid, how,
		 said ? " (" : "", said ? e->kit.last : "", said ? ")" : "", e->backoff_ms / 1000);
	log_warn("export of volume '%s': %s", e->info.volume, why);
	say_state(ex, e, POOL_EXPORT_RESTARTING, why);
	schedule_retry(e);
}

static void stop_entry(struct exporter *ex, struct export_entry *e)
{
	pid_t pid = e->kit.pid;

	if (pid > 0) {
		nbdkit_stop(&e->kit, STOP_GRACE_MS);
		nbdkit_drain(&e->kit, log_line, e);
		log_info("export of volume '%s': stopped nbdkit (pid %d)", e->info.volume,
			 (int)pid);
	}
	unbind_socket(e);
	say_state(ex, e, POOL_EXPORT_STOPPED, NULL);
}

/* ---- the set ---------------------------------------------------------- */

static bool same_export(const struct export_rec *a, const struct export_rec *b)
{
	return a->volume == b->volume && a->transport == b->transport &&
	       a->read_only == b->read_only && !strcmp(a->address, b->address) &&
	       !strcmp(a->tls_psk, b->tls_psk);
}

static const struct pool_export_info *listed(const struct pool_export_info *list, size_t nr,
					     const struct export_rec *rec)
{
	for (size_t i = 0; i < nr; i++)
		if (same_export(&list[i].rec, rec))
			return &list[i];
	return NULL;
}

/* Stops and drops the entries the pool no longer lists. */
static void drop_gone(struct exporter *ex, const struct pool_export_info *list, size_t nr)
{
	for (size_t i = 0; i < ex->nr;) {
		if (listed(list, nr, &ex->v[i].info.rec)) {
			i++;
			continue;
		}
		stop_entry(ex, &ex->v[i]);
		ex->v[i] = ex->v[--ex->nr];
	}
}

/* Adds the exports the pool lists anew; 0 or -ENOMEM. */
static int add_new(struct exporter *ex, const struct pool_export_info *list, size_t nr)
{
	for (size_t i = 0; i < nr; i++) {
		struct export_entry *grown, *e = NULL;

		for (size_t k = 0; k < ex->nr && !e; k++)
			if (same_export(&ex->v[k].info.rec, &list[i].rec))
				e = &ex->v[k];
		if (e) {
			bool was_served = e->info.served;

			e->info = list[i];
			if (!was_served && e->info.served && !e->kit.pid)
				e->retry_at_ms = 1;	/* its volume is back: now */
			continue;
		}
		grown = realloc(ex->v, (ex->nr + 1) * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		ex->v = grown;
		e = &ex->v[ex->nr++];
		*e = (struct export_entry){ .info = list[i], .listen_fd = -1,
					    .kit = NBDKIT_INIT, .retry_at_ms = 1,
					    .backoff_ms = BACKOFF_FIRST_MS };
	}
	return 0;
}

/* Starts every entry not running whose time has come. */
static void start_due(struct exporter *ex)
{
	uint64_t now = nbdkit_now_ms();

	for (size_t i = 0; i < ex->nr; i++)
		if (!ex->v[i].kit.pid && ex->v[i].retry_at_ms && ex->v[i].retry_at_ms <= now)
			start_entry(ex, &ex->v[i]);
}

static void sync_with_pool(struct exporter *ex)
{
	struct pool_export_info *list;
	size_t nr;

	if (pool_exports(ex->pool, &list, &nr)) {
		log_warn("cannot read the pool's exports: out of memory");
		return;
	}
	drop_gone(ex, list, nr);
	if (add_new(ex, list, nr))
		log_warn("cannot serve every export: out of memory");
	free(list);
}

/* ---- the thread ------------------------------------------------------- */

/* ms until the next restart is due, or -1. */
static int next_timeout(struct exporter *ex)
{
	uint64_t now = nbdkit_now_ms(), soonest = UINT64_MAX;

	for (size_t i = 0; i < ex->nr; i++)
		if (!ex->v[i].kit.pid && ex->v[i].retry_at_ms && ex->v[i].retry_at_ms < soonest)
			soonest = ex->v[i].retry_at_ms;
	if (soonest == UINT64_MAX)
		return -1;
	return soonest <= now ? 0 : (int)(soonest - now);
}

/* Waits for anything to happen, then handles the nbdkits' part of it. */
static void wait_and_watch(struct exporter *ex)
{
	size_t n = 1 + 2 * ex->nr;
	struct pollfd *fds = calloc(n, sizeof(*fds));
	uint64_t count;

	if (!fds) {
		poll(&(struct pollfd){ .fd = ex->wake_fd, .events = POLLIN }, 1, 1000);
		return;
	}
	fds[0] = (struct pollfd){ .fd = ex->wake_fd, .events = POLLIN };
	for (size_t i = 0; i < ex->nr; i++) {
		fds[1 + 2 * i] = (struct pollfd){ .fd = ex->v[i].kit.pidfd, .events = POLLIN };
		fds[2 + 2 * i] = (struct pollfd){ .fd = ex->v[i].kit.err_fd, .events = POLLIN };
	}
	if (poll(fds, n, next_timeout(ex)) > 0) {
		if (fds[0].revents && read(ex->wake_fd, &count, sizeof(count)) < 0)
			log_debug("exporter: reading its eventfd: %s", strerror(errno));
		for (size_t i = 0; i < ex->nr; i++) {
			if (fds[2 + 2 * i].revents)
				nbdkit_drain(&ex->v[i].kit, log_line, &ex->v[i]);
			if (fds[1 + 2 * i].revents && ex->v[i].kit.pid)
				entry_exited(ex, &ex->v[i]);
		}
	}
	free(fds);
}

static void *exporter_main(void *arg)
{
	struct exporter *ex = arg;
	uint64_t asked;
	bool stopping;

	for (;;) {
		pthread_mutex_lock(&ex->lock);
		asked = ex->asked;
		stopping = ex->stopping;
		pthread_mutex_unlock(&ex->lock);
		if (stopping)
			break;
		if (asked != ex->done)
			sync_with_pool(ex);
		start_due(ex);
		pthread_mutex_lock(&ex->lock);
		ex->done = asked;
		pthread_cond_broadcast(&ex->synced);
		pthread_mutex_unlock(&ex->lock);
		wait_and_watch(ex);
	}
	for (size_t i = 0; i < ex->nr; i++)
		stop_entry(ex, &ex->v[i]);
	ex->nr = 0;
	pthread_mutex_lock(&ex->lock);
	ex->stopped = true;
	pthread_cond_broadcast(&ex->synced);
	pthread_mutex_unlock(&ex->lock);
	return NULL;
}

static void wake(struct exporter *ex)
{
	uint64_t one = 1;

	if (write(ex->wake_fd, &one, sizeof(one)) < 0)
		log_debug("exporter: writing its eventfd: %s", strerror(errno));
}

void exporter_sync(struct exporter *ex)
{
	uint64_t mine;

	pthread_mutex_lock(&ex->lock);
	mine = ++ex->asked;
	if (!ex->stopping)
		wake(ex);
	while (!ex->stopped && !ex->stopping && ex->done < mine)
		pthread_cond_wait(&ex->synced, &ex->lock);
	pthread_mutex_unlock(&ex->lock);
}

int exporter_start(struct pool *p, const char *mountpoint, struct exporter **out)
{
	struct exporter *ex = calloc(1, sizeof(*ex));
	int r;

	if (!ex)
		return -ENOMEM;
	ex->pool = p;
	ex->mountpoint = strdup(mountpoint);
	ex->nbdkit = nbdkit_find();
	ex->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_init(&ex->lock, NULL);
	pthread_cond_init(&ex->synced, NULL);
	if (!ex->mountpoint || ex->wake_fd < 0) {
		r = ex->mountpoint ? -errno : -ENOMEM;
		goto err_free;
	}
	r = -pthread_create(&ex->thread, NULL, exporter_main, ex);
	if (r)
		goto err_free;
	exporter_sync(ex);
	*out = ex;
	return 0;

err_free:
	exporter_free(ex);
	return r;
}

void exporter_stop(struct exporter *ex)
{
	pthread_mutex_lock(&ex->lock);
	if (ex->stopping) {
		pthread_mutex_unlock(&ex->lock);
		return;
	}
	ex->stopping = true;
	wake(ex);
	pthread_cond_broadcast(&ex->synced);
	pthread_mutex_unlock(&ex->lock);
	pthread_join(ex->thread, NULL);
}

void exporter_free(struct exporter *ex)
{
	if (!ex)
		return;
	if (ex->wake_fd >= 0)
		close(ex->wake_fd);
	pthread_cond_destroy(&ex->synced);
	pthread_mutex_destroy(&ex->lock);
	free(ex->v);
	free(ex->nbdkit);
	free(ex->mountpoint);
	free(ex);
}
