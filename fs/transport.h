/*
 * fs/transport.h: how replies reach /dev/fuse.
 *
 * libfuse 3.14 cannot ask for FOPEN_PARALLEL_DIRECT_WRITES (kernel 6.2+):
 * without it the kernel takes the inode lock exclusively for every direct
 * write, so writers to one volume file are served one at a time.  We
 * install our own writev on the session (fuse_session_custom_io), and an
 * open handler that marks its reply gets the flag added on the way out.
 * Volumes never change size through writes, which is the condition the
 * kernel needs for taking the lock shared.
 */
#ifndef MAPPERFS_TRANSPORT_H
#define MAPPERFS_TRANSPORT_H

#include <fuse_lowlevel.h>

/* Installs the transport on a mounted session.  0 or -errno. */
int transport_install(struct fuse_session *se);

/* The calling thread's next reply is an OPEN reply that allows parallel writes. */
void transport_mark_parallel_open(void);

#endif
