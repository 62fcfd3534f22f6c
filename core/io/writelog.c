#include "writelog.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "regfile.h"

struct writelog {
	int log_fd;			/* DIR/log: records at seq * 64 */
	int data_fd;			/* DIR/data: payloads */
	_Atomic uint64_t next;		/* the next record's position */
	_Atomic uint64_t data_end;	/* bytes in DIR/data */
	unsigned int breaks;		/* enum writelog_break */
};

struct writelog *_Atomic writelog_active;
static struct writelog the_log;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

_Static_assert(sizeof(struct writelog_rec) == 64, "records are 64 bytes");

static void die(const char *what)
{
	log_error("write log: cannot %s: %s; stopping, a power-cut test needs every write",
		  what, strerror(errno));
	abort();
}

static void put(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("append to the log");
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
}

static uint64_t fnv1a(const void *buf, uint64_t len)
{
	const unsigned char *p = buf;
	uint64_t h = 0xcbf29ce484222325ull;

	for (uint64_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static struct writelog *active(void)
{
	return atomic_load_explicit(&writelog_active, memory_order_acquire);
}

/* Gives @rec the next position and stores it, with @payload if any. */
static void append(struct writelog *wl, struct writelog_rec *rec, const void *payload)
{
	if (payload && rec->len) {
		rec->data = atomic_fetch_add(&wl->data_end, rec->len);
		put(wl->data_fd, payload, rec->len, rec->data);
		rec->hash = fnv1a(payload, rec->len);
	}
	rec->seq = atomic_fetch_add(&wl->next, 1);
	put(wl->log_fd, rec, sizeof(*rec), rec->seq * sizeof(*rec));
}

/*
 * The directory to record into, made 0700 if absent.  Any process may
 * record, root too, into a directory named by its environment: so it is
 * opened through no link, and refused (-EPERM) unless it is this user's
 * or root's and nobody else can write it, so that what is in it was put
 * there by one of them.  Its files are then opened relative to it.
 */
static int open_dir(const char *dir, int *fd)
{
	struct stat st;
	int d, r;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	d = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d < 0)
		return -errno;
	r = fstat(d, &st) ? -errno : 0;
	if (!r && ((st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & (S_IWGRP | S_IWOTH))))
		r = -EPERM;
	if (r) {
		close(d);
		return r;
	}
	*fd = d;
	return 0;
}

/* DIR/@name, a regular file of its own (regfile.h): *fd, its size in *size. */
static int open_in(int dir_fd, const char *name, int *fd, uint64_t *size)
{
	struct stat st;
	int r;

	r = regfile_openat(dir_fd, name, O_RDWR | O_CREAT, 0600, fd);
	if (r)
		return r;
	if (fstat(*fd, &st) < 0) {
		r = -errno;
		close(*fd);
		return r;
	}
	*size = (uint64_t)st.st_size;
	return 0;
}

/* A new log gets its header; an old one must carry it, whole records only. */
static int check_or_write_header(struct writelog *wl, uint64_t size)
{
	struct writelog_rec rec = { .type = WRITELOG_HEADER, .off = WRITELOG_MAGIC };

	if (size % sizeof(rec))
		return -EBADMSG;
	if (!size) {
		append(wl, &rec, NULL);
		return 0;
	}
	if (pread(wl->log_fd, &rec, sizeof(rec), 0) != (ssize_t)sizeof(rec))
		return -EIO;
	return rec.type == WRITELOG_HEADER && rec.off == WRITELOG_MAGIC ? 0 : -EBADMSG;
}

int writelog_start(const char *dir, unsigned int breaks)
{
	struct writelog *wl = &the_log;
	uint64_t log_size, data_size;
	int dir_fd = -1, r;

	if (active())
		return -EBUSY;
	r = open_dir(dir, &dir_fd);
	if (r)
		return r;
	r = open_in(dir_fd, "log", &wl->log_fd, &log_size);
	if (r)
		goto err_close_dir;
	r = open_in(dir_fd, "data", &wl->data_fd, &data_size);
	if (r)
		goto err_close_log;
	atomic_init(&wl->next, log_size / sizeof(struct writelog_rec));
	atomic_init(&wl->data_end, data_size);
	wl->breaks = breaks;
	r = check_or_write_header(wl, log_size);
	if (r)
		goto err_close_data;
	close(dir_fd);
	atomic_store_explicit(&writelog_active, wl, memory_order_release);
	return 0;

err_close_data:
	close(wl->data_fd);
err_close_log:
	close(wl->log_fd);
err_close_dir:
	close(dir_fd);
	return r;
}

void writelog_stop(void)
{
	struct writelog *wl = active();

	if (!wl)
		return;
	atomic_store(&writelog_active, NULL);
	close(wl->data_fd);
	close(wl->log_fd);
}

static int parse_breaks(const char *list, unsigned int *out)
{
	static const struct { const char *name; enum writelog_break bit; } names[] = {
		{ "commit-before-flush", WRITELOG_BREAK_COMMIT_BEFORE_FLUSH },
		{ "reuse-before-commit", WRITELOG_BREAK_REUSE_BEFORE_COMMIT },
	};

	*out = 0;
	while (list && *list) {
		size_t len = strcspn(list, ","), i;

		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strlen(names[i].name) == len && !strncmp(list, names[i].name, len))
				break;
		if (i == sizeof(names) / sizeof(names[0])) {
			log_error("MAPPERFS_WRITELOG_BREAK: unknown '%.*s' (commit-before-flush, reuse-before-commit)",
				  (int)len, list);
			return -EINVAL;
		}
		*out |= names[i].bit;
		list += len + (list[len] == ',');
	}
	return 0;
}

static void start_from_env(void)
{
	const char *dir = getenv("MAPPERFS_WRITELOG");
	unsigned int breaks;
	int r;

	if (!dir || !*dir)
		return;
	if (parse_breaks(getenv("MAPPERFS_WRITELOG_BREAK"), &breaks))
		abort();
	r = writelog_start(dir, breaks);
	if (r == -EPERM)
		log_error("MAPPERFS_WRITELOG: '%s' is not a directory of this user's or root's that only its owner can write: not recording there",
			  dir);
	else if (r == -ELOOP || r == -EINVAL || r == -EMLINK)
		log_error("MAPPERFS_WRITELOG: cannot record into '%s': it or a file in it is %s", dir,
			  regfile_strerror(r));
	else if (r)
		log_error("MAPPERFS_WRITELOG: cannot record into '%s': %s", dir, strerror(-r));
	if (r)
		abort();
	log_warn("recording every write into '%s' (power-cut testing)%s", dir,
		 breaks ? ", with a deliberately broken commit order" : "");
}

bool writelog_from_env(void)
{
	pthread_once(&env_once, start_from_env);
	return active() != NULL;
}

uint64_t writelog_file(const char *path)
{
	struct writelog_rec rec = { .type = WRITELOG_FILE, .len = strlen(path) };
	struct writelog *wl;

	if (!writelog_from_env())
		return 0;
	wl = active();
	append(wl, &rec, path);
	return rec.seq;
}

uint64_t writelog_now(void)
{
	struct writelog *wl = active();

	return wl ? atomic_load(&wl->next) : 0;
}

static void record(struct writelog_rec *rec, const void *payload)
{
	struct writelog *wl = active();

	if (wl)
		append(wl, rec, payload);
}

void writelog_write(uint64_t file, uint64_t issued, uint64_t off,
		    const void *buf, uint64_t len)
{
	struct writelog_rec rec = { .type = WRITELOG_WRITE, .file = file, .issued = issued,
				    .off = off, .len = len };

	record(&rec, buf);
}

void writelog_zero(uint64_t file, uint64_t issued, uint64_t off, uint64_t len)
{
	struct writelog_rec rec = { .type = WRITELOG_ZERO, .file = file, .issued = issued,
				    .off = off, .len = len };

	record(&rec, NULL);
}

void writelog_flush(uint64_t file, uint64_t issued)
{
	struct writelog_rec rec = { .type = WRITELOG_FLUSH, .file = file, .issued = issued };

	record(&rec, NULL);
}

void writelog_truncate(uint64_t file, uint64_t issued, uint64_t size)
{
	struct writelog_rec rec = { .type = WRITELOG_TRUNCATE, .file = file, .issued = issued,
				    .off = size };

	record(&rec, NULL);
}

void writelog_delete(const char *path)
{
	struct writelog_rec rec = { .type = WRITELOG_DELETE, .issued = writelog_now(),
				    .len = strlen(path) };

	record(&rec, path);
}

bool writelog_broken(enum writelog_break b)
{
	struct writelog *wl = active();

	return wl && (wl->breaks & b);
}
