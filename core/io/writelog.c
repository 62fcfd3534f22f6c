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

static int open_in(const char *dir, const char *name, uint64_t *size)
{
	char path[PATH_MAX];
	struct stat st;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	*size = (uint64_t)st.st_size;
	return fd;
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
	int r;

	if (active())
		return -EBUSY;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	wl->log_fd = open_in(dir, "log", &log_size);
	if (wl->log_fd < 0)
		return wl->log_fd;
	wl->data_fd = open_in(dir, "data", &data_size);
	if (wl->data_fd < 0) {
		r = wl->data_fd;
		goto err_close_log;
	}
	atomic_init(&wl->next, log_size / sizeof(struct writelog_rec));
	atomic_init(&wl->data_end, data_size);
	wl->breaks = breaks;
	r = check_or_write_header(wl, log_size);
	if (r)
		goto err_close_data;
	atomic_store_explicit(&writelog_active, wl, memory_order_release);
	return 0;

err_close_data:
	close(wl->data_fd);
err_close_log:
	close(wl->log_fd);
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
	if (r) {
		log_error("MAPPERFS_WRITELOG: cannot record into '%s': %s", dir, strerror(-r));
		abort();
	}
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
