/*
 * fs/control.h: the control channel: a Unix socket in the pool directory
 * (mode 0600) on which mapperctl sends a command line while the daemon
 * runs.  One thread accepts and runs requests one at a time with the very
 * command functions mapperctl runs offline (tools/cmd.h), plus live hooks
 * that make the served volumes follow each committed change.  That thread
 * owns the store: the daemon is the pool's only writer.
 */
#ifndef MAPPERFS_CONTROL_H
#define MAPPERFS_CONTROL_H

struct daemon;
struct control;

/* Binds POOL_DIR/control.sock and starts the thread.  0 or -errno. */
int control_start(struct daemon *d, struct control **out);
/* Stops accepting, waits for the request in progress, removes the socket. */
void control_stop(struct control *c);

#endif
