#include "store_vfs.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>

#include "log.h"
#include "writelog.h"

#define VFS_NAME	"mapperfs-writelog"

/* Our file: the default VFS's file follows it, szOsFile bytes. */
struct rec_file {
	sqlite3_file base;		/* pMethods = &rec_io */
	uint64_t log_file;		/* write log id; 0 for temporary files */
	sqlite3_file *real;		/* right after this struct */
};

static sqlite3_vfs *root;		/* the default VFS */
static sqlite3_vfs rec_vfs;
static pthread_once_t register_once = PTHREAD_ONCE_INIT;

static sqlite3_file *real_of(sqlite3_file *f)
{
	return ((struct rec_file *)f)->real;
}

static uint64_t log_of(sqlite3_file *f)
{
	return ((struct rec_file *)f)->log_file;
}

static int rec_close(sqlite3_file *f)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods ? r->pMethods->xClose(r) : SQLITE_OK;
}

static int rec_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off)
{
	return real_of(f)->pMethods->xRead(real_of(f), buf, amt, off);
}

static int rec_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off)
{
	uint64_t issued = log_of(f) ? writelog_now() : 0;
	int rc = real_of(f)->pMethods->xWrite(real_of(f), buf, amt, off);

	if (rc == SQLITE_OK && log_of(f))
		writelog_write(log_of(f), issued, (uint64_t)off, buf, (uint64_t)amt);
	return rc;
}

static int rec_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	uint64_t issued = log_of(f) ? writelog_now() : 0;
	int rc = real_of(f)->pMethods->xTruncate(real_of(f), size);

	if (rc == SQLITE_OK && log_of(f))
		writelog_truncate(log_of(f), issued, (uint64_t)size);
	return rc;
}

static int rec_sync(sqlite3_file *f, int flags)
{
	uint64_t issued = log_of(f) ? writelog_now() : 0;
	int rc = real_of(f)->pMethods->xSync(real_of(f), flags);

	if (rc == SQLITE_OK && log_of(f))
		writelog_flush(log_of(f), issued);
	return rc;
}

static int rec_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
	return real_of(f)->pMethods->xFileSize(real_of(f), size);
}

static int rec_lock(sqlite3_file *f, int level)
{
	return real_of(f)->pMethods->xLock(real_of(f), level);
}

static int rec_unlock(sqlite3_file *f, int level)
{
	return real_of(f)->pMethods->xUnlock(real_of(f), level);
}

static int rec_check_reserved_lock(sqlite3_file *f, int *out)
{
	return real_of(f)->pMethods->xCheckReservedLock(real_of(f), out);
}

static int rec_file_control(sqlite3_file *f, int op, void *arg)
{
	return real_of(f)->pMethods->xFileControl(real_of(f), op, arg);
}

static int rec_sector_size(sqlite3_file *f)
{
	return real_of(f)->pMethods->xSectorSize(real_of(f));
}

static int rec_device_characteristics(sqlite3_file *f)
{
	return real_of(f)->pMethods->xDeviceCharacteristics(real_of(f));
}

static int rec_shm_map(sqlite3_file *f, int page, int size, int extend, void volatile **p)
{
	return real_of(f)->pMethods->xShmMap(real_of(f), page, size, extend, p);
}

static int rec_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
	return real_of(f)->pMethods->xShmLock(real_of(f), off, n, flags);
}

static void rec_shm_barrier(sqlite3_file *f)
{
	real_of(f)->pMethods->xShmBarrier(real_of(f));
}

static int rec_shm_unmap(sqlite3_file *f, int delete_flag)
{
	return real_of(f)->pMethods->xShmUnmap(real_of(f), delete_flag);
}

static int rec_fetch(sqlite3_file *f, sqlite3_int64 off, int amt, void **p)
{
	return real_of(f)->pMethods->xFetch(real_of(f), off, amt, p);
}

static int rec_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
	return real_of(f)->pMethods->xUnfetch(real_of(f), off, p);
}

static const sqlite3_io_methods rec_io = {
	.iVersion = 3,
	.xClose = rec_close,
	.xRead = rec_read,
	.xWrite = rec_write,
	.xTruncate = rec_truncate,
	.xSync = rec_sync,
	.xFileSize = rec_file_size,
	.xLock = rec_lock,
	.xUnlock = rec_unlock,
	.xCheckReservedLock = rec_check_reserved_lock,
	.xFileControl = rec_file_control,
	.xSectorSize = rec_sector_size,
	.xDeviceCharacteristics = rec_device_characteristics,
	.xShmMap = rec_shm_map,
	.xShmLock = rec_shm_lock,
	.xShmBarrier = rec_shm_barrier,
	.xShmUnmap = rec_shm_unmap,
	.xFetch = rec_fetch,
	.xUnfetch = rec_unfetch,
};

/* What a power cut can damage: the database, its WAL, its journal. */
static int is_persistent(const char *name, int flags)
{
	return name && (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL |
				 SQLITE_OPEN_MAIN_JOURNAL));
}

static int rec_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file,
		    int flags, int *out_flags)
{
	struct rec_file *f = (struct rec_file *)file;
	int rc;

	(void)vfs;
	f->real = (sqlite3_file *)(f + 1);
	f->log_file = 0;
	rc = root->xOpen(root, name, f->real, flags, out_flags);
	if (rc != SQLITE_OK) {
		/* SQLite closes a file whose pMethods is set, even on failure. */
		file->pMethods = f->real->pMethods ? &rec_io : NULL;
		return rc;
	}
	if (f->real->pMethods->iVersion < 3) {
		f->real->pMethods->xClose(f->real);
		file->pMethods = NULL;
		return SQLITE_CANTOPEN;
	}
	if (is_persistent(name, flags))
		f->log_file = writelog_file(name);
	file->pMethods = &rec_io;
	return SQLITE_OK;
}

static int rec_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	int rc = root->xDelete(root, name, sync_dir);

	(void)vfs;
	if (rc == SQLITE_OK)
		writelog_delete(name);
	return rc;
}

static int rec_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	(void)vfs;
	return root->xAccess(root, name, flags, out);
}

static int rec_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	(void)vfs;
	return root->xFullPathname(root, name, n, out);
}

static void *rec_dl_open(sqlite3_vfs *vfs, const char *name)
{
	(void)vfs;
	return root->xDlOpen(root, name);
}

static void rec_dl_error(sqlite3_vfs *vfs, int n, char *msg)
{
	(void)vfs;
	root->xDlError(root, n, msg);
}

static void (*rec_dl_sym(sqlite3_vfs *vfs, void *h, const char *sym))(void)
{
	(void)vfs;
	return root->xDlSym(root, h, sym);
}

static void rec_dl_close(sqlite3_vfs *vfs, void *h)
{
	(void)vfs;
	root->xDlClose(root, h);
}

static int rec_randomness(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return root->xRandomness(root, n, out);
}

static int rec_sleep(sqlite3_vfs *vfs, int us)
{
	(void)vfs;
	return root->xSleep(root, us);
}

static int rec_current_time(sqlite3_vfs *vfs, double *out)
{
	(void)vfs;
	return root->xCurrentTime(root, out);
}

static int rec_get_last_error(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return root->xGetLastError(root, n, out);
}

static int rec_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
	(void)vfs;
	return root->xCurrentTimeInt64(root, out);
}

static void register_vfs(void)
{
	root = sqlite3_vfs_find(NULL);
	if (!root || root->iVersion < 2) {
		log_error("write log: SQLite's default VFS is missing or too old to wrap");
		abort();	/* as writelog.h: never record with a hole */
	}
	rec_vfs = (sqlite3_vfs){
		.iVersion = 2,
		.szOsFile = (int)sizeof(struct rec_file) + root->szOsFile,
		.mxPathname = root->mxPathname,
		.zName = VFS_NAME,
		.xOpen = rec_open,
		.xDelete = rec_delete,
		.xAccess = rec_access,
		.xFullPathname = rec_full_pathname,
		.xDlOpen = rec_dl_open,
		.xDlError = rec_dl_error,
		.xDlSym = rec_dl_sym,
		.xDlClose = rec_dl_close,
		.xRandomness = rec_randomness,
		.xSleep = rec_sleep,
		.xCurrentTime = rec_current_time,
		.xGetLastError = rec_get_last_error,
		.xCurrentTimeInt64 = rec_current_time_int64,
	};
	if (sqlite3_vfs_register(&rec_vfs, 0) != SQLITE_OK) {
		log_error("write log: cannot register the recording SQLite VFS");
		abort();
	}
}

const char *store_vfs_name(void)
{
	if (!writelog_from_env())
		return NULL;
	pthread_once(&register_once, register_vfs);
	return VFS_NAME;
}
