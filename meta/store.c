/*
 * meta/store.c: opening a pool database: creating it, checking what it
 * is, configuring the connection, migrating it.  The statements and
 * transactions that every other file of the store uses are store_sql.c's.
 *
 * Opening is careful about what it writes.  Without STORE_CREATE the file
 * is opened read-write but never created, and its user_version is read
 * before anything else: a file that is not SQLite fails there (NOTADB), a
 * SQLite file of someone else's has version 0 or no pool row, and only
 * then do we switch it to WAL and migrate.  With STORE_CREATE the file is
 * made by open(O_CREAT | O_EXCL, 0600) first, so the umask cannot widen
 * it and an existing pool is never touched (SQLite gives its -wal and
 * -shm files the mode of the database).  A failed create removes the file.
 *
 * In a process that records its writes for power-cut testing, the file is
 * opened through the recording VFS (store_vfs.h); otherwise as SQLite's
 * default.
 *
 * The pool directory may be another user's, who can put a FIFO or a hard
 * link where the database, its WAL or its -shm file should be: a root
 * daemon would block reading the FIFO for good, holding the pool's lock.
 * SQLite's unix VFS opens every file through one system call that it lets
 * us replace (xSetSystemCall, as its own fault tests do), so the database
 * files are opened as core/util/regfile.h says, with no window between the
 * check and the open.  Directories pass (SQLite opens them to fsync), and
 * /dev/null (SQLite's filler for descriptors 0 to 2).
 *
 * Corruption shows up as SQLITE_CORRUPT on the queries that meet it, as
 * -EUCLEAN; PRAGMA quick_check (store_quick_check) finds the rest, such
 * as a damaged index page no row read meets: opening a pool runs it once,
 * O(file size), and check again.
 */
#include "store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "log.h"
#include "migrate.h"
#include "regfile.h"
#include "store_vfs.h"

#define STORE_BUSY_TIMEOUT_MS	5000

/* Creates @path, mode 0600 whatever the umask; -EEXIST if it exists. */
static int store_create_file(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0600)) {
		int r = -errno;

		close(fd);
		unlink(path);
		return r;
	}
	close(fd);
	return 0;
}

static void store_remove_files(const char *path)
{
	char side[PATH_MAX + 8];

	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
}

/* 0 if the schema has a pool table, -EUCLEAN if not. */
static int store_has_pool_table(struct store *s)
{
	sqlite3_stmt *st;
	int rc, r;

	r = store_stmt(s, "SELECT 1 FROM sqlite_master"
			  " WHERE type = 'table' AND name = 'pool'", &st);
	if (r)
		return r;
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		r = -EUCLEAN;
	else
		r = rc == SQLITE_ROW ? 0 : store_error(s, rc);
	store_stmt_done(st);
	return r;
}

/*
 * Checks that the file is a pool this build can read, before writing to
 * it: a new file only with STORE_CREATE, a pool table from version 1 on.
 */
static int store_check_version(struct store *s, enum store_open_flags flags)
{
	int version;
	int r;

	r = store_user_version(s, &version);
	if (r)
		return r;
	if (version > migrate_latest())
		return -EPROTONOSUPPORT;
	if (version < 0)	/* user_version is any 32-bit number; ours are not negative */
		return -EUCLEAN;
	if (version == 0)
		return flags & STORE_CREATE ? 0 : -EUCLEAN;
	return store_has_pool_table(s);
}

static int store_set_journal_wal(struct store *s)
{
	sqlite3_stmt *st;
	int rc, r;

	r = store_stmt(s, "PRAGMA journal_mode = WAL", &st);
	if (r)
		return r;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW &&
	    strcmp((const char *)sqlite3_column_text(st, 0), "wal"))
		log_warn("pool database: cannot switch to WAL, journal mode is %s",
			 sqlite3_column_text(st, 0));
	r = rc == SQLITE_ROW ? 0 : store_error(s, rc);
	store_stmt_done(st);
	return r;
}

static int store_configure(struct store *s, enum store_open_flags flags)
{
	struct uuid uuid;
	int r;

	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS);
	r = store_check_version(s, flags);
	if (r)
		return r;
	if (flags & STORE_READ_ONLY) {
		int version;

		r = store_user_version(s, &version);
		if (!r && version != migrate_latest())
			r = -EROFS;	/* too old, and it cannot be migrated */
		return r ? r : store_pool_uuid(s, &uuid);
	}
	r = store_exec(s, "PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL; "
			  "PRAGMA secure_delete = FAST");
	if (r)
		return r;
	r = store_set_journal_wal(s);
	if (r)
		return r;
	r = migrate_run(s);
	if (r)
		return r;
	r = store_pool_uuid(s, &uuid);
	return r == -ENOENT ? -EUCLEAN : r;
}

/* SQLite's open(2): no link, no FIFO, no hard link (see the top). */
static int store_sys_open(const char *path, int flags, int mode)
{
	int fd, r;

	if (!strcmp(path, "/dev/null"))
		return open(path, flags, mode);
	fd = open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
	if (fd < 0) {
		if (errno == ENXIO)	/* a FIFO with no writer, a socket */
			errno = EINVAL;
		return -1;
	}
	r = regfile_check(fd);
	if (r == -EINVAL) {
		struct stat st;

		if (!fstat(fd, &st) && S_ISDIR(st.st_mode))
			r = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) ? -errno : 0;
	}
	if (r) {
		close(fd);
		errno = -r;
		return -1;
	}
	return fd;
}

static int store_sys_open_result = SQLITE_ERROR;

static void store_sys_open_install(void)
{
	sqlite3_vfs *vfs = sqlite3_vfs_find(NULL);

	if (vfs && vfs->iVersion >= 3 && vfs->xSetSystemCall)
		store_sys_open_result = vfs->xSetSystemCall(vfs, "open",
							    (sqlite3_syscall_ptr)store_sys_open);
}

/* Once per process, before SQLite opens anything.  0 or -ENOSYS. */
static int store_guard_opens(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, store_sys_open_install);
	if (store_sys_open_result == SQLITE_OK)
		return 0;
	log_error("pool database: SQLite's default VFS does not let its open(2) be checked");
	return -ENOSYS;
}

/*
 * On a file system mounted read-only, the database is opened as immutable
 * (no locks, no WAL index to create): nobody can write it there.
 */
static int store_open_db(struct store *s, const char *path, enum store_open_flags flags)
{
	char *uri;
	int rc;

	if (!(flags & STORE_READ_ONLY))
		return sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
				       SQLITE_OPEN_NOFOLLOW, store_vfs_name());
	uri = sqlite3_mprintf("file:%s?immutable=1", path);
	if (!uri)
		return SQLITE_NOMEM;
	rc = sqlite3_open_v2(uri, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX |
			     SQLITE_OPEN_URI | SQLITE_OPEN_NOFOLLOW, store_vfs_name());
	sqlite3_free(uri);
	return rc;
}

int store_open(const char *path, enum store_open_flags flags, struct store **out)
{
	struct statvfs fs;
	struct store *s;
	struct stat sb;
	int rc, r;

	r = store_guard_opens();
	if (r)
		return r;
	if (flags & STORE_CREATE)
		r = store_create_file(path);
	else
		r = stat(path, &sb) ? -errno : 0;
	if (r)
		return r;
	if (!(flags & STORE_CREATE) && !statvfs(path, &fs) && (fs.f_flag & ST_RDONLY))
		flags |= STORE_READ_ONLY;
	s = calloc(1, sizeof(*s));
	if (!s) {
		r = -ENOMEM;
		goto err_remove;
	}
	rc = store_open_db(s, path, flags);
	if (rc != SQLITE_OK) {
		r = s->db && sqlite3_system_errno(s->db) ?
			-sqlite3_system_errno(s->db) : store_error(s, rc);
		goto err_close;
	}
	r = store_configure(s, flags);
	if (r)
		goto err_close;
	*out = s;
	return 0;

err_close:
	store_close(s);
err_remove:
	if (flags & STORE_CREATE)
		store_remove_files(path);
	return r;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	for (unsigned int i = 0; i < STORE_STMT_CACHE; i++)
		sqlite3_finalize(s->cache[i].st);
	sqlite3_close(s->db);
	free(s);
}
