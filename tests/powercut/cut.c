#include "cut.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/falloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TORN_SECTOR	512u

static int push_pos(struct cut_file *f, uint64_t pos)
{
	if (f->nr == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 64;
		uint64_t *n = realloc(f->pos, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		f->pos = n;
		f->cap = cap;
	}
	f->pos[f->nr++] = pos;
	return 0;
}

/* The index of @path's file, added if new; -1 if it is not ours to replay. */
static long file_index(struct cut_files *out, const char *root, const char *path)
{
	size_t root_len = strlen(root), len = strlen(path);
	struct cut_file *v;

	if (strncmp(path, root, root_len) || path[root_len] != '/')
		return -1;
	if (len > 4 && !strcmp(path + len - 4, "-shm"))
		return -1;
	path += root_len + 1;
	for (size_t i = 0; i < out->nr; i++)
		if (!strcmp(out->v[i].rel, path))
			return (long)i;
	v = realloc(out->v, (out->nr + 1) * sizeof(*v));
	if (!v)
		return -2;
	out->v = v;
	memset(&v[out->nr], 0, sizeof(*v));
	v[out->nr].rel = strdup(path);
	if (!v[out->nr].rel)
		return -2;
	return (long)out->nr++;
}

/* FILE and DELETE records: the file they name, or -1, or -2 (no memory). */
static long named_file(struct cut_files *out, const char *root,
		       const struct writelog_rec *r)
{
	char *name = wlog_name(out->log, r);
	long i;

	if (!name)
		return -2;
	i = file_index(out, root, name);
	free(name);
	return i;
}

int cut_files_load(const struct wlog *w, const char *root, struct cut_files *out)
{
	long *file_of = calloc(w->nr, sizeof(*file_of));
	int r = 0;

	memset(out, 0, sizeof(*out));
	out->log = w;
	if (!file_of)
		return -ENOMEM;
	for (uint64_t p = 1; p < w->nr && !r; p++) {
		const struct writelog_rec *rec = &w->rec[p];
		long i;

		switch (rec->type) {
		case WRITELOG_NONE:
			fprintf(stderr, "powercut-replay: the log has a hole at %llu: a recorder died mid-record\n",
				(unsigned long long)p);
			r = -EBADMSG;
			continue;
		case WRITELOG_FILE:
		case WRITELOG_DELETE:
			i = named_file(out, root, rec);
			if (rec->type == WRITELOG_FILE)
				file_of[p] = i;
			break;
		default:
			i = rec->file < w->nr ? file_of[rec->file] : -1;
			if (i == -1 && rec->type != WRITELOG_FLUSH) {
				char *name = wlog_file_name(w, rec->file);

				fprintf(stderr, "powercut-replay: record %llu changes '%s', which is outside '%s'\n",
					(unsigned long long)p, name ? name : "?", root);
				free(name);
				r = -EBADMSG;
			}
			break;
		}
		if (i == -2)
			r = -ENOMEM;
		else if (i >= 0 && !r)
			r = push_pos(&out->v[i], p);
	}
	free(file_of);
	if (r)
		cut_files_release(out);
	return r;
}

void cut_files_release(struct cut_files *f)
{
	for (size_t i = 0; i < f->nr; i++) {
		free(f->v[i].rel);
		free(f->v[i].pos);
	}
	free(f->v);
	memset(f, 0, sizeof(*f));
}

static uint64_t splitmix(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int put(int fd, const void *buf, uint64_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, buf, len, (off_t)off);

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf = (const char *)buf + n;
		len -= (uint64_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Copies @from to @to keeping holes (a sparse 1 GiB device is cheap). */
static int copy_sparse(int from, int to)
{
	struct stat st;
	off_t data = 0, hole;

	if (fstat(from, &st) < 0 || ftruncate(to, st.st_size) < 0)
		return -errno;
	while ((data = lseek(from, data, SEEK_DATA)) >= 0) {
		hole = lseek(from, data, SEEK_HOLE);
		if (hole < 0)
			return -errno;
		for (off_t in = data, out = data; in < hole;) {
			ssize_t n = copy_file_range(from, &in, to, &out, (size_t)(hole - in), 0);

			if (n <= 0)
				return n < 0 ? -errno : -EIO;
		}
		data = hole;
	}
	return errno == ENXIO ? 0 : -errno;
}

static void *zeros_of(uint64_t len)
{
	static void *z;
	static uint64_t z_len;

	if (len > z_len) {
		free(z);
		z = calloc(1, len);
		z_len = z ? len : 0;
	}
	return z;
}

/*
 * Applies record @r to @fd; torn: each 512-byte sector of the file that
 * it covers lands or not, at random.
 */
static int apply(const struct wlog *w, int fd, const struct writelog_rec *r, bool torn,
		 uint64_t *rng, void **buf, uint64_t *buf_len)
{
	const char *src;
	uint64_t at, end;

	if (r->type == WRITELOG_TRUNCATE)
		return ftruncate(fd, (off_t)r->off) < 0 ? -errno : 0;
	if (r->type == WRITELOG_ZERO && !torn)
		return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				 (off_t)r->off, (off_t)r->len) < 0 ? -errno : 0;
	if (r->type == WRITELOG_ZERO) {
		src = zeros_of(r->len);
		if (!src)
			return -ENOMEM;
	} else {
		if (r->len > *buf_len) {
			free(*buf);
			*buf = malloc(r->len);
			*buf_len = *buf ? r->len : 0;
			if (!*buf)
				return -ENOMEM;
		}
		if (wlog_payload(w, r, *buf))
			return -EIO;
		src = *buf;
	}
	if (!torn)
		return put(fd, src, r->len, r->off);
	for (at = r->off; at < r->off + r->len; at = end) {
		end = (at / TORN_SECTOR + 1) * TORN_SECTOR;
		if (end > r->off + r->len)
			end = r->off + r->len;
		if (splitmix(rng) & 1) {
			int e = put(fd, src + (at - r->off), end - at, at);

			if (e)
				return e;
		}
	}
	return 0;
}

static bool changes_data(const struct writelog_rec *r)
{
	return r->type == WRITELOG_WRITE || r->type == WRITELOG_ZERO ||
	       r->type == WRITELOG_TRUNCATE;
}

/* One file: what the cut leaves of it.  Its base copy, if any, is at @base. */
struct file_cut {
	bool exists;			/* created, or in the base, and not unlinked */
	bool from_base;			/* starts as the base copy */
	size_t first;			/* first record after the last unlink */
	size_t end;			/* records from here on are past a later unlink */
	uint64_t flushed;		/* records before this position are durable */
};

static void plan(const struct wlog *w, const struct cut_file *cf, uint64_t pos,
		 bool in_base, struct file_cut *fc)
{
	size_t i;

	memset(fc, 0, sizeof(*fc));
	fc->end = cf->nr;
	for (i = 0; i < cf->nr && cf->pos[i] < pos; i++)
		if (w->rec[cf->pos[i]].type == WRITELOG_DELETE)
			fc->first = i + 1;
	for (; i < cf->nr; i++) {
		if (w->rec[cf->pos[i]].type == WRITELOG_DELETE) {
			fc->end = i;
			break;
		}
	}
	fc->from_base = in_base && fc->first == 0;
	fc->exists = fc->from_base;
	for (i = fc->first; i < fc->end && cf->pos[i] < pos; i++) {
		const struct writelog_rec *r = &w->rec[cf->pos[i]];

		if (r->type == WRITELOG_FILE)
			fc->exists = true;
		/*
		 * Two flushes of one file from two threads may complete in
		 * the other order than they were issued: what is durable is
		 * what the furthest-reaching completed one covers.
		 */
		if (r->type == WRITELOG_FLUSH && r->issued > fc->flushed)
			fc->flushed = r->issued;
	}
}

static void shuffle(uint64_t *v, size_t n, uint64_t *rng)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = splitmix(rng) % i;
		uint64_t t = v[i - 1];

		v[i - 1] = v[j];
		v[j] = t;
	}
}

static int build_file(const struct cut_files *f, const struct cut_file *cf,
		      const char *base_dir, int out_fd, uint64_t pos, enum cut_policy policy,
		      uint64_t *rng, struct cut_stats *st)
{
	const struct wlog *w = f->log;
	char base[PATH_MAX];
	struct file_cut fc;
	uint64_t *pending, buf_len = 0;
	size_t nr_pending = 0;
	void *buf = NULL;
	int fd, r = 0;

	snprintf(base, sizeof(base), "%s/%s", base_dir, cf->rel);
	fd = open(base, O_RDONLY | O_CLOEXEC);
	plan(w, cf, pos, fd >= 0, &fc);
	if (fd >= 0 && fc.from_base)
		r = copy_sparse(fd, out_fd);
	if (fd >= 0)
		close(fd);
	pending = calloc(cf->nr ? cf->nr : 1, sizeof(*pending));
	if (!pending)
		return -ENOMEM;
	for (size_t i = fc.first; i < fc.end && !r; i++) {
		const struct writelog_rec *rec = &w->rec[cf->pos[i]];

		if (!changes_data(rec))
			continue;
		if (rec->seq < fc.flushed) {
			r = apply(w, out_fd, rec, false, rng, &buf, &buf_len);
			st->durable++;
		} else if (rec->issued <= pos) {
			pending[nr_pending++] = rec->seq;
		}
	}
	st->pending += nr_pending;
	if (policy == CUT_SOME_LAND)
		shuffle(pending, nr_pending, rng);
	for (size_t i = 0; i < nr_pending && !r && policy != CUT_NOTHING_LANDS; i++) {
		uint64_t dice = policy == CUT_ALL_LAND ? 5 : splitmix(rng) % 10;

		if (dice < 4)
			continue;		/* lost */
		st->landed++;
		st->torn += dice >= 7;
		r = apply(w, out_fd, &w->rec[pending[i]], dice >= 7, rng, &buf, &buf_len);
	}
	free(buf);
	free(pending);
	return r;
}

/* mkdir -p of @path's directory, inside @out_dir. */
static int make_parents(char *path)
{
	for (char *s = strchr(path + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = 0;
		if (mkdir(path, 0700) < 0 && errno != EEXIST) {
			*s = '/';
			return -errno;
		}
		*s = '/';
	}
	return 0;
}

static bool in_log(const struct cut_files *f, const char *rel)
{
	for (size_t i = 0; i < f->nr; i++)
		if (!strcmp(f->v[i].rel, rel))
			return true;
	return false;
}

/* Files of the base that the log never names are left as they were. */
static int copy_untouched(const struct cut_files *f, const char *base_dir,
			  const char *out_dir)
{
	DIR *d = opendir(base_dir);
	struct dirent *e;
	int r = 0;

	if (!d)
		return -errno;
	while (!r && (e = readdir(d))) {
		char from[PATH_MAX], to[PATH_MAX];
		int in, out;

		if (e->d_type != DT_REG || in_log(f, e->d_name))
			continue;
		snprintf(from, sizeof(from), "%s/%s", base_dir, e->d_name);
		snprintf(to, sizeof(to), "%s/%s", out_dir, e->d_name);
		in = open(from, O_RDONLY | O_CLOEXEC);
		out = open(to, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		r = in < 0 || out < 0 ? -errno : copy_sparse(in, out);
		if (in >= 0)
			close(in);
		if (out >= 0)
			close(out);
	}
	closedir(d);
	return r;
}

int cut_build(const struct cut_files *f, const char *base_dir, const char *out_dir,
	      uint64_t pos, uint64_t seed, enum cut_policy policy, struct cut_stats *st)
{
	static const char *const names[] = { "nothing lands", "all lands", "some land" };
	uint64_t rng = seed * 0x9e3779b97f4a7c15ull ^ pos, dice = splitmix(&rng) % 4;
	int r = 0;

	if (policy == CUT_FROM_SEED)
		policy = dice > CUT_SOME_LAND ? CUT_SOME_LAND : (enum cut_policy)dice;
	memset(st, 0, sizeof(*st));
	st->policy = names[policy];
	for (size_t i = 0; i < f->nr && !r; i++) {
		const struct cut_file *cf = &f->v[i];
		char path[PATH_MAX], base[PATH_MAX];
		struct file_cut fc;
		int fd;

		snprintf(base, sizeof(base), "%s/%s", base_dir, cf->rel);
		plan(f->log, cf, pos, access(base, F_OK) == 0, &fc);
		if (!fc.exists)
			continue;
		snprintf(path, sizeof(path), "%s/%s", out_dir, cf->rel);
		r = make_parents(path);
		if (r)
			break;
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		r = build_file(f, cf, base_dir, fd, pos, policy, &rng, st);
		close(fd);
	}
	return r ? r : copy_untouched(f, base_dir, out_dir);
}
