/*
 * core/pool/pool_hooks.h: the thin pools' event commands (--on-event), run one
 * at a time per thin pool, in the order their events happened.
 *
 * Events are queued by the monitor and by admin operations (under the
 * admin lock).  Queueing copies the command and its environment and
 * wakes the runner, a thread of its own: it never waits for a command, so
 * no admin operation, commit or request waits for a hook.  The runner
 * starts a thin pool's next command once its last one has exited, so a
 * hook's output for "full" never interleaves with the one for "extended"
 * that came after.  Thin pools do not wait for each other.
 *
 * Bounds: a thin pool's queue holds HOOK_QUEUE_MAX events; one more is
 * dropped, with a log line.  A command still running after the timeout
 * (POOL_EVENT_TIMEOUT_S unless the daemon was told otherwise) is killed with
 * its process group (whatever it started), and logged: a hook that hangs
 * delays its thin pool's later events by that much, and nothing else.
 *
 * Trust: the commands run as the owner of the pool directory, never as a
 * daemon's root on another user's pool; a hook directory runs only when
 * it and all in it are that user's or root's and writable by their owner
 * alone (pool_hooks.c, docs/architecture.md).
 */
#ifndef MAPPERFS_POOL_HOOKS_H
#define MAPPERFS_POOL_HOOKS_H

#include <stdint.h>
#include <sys/types.h>

#define HOOK_QUEUE_MAX		16	/* events waiting, per thin pool */
#define HOOK_STOP_GRACE_MS	2000	/* at stop, for the commands running */

struct pool_hooks;

struct fsid_user;
/*
 * Starts the runner; commands run as @owner (the pool directory's owner,
 * with its groups: fsid.h; it must outlive the runner) and are killed
 * after @timeout_s.  0 or -errno.
 */
int pool_hooks_start(uint32_t timeout_s, const struct fsid_user *owner,
		     struct pool_hooks **out);
/*
 * Queues @cmd for thin pool @key (@name and @event for messages): run by
 * /bin/sh -c, or by run-parts when it is the absolute path of a
 * directory, with environment @envp (NULL-terminated; copied).  Never
 * blocks on a command; drops the event (logged) when the queue is full
 * or memory is short.
 */
void pool_hooks_queue(struct pool_hooks *h, int64_t key, const char *name,
		      const char *event, const char *cmd, char *const *envp);
/*
 * Drops what still waits (logged), gives the commands running
 * HOOK_STOP_GRACE_MS to end, kills them after, and frees @h.  NULL is
 * fine.
 */
void pool_hooks_stop(struct pool_hooks *h);

#endif
