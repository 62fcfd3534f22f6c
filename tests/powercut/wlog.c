#include "wlog.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int open_in(const char *dir, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return open(path, O_RDONLY | O_CLOEXEC);
}

int wlog_open(const char *dir, struct wlog *w)
{
	struct stat st;
	void *p;
	int fd, r;

	fd = open_in(dir, "log");
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(struct writelog_rec) ||
	    st.st_size % sizeof(struct writelog_rec)) {
		close(fd);
		return -EBADMSG;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	r = p == MAP_FAILED ? -errno : 0;
	close(fd);
	if (r)
		return r;
	w->rec = p;
	w->map_len = (size_t)st.st_size;
	w->nr = w->map_len / sizeof(struct writelog_rec);
	if (w->rec[0].type != WRITELOG_HEADER || w->rec[0].off != WRITELOG_MAGIC) {
		munmap(p, w->map_len);
		return -EBADMSG;
	}
	w->data_fd = open_in(dir, "data");
	if (w->data_fd < 0) {
		r = -errno;
		munmap(p, w->map_len);
		return r;
	}
	return 0;
}

void wlog_close(struct wlog *w)
{
	munmap((void *)w->rec, w->map_len);
	close(w->data_fd);
}

int wlog_payload(const struct wlog *w, const struct writelog_rec *r, void *buf)
{
	uint64_t done = 0;

	while (done < r->len) {
		ssize_t n = pread(w->data_fd, (char *)buf + done, r->len - done,
				  (off_t)(r->data + done));

		if (n <= 0)
			return -EIO;
		done += (uint64_t)n;
	}
	return 0;
}

char *wlog_name(const struct wlog *w, const struct writelog_rec *r)
{
	char *name = malloc(r->len + 1);

	if (!name || wlog_payload(w, r, name)) {
		free(name);
		return NULL;
	}
	name[r->len] = 0;
	return name;
}

char *wlog_file_name(const struct wlog *w, uint64_t file)
{
	if (file >= w->nr || w->rec[file].type != WRITELOG_FILE)
		return NULL;
	return wlog_name(w, &w->rec[file]);
}

uint64_t wlog_hash(const void *buf, uint64_t len)
{
	const unsigned char *p = buf;
	uint64_t h = 0xcbf29ce484222325ull;

	for (uint64_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}
