/*
 * fs/daemon.h: what the daemon's parts share: the pool service it hosts,
 * its FUSE session, who owns the files.  The struct is the daemon's own
 * (daemon.c): the FUSE handlers and the control socket reach what they
 * need through these calls.
 */
#ifndef MAPPERFS_DAEMON_H
#define MAPPERFS_DAEMON_H

#include <sys/types.h>
#include <time.h>

struct daemon;
struct exporter;
struct fuse_session;
struct pool;

/* The daemon of @pool (taken, closed by daemon_free), owned by the caller's ids. */
struct daemon *daemon_new(struct pool *p);
void daemon_free(struct daemon *d);

struct pool *daemon_pool(struct daemon *d);
/* The owner and group of every file in the mount. */
uid_t daemon_uid(const struct daemon *d);
gid_t daemon_gid(const struct daemon *d);

/*
 * When the daemon started serving (CLOCK_REALTIME): the mount root's
 * mtime and ctime, which a directory nobody writes would otherwise show
 * as 1970.
 */
struct timespec daemon_started(const struct daemon *d);

/* The mounted session, once mounted; NULL before and after. */
void daemon_set_session(struct daemon *d, struct fuse_session *se);
struct fuse_session *daemon_session(struct daemon *d);

/*
 * The exporter (exporter.h) once it runs; NULL before and after.  The
 * caller stops and frees it, after taking it away here and once no
 * control worker runs (control_stop).
 */
void daemon_set_exporter(struct daemon *d, struct exporter *ex);

/*
 * After an admin command that may have changed them: serves the exports
 * as the pool records them now (exporter_sync).  Nothing before the
 * exporter runs or once it stopped.  Blocks while nbdkits start or stop.
 */
void daemon_sync_exports(struct daemon *d);

/*
 * After an admin command: tells the kernel to forget what it may cache
 * that the command made untrue (pool_take_stale): the attributes and
 * mapped pages of each volume file whose size, mode or content changed,
 * each name renamed, removed or taken out of the mount.  Nothing for a
 * command that changed none (reports).  One notification each, logged at
 * debug level.  Call with no lock held: the kernel may answer with
 * requests of ours.  Never waits for the admin lock.
 */
void daemon_forget_stale(struct daemon *d);

/*
 * Names the served volumes whose files are open, with how many openers:
 * "'v' (2), 't' (1)" in @buf, "" if none.  Returns how many volumes.
 * Never blocks.
 */
size_t daemon_open_volumes(struct daemon *d, char *buf, size_t len);

#endif
