#include "pooldir.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "label.h"

#define DEVICE_SIZE_MAX	(256ull << 20)	/* bytes */

static char dir[] = POOLDIR_SEED_PATH;

static void path_of(char *buf, const char *name)
{
	snprintf(buf, PATH_MAX, "%s/%s", dir, name);
}

void pooldir_clear(void)
{
	static const char *const names[] = {
		"pool.db", "pool.db-wal", "pool.db-shm", "pool.db-journal",
		POOLDIR_DEVICE, "peek.db", "peek.db-wal", "peek.db-shm",
	};
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		path_of(path, names[i]);
		unlink(path);
	}
}

/* The layouts a pool archived (archive/NNNNNNNN.layout) and their folder. */
static void remove_archive(void)
{
	char path[PATH_MAX], file[PATH_MAX + 256];
	struct dirent *d;
	DIR *a;

	path_of(path, "archive");
	a = opendir(path);
	if (!a)
		return;
	while ((d = readdir(a)))
		if (d->d_name[0] != '.') {
			snprintf(file, sizeof(file), "%s/%s", path, d->d_name);
			unlink(file);
		}
	closedir(a);
	rmdir(path);
}

static void pooldir_remove(void)
{
	char path[PATH_MAX];

	pooldir_clear();
	remove_archive();
	path_of(path, "lock");
	unlink(path);
	rmdir(dir);
}

const char *pooldir_init(void)
{
	memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
	FUZZ_CHECK(mkdtemp(dir));
	atexit(pooldir_remove);
	return dir;
}

static void write_file(const char *name, const uint8_t *data, size_t size)
{
	char path[PATH_MAX];
	size_t done = 0;
	int fd;

	path_of(path, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FUZZ_CHECK(fd >= 0);
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);

		FUZZ_CHECK(n > 0);
		done += (size_t)n;
	}
	close(fd);
}

/* Puts @dir wherever @buf names the seed directory. */
static void rename_seed_path(uint8_t *buf, size_t size)
{
	const size_t len = sizeof(POOLDIR_SEED_PATH) - 1;
	uint8_t *p = buf, *end = buf + size;

	while ((size_t)(end - p) >= len &&
	       (p = memmem(p, (size_t)(end - p), POOLDIR_SEED_PATH, len))) {
		memcpy(p, dir, len);
		p += len;
	}
}

void pooldir_write(const uint8_t *data, size_t size, bool rename)
{
	uint8_t *buf = malloc(size ? size : 1);
	const uint8_t *wal;
	size_t db_len;

	FUZZ_CHECK(buf);
	memcpy(buf, data, size);
	if (rename)
		rename_seed_path(buf, size);
	wal = memmem(buf, size, POOLDIR_WAL, strlen(POOLDIR_WAL));
	db_len = wal ? (size_t)(wal - buf) : size;
	pooldir_clear();
	write_file("pool.db", buf, db_len);
	if (wal) {
		wal += strlen(POOLDIR_WAL);
		write_file("pool.db-wal", wal, size - (size_t)(wal - buf));
	}
	free(buf);
}

/* The pool's and the device's uuids and its size, if the database has them. */
static bool peek(const char *device_path, struct device_label *l)
{
	char db[PATH_MAX], shm[PATH_MAX];
	sqlite3_stmt *st = NULL;
	sqlite3 *s = NULL;
	bool found = false;

	path_of(db, "pool.db");
	path_of(shm, "pool.db-shm");
	if (sqlite3_open_v2(db, &s, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		goto out;
	if (sqlite3_prepare_v2(s, "SELECT pool.uuid, device.uuid, device.size"
			       " FROM pool, device WHERE device.path = ?",
			       -1, &st, NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_text(st, 1, device_path, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		const char *pool = (const char *)sqlite3_column_text(st, 0);
		const char *device = (const char *)sqlite3_column_text(st, 1);

		l->size = (uint64_t)sqlite3_column_int64(st, 2);
		found = pool && device && !uuid_parse(pool, &l->pool) &&
			!uuid_parse(device, &l->device);
	}
out:
	sqlite3_finalize(st);
	sqlite3_close(s);
	unlink(shm);
	return found;
}

void pooldir_make_device(void)
{
	char path[PATH_MAX], buf[LABEL_SIZE];
	struct device_label l;
	int fd;

	path_of(path, POOLDIR_DEVICE);
	if (!peek(path, &l) || l.size < LABEL_SIZE || l.size > DEVICE_SIZE_MAX)
		return;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(ftruncate(fd, (off_t)l.size) == 0);
	label_encode(&l, buf);
	FUZZ_CHECK(pwrite(fd, buf, sizeof(buf), 0) == (ssize_t)sizeof(buf));
	close(fd);
}
