/*
 * fs/control.h: the control channel: a Unix socket in the pool directory
 * (mode 0600) on which mapperctl sends a command line while the daemon
 * runs.  The daemon runs it with the very commands mapperctl runs offline
 * (tools/cmd.h), on the pool service it hosts, and sends back what they
 * printed: the socket carries requests and replies, nothing else.
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
