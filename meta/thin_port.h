/*
 * meta/thin_port.h: the thin pool's metadata port (core/thin/thin_meta.h) on
 * SQLite.
 *
 * Each port has its own connection to the pool database, so a pool's
 * commits (from its worker, or a FUSE thread answering fsync) never share
 * a connection with the daemon's control thread: SQLite's own locking
 * (WAL, one writer, busy timeout) orders the two.  The control thread
 * never calls into a pool while it holds a transaction open, so neither
 * waits for the other.  A volume's row is the service's: a commit only
 * points an existing row at its new directory.
 */
#ifndef MAPPERFS_THIN_PORT_H
#define MAPPERFS_THIN_PORT_H

#include <stdint.h>

#include "thin_meta.h"

struct thin_port;

/* Opens @db_path for pool @pool.  0 or -errno (as store_open). */
int thin_port_open(const char *db_path, int64_t pool, struct thin_port **out);
void thin_port_close(struct thin_port *tp);

/* The ops; their arg is the struct thin_port. */
extern const struct thin_meta_ops thin_port_ops;

#endif
