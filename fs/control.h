/*
 * fs/control.h: the control channel: a Unix socket in the pool directory
 * (mode 0600) on which mapperctl sends a command line while the daemon
 * runs.  The daemon runs it with the very commands mapperctl runs offline
 * (tools/cmd.h), on the pool service it hosts, and sends back what they
 * printed: the socket carries requests and replies, nothing else.
 *
 * A connection that says nothing costs no thread and is closed after 5 s
 * (the oldest first when 256 wait); requests are served by 16 threads;
 * only root and the pool directory's owner are served (SO_PEERCRED),
 * anyone else gets a one-line refusal.  Commands run at once; the pool
 * service orders the changes (control.c).
 */
#ifndef MAPPERFS_CONTROL_H
#define MAPPERFS_CONTROL_H

struct daemon;
struct control;

/* Binds POOL_DIR/control.sock and starts the thread.  0 or -errno. */
int control_start(struct daemon *d, struct control **out);
/*
 * From now on runs only commands that change nothing (list, status,
 * device list, check, dump, diff: cmd.h's reads_only), whose status says
 * the daemon is stopping and which volumes it still serves; the others
 * are refused in one line that says so.  Returns once the changes in
 * progress have ended.  For a daemon that stops but serves on.
 */
void control_drain(struct control *c);
/*
 * Removes the socket, cuts off clients that sent nothing yet, serves the
 * requests that began and waits for the commands in progress.
 */
void control_stop(struct control *c);

#endif
