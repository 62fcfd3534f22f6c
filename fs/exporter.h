/*
 * fs/exporter.h: the daemon's NBD exports.  The pool service records
 * which volume is exported where (pool_export); the exporter makes that
 * so while the daemon serves the pool: one nbdkit per export on the
 * volume's file in the mount, started after the mount is up, restarted
 * when it dies, stopped before the mount goes.
 */
#ifndef MAPPERFS_EXPORTER_H
#define MAPPERFS_EXPORTER_H

struct exporter;
struct pool;

/*
 * Starts the exporter's thread for @p mounted at @mountpoint and serves
 * every export recorded (as exporter_sync).  0, or -errno (no thread).
 */
int exporter_start(struct pool *p, const char *mountpoint, struct exporter **out);

/*
 * Makes the running exports what the pool records now: starts those that
 * are new (their socket bound before this returns), stops those that are
 * gone.  Call after a command that may have changed them, with no lock
 * held.  Blocks until the exporter's thread has done it (spawning,
 * stopping an nbdkit: up to its stop's grace); nothing once stopped.
 */
void exporter_sync(struct exporter *ex);

/*
 * Stops every nbdkit (SIGTERM, up to 5 s, then SIGKILL; by pid), closes
 * and removes their sockets, ends the thread.  Later syncs do nothing.
 * Blocks until done.
 */
void exporter_stop(struct exporter *ex);

/* Frees @ex, stopped (exporter_stop) and no longer reachable.  NULL: nothing. */
void exporter_free(struct exporter *ex);

#endif
