/*
 * fs/stop.h: when the daemon stops, and how it learns that it should.
 *
 * A FUSE daemon that stops while a file on its mount is open leaves the
 * opener's next request unanswered for good: the kernel waits for a reply
 * that never comes, the application sits in D state, and a loop device on
 * the file takes its file system with it.  So mapperfs stops in only two
 * ways, and neither can leave a request unanswered:
 *
 *  - The mount goes away (`fusermount3 -u`, or the last file closed on a
 *    mount we detached): the kernel ends the connection, every waiting
 *    reader of /dev/fuse gets ENODEV, and no request can come any more.
 *  - SIGTERM or SIGINT: the daemon takes no more admin commands, commits
 *    its thin pools, detaches the mount from the directory (no new opens;
 *    what is open stays served) and serves on until no volume file is
 *    open; then it ends the session itself (a process that only has its
 *    working directory in the detached mount gets ENOTCONN, not a hang).
 *    Asked again, it serves on all the same: the log says what is still
 *    open and how to stop at once, failing their I/O (kill -9): init
 *    systems send SIGTERM without knowing what is open, so no number of
 *    them may fail a request.
 *
 * SIGHUP reopens the log file (logrotate) and changes nothing else.
 *
 * The state is process-wide, as signals are: one daemon per process.
 */
#ifndef MAPPERFS_STOP_H
#define MAPPERFS_STOP_H

#include <stdbool.h>

/*
 * Starts the thread that takes SIGTERM, SIGINT and SIGHUP.  Every thread
 * must have them blocked (stop_block_signals, before any thread starts).
 * 0 or -errno.
 */
int stop_watch_signals(void);
void stop_block_signals(void);
/* Ends that thread.  Call once, after stop_watch_signals() succeeded. */
void stop_unwatch_signals(void);

/* The FUSE handlers count open volume files (open and release). */
void stop_file_opened(void);
void stop_file_closed(void);

/* A worker saw the kernel end the session (the mount is gone). */
void stop_session_over(void);

/*
 * Blocks until a signal asks the daemon to stop (returns SIGTERM or
 * SIGINT) or the session is over (returns 0).
 */
int stop_wait_request(void);
enum stop_drain {
	STOP_NOTHING_OPEN,		/* the session is still up */
	STOP_SESSION_OVER,
	STOP_ASKED_AGAIN,		/* another SIGTERM or SIGINT: *sig */
};
/*
 * Blocks until no volume file is open, the session is over, or a signal
 * asks again (after stop_wait_request() returned one); says which.  Each
 * signal is told of once: a caller told STOP_ASKED_AGAIN may wait again.
 */
enum stop_drain stop_wait_closed(int *sig);

#endif
