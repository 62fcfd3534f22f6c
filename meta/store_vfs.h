/*
 * meta/store_vfs.h: the SQLite VFS that records the pool database's
 * writes and syncs in the write log (core/io/writelog.h), for power-cut
 * testing.
 *
 * It wraps the default VFS, as SQLite's own crash tests do (src/test6.c):
 * every call goes to the default VFS unchanged; writes, truncations and
 * syncs of the database, its WAL and its journal are recorded once they
 * have succeeded, deletions of those files too.  The shared-memory index
 * (-shm) is not recorded: SQLite rebuilds it after a crash.  Only a
 * process that records uses it; any other opens the database exactly as
 * before.
 */
#ifndef MAPPERFS_STORE_VFS_H
#define MAPPERFS_STORE_VFS_H

/*
 * The VFS to open the pool database with: the recording one, registered
 * on first use, when the process records (writelog_from_env); otherwise
 * NULL, SQLite's default.  Thread-safe.
 */
const char *store_vfs_name(void);

#endif
