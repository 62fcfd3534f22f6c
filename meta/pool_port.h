/*
 * meta/pool_port.h: the store the pool service uses (core/pool/pool_meta.h),
 * made of meta's SQLite calls.  The hosts pass pool_port_open to
 * pool_create() and pool_open(); nothing else names it.
 */
#ifndef MAPPERFS_POOL_PORT_H
#define MAPPERFS_POOL_PORT_H

#include "pool_meta.h"

/* A pool_meta_open_fn: opens (or creates) the pool database @db_path. */
int pool_port_open(const char *db_path, bool create, struct pool_meta **out);

#endif
