/*
 * core/pool/pool_layout.c: the pool's layout kept safe, as LVM keeps its
 * metadata: an archive of the layout before every change, and a copy of
 * the current one on every raw device.
 *
 * The layout (layout.h) is read from the store, never from memory: it is
 * what is durable.  The pool numbers its layouts (p->layout_seq): every
 * change that pool_record commits makes the next one.  Around that commit,
 * under the admin lock:
 *
 *   before: POOL/archive/<seq>.layout gets the layout as it is, with the
 *           command about to change it and the time (lvm's archive);
 *           old entries go by count and age (ARCHIVE_RETAIN_*) once
 *           the change is made, with the devices' copies
 *   after:  the new layout is read back from the store and numbered
 *
 * and the number goes into the store in the change's own transaction.
 *
 * The durability steps of a change keep this order: the archive entry is
 * whole (written, fsynced, renamed, its directory fsynced) before the
 * transaction commits, so that a crash that keeps the change keeps the
 * layout it replaced; the devices' copies are written only after the
 * commit (a copy newer than the store would be a layout that never was).
 * A thin volume's snapshot or removal must also, before its transaction,
 * drain the volume and commit what its pool has pending (thin_pool.c: a
 * flush of the data devices, then a commit of pages).  That commit and the
 * archive entry do not depend on each other, so such a change begins the
 * entry on a thread of its own (pool_layout_archive_start) and pool_record
 * waits for it before the transaction: the same order, but the longer of
 * the two waits instead of their sum.  The thread reads only the records
 * the last change kept; without them pool_record writes the entry itself,
 * since the store's connection is the change's.
 *
 * What after read back is what the next before would read: while the
 * pool is open, the layout's records change only in pool_record's
 * transactions, and whatever writes the store unnumbered forgets them
 * (pool_layout_forget).  So they are kept for that entry, and a change
 * reads the layout back once, not twice.
 * Once the admin lock is let go (pool_admin_unlock), the new layout is
 * deflated once and written to every open device (layout_area.h), each in
 * the slot that does not hold its last good copy, under the device lock,
 * so that a device add or remove cannot close a device being written: in
 * the daemon by the copier, a thread of its own, so that no
 * change waits for a device (a device add stuck on its device holds the
 * device lock), offline at once.  Opening a
 * pool reads every device's copies (pool_layout_open): where a device
 * lacks the store's layout (a pool from before, one rebuilt by recover or
 * restore-layout, a device whose copy is stale), all are written anew
 * under the next number; a copy newer than the store (pool.db put back
 * from a copy) is archived first and said at warning, never lost.
 *
 * Archiving and copying are best effort: a failure is logged at warning
 * and the change stands, as a full disk must not stop an administrator
 * from freeing space.  So is a layout too big for the devices' areas even
 * deflated (some 60,000 thin volumes): LVM refuses such a change, but a
 * pool of that many snapshots must still be able to remove them.  It is
 * said once at warning, the devices keep the last copy that fitted beside
 * a marker that says it is stale (which `recover` refuses without
 * --force), and status shows "layout_copies": "stale" until a layout fits
 * again.
 */
#include "pool_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "device.h"
#include "layout.h"
#include "layout_area.h"
#include "log.h"
#include "regfile.h"

#define ARCHIVE_RETAIN_MIN	10	/* entries kept whatever their age (lvm.conf retain_min) */
#define ARCHIVE_RETAIN_DAYS	30	/* older ones beyond those go (retain_days) */
/*
 * And beyond those, no more than this many bytes: LVM has no such bound,
 * but a pool of 10,000 thin volumes has a layout of 2 MB, and as many
 * snapshots in a day would otherwise keep 20 GB.
 */
#define ARCHIVE_RETAIN_BYTES	(128ull << 20)

static _Thread_local char command_line[512];

void pool_set_command(const char *line)
{
	snprintf(command_line, sizeof(command_line), "%s", line ? line : "");
}

int pool_layout_load(struct pool_meta *m, struct layout *out)
{
	int r;

	memset(out, 0, sizeof(*out));
	r = m->ops->load(m, &out->img);
	if (r)
		return r;
	out->tables = calloc(out->img.nr_switches + 1, sizeof(*out->tables));
	out->table_lens = calloc(out->img.nr_switches + 1, sizeof(*out->table_lens));
	if (!out->tables || !out->table_lens) {
		layout_release(out);
		return -ENOMEM;
	}
	for (size_t i = 0; i < out->img.nr_switches; i++) {
		void *blob;

		r = m->ops->switch_table(m, out->img.switches[i].volume, &blob,
					 &out->table_lens[i]);
		if (r) {
			layout_release(out);
			return r;
		}
		out->tables[i] = blob;
	}
	return 0;
}

/* What @write writes of @l, as malloc'ed text. */
static int text_of(const struct layout *l, int (*write)(const struct layout *l, FILE *f),
		   char **text, size_t *len)
{
	FILE *f = open_memstream(text, len);
	int r;

	if (!f)
		return -ENOMEM;
	r = write(l, f);
	if (fclose(f) && !r)
		r = -ENOMEM;
	if (r) {
		free(*text);
		*text = NULL;
	}
	return r;
}

int pool_layout_text(const struct layout *l, char **text, size_t *len)
{
	return text_of(l, layout_write, text, len);
}

/* Bytes of @text before its records: through its "layout" line (all if none). */
static size_t header_len(const char *text)
{
	const char *s = strstr(text, "\nlayout ");

	s = s ? strchr(s + 1, '\n') : NULL;
	return s ? (size_t)(s + 1 - text) : strlen(text);
}

/* The records of @text: what follows its "layout" line. */
static const char *records_of(const char *text)
{
	return text + header_len(text);
}

/* The store's layout as text, numbered @seq, with @command; or NULL. */
static char *current_text(struct pool *p, uint64_t seq, const char *command, size_t *len)
{
	struct layout l;
	char *text = NULL;
	int r = pool_layout_load(p->meta, &l);

	if (!r) {
		l.seq = seq;
		l.time = (int64_t)time(NULL);
		l.command = command && *command ? strdup(command) : NULL;
		r = pool_layout_text(&l, &text, len);
		layout_release(&l);
	}
	if (r)
		log_warn("cannot read the layout of pool '%s' back: %s", p->dir, strerror(-r));
	return text;
}

/* ---- the archive ------------------------------------------------------ */

static int write_all(int fd, const char *text, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = write(fd, text + done, len - done);

		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			done += (size_t)n;
	}
	return 0;
}

/*
 * @head_len bytes of @head, then @len of @text, into @path whole or not at
 * all: a temporary, synced, renamed.
 */
static int write_atomic(const char *dir, const char *path, const char *head,
			size_t head_len, const char *text, size_t len)
{
	char tmp[PATH_MAX + 40];
	int fd, dfd, r;

	/* the thread's own: the copier may archive beside a change (archive_overflowed) */
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)gettid());
	r = regfile_open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600, &fd);
	if (r)
		return r;
	r = write_all(fd, head, head_len);
	if (!r)
		r = write_all(fd, text, len);
	if (!r && fsync(fd))
		r = -errno;
	close(fd);
	if (!r && rename(tmp, path))
		r = -errno;
	if (r) {
		unlink(tmp);
		return r;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

static int entry_seq(const char *name, uint64_t *seq)
{
	char *end;

	*seq = strtoull(name, &end, 10);
	return end != name && !strcmp(end, ".layout") ? 0 : -EINVAL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* POOL/archive into @dir; -ENAMETOOLONG if it does not fit. */
static int archive_dir(const char *pool_dir, char dir[PATH_MAX])
{
	return snprintf(dir, PATH_MAX, "%s/archive", pool_dir) >= PATH_MAX ? -ENAMETOOLONG : 0;
}

/*
 * Keeps the newest ARCHIVE_RETAIN_MIN entries of POOL/archive, and, newest
 * first, those younger than the age while they fit in ARCHIVE_RETAIN_BYTES.
 * A stat per entry: thousands in a busy pool, so it runs after a change
 * (pool_layout_flush), off its path, never before its commit.
 */
static void archive_prune(const struct pool *p)
{
	time_t oldest = time(NULL) - (time_t)ARCHIVE_RETAIN_DAYS * 86400;
	uint64_t *seqs = NULL, kept = 0;
	size_t nr = 0, cap = 0;
	char dir[PATH_MAX];
	struct dirent *e;
	DIR *d;

	if (archive_dir(p->dir, dir))
		return;
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		uint64_t seq;

		if (entry_seq(e->d_name, &seq))
			continue;
		if (nr == cap) {
			uint64_t *g = realloc(seqs, (cap = cap ? cap * 2 : 64) * sizeof(*seqs));

			if (!g)
				break;
			seqs = g;
		}
		seqs[nr++] = seq;
	}
	qsort(seqs, nr, sizeof(*seqs), cmp_u64);
	for (size_t i = nr; i-- > 0;) {
		char name[32];
		struct stat st;

		snprintf(name, sizeof(name), "%08" PRIu64 ".layout", seqs[i]);
		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		kept += (uint64_t)st.st_size;
		if (nr - i > ARCHIVE_RETAIN_MIN &&
		    (st.st_mtime < oldest || kept > ARCHIVE_RETAIN_BYTES))
			unlinkat(dirfd(d), name, 0);
	}
	closedir(d);
	free(seqs);
}

/* Archive entry @seq: @head, then @text. */
static int archive_write(const char *pool_dir, uint64_t seq, const char *head,
			 size_t head_len, const char *text, size_t len)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];

	if (archive_dir(pool_dir, dir))
		return -ENAMETOOLONG;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/%08" PRIu64 ".layout", dir, seq);
	return write_atomic(dir, path, head, head_len, text, len);
}

int pool_archive_write(const char *pool_dir, uint64_t seq, const char *text, size_t len)
{
	return archive_write(pool_dir, seq, "", 0, text, len);
}

/* This change's header for the entry of the layout the last change read back. */
static int kept_head(struct pool *p, char **head, size_t *len)
{
	struct layout h = {
		.seq = p->layout_seq,
		.time = (int64_t)time(NULL),
		.command = *command_line ? command_line : NULL,
	};

	h.img.uuid = p->uuid;
	return text_of(&h, layout_write_header, head, len);
}

/*
 * The entry of the layout the last change read back, which the store
 * still holds (anything else that wrote it forgot them): its records under
 * a header of this change's, as current_text would have written it.
 */
static int archive_kept(struct pool *p)
{
	char *head = NULL;
	size_t len;
	int r = kept_head(p, &head, &len);

	if (!r)
		r = archive_write(p->dir, p->layout_seq, head, len, p->layout_records,
				  p->layout_records_len);
	free(head);
	return r;
}

/* An entry being written beside the change it comes before (pool_layout_archive_start). */
struct pool_archiver {
	pthread_t thread;
	struct pool *p;
	uint64_t seq;			/* of the layout it archives */
	char *head;			/* this change's header */
	size_t head_len;
	int r;				/* archive_write's, once joined */
};

static void *archiver_main(void *arg)
{
	struct pool_archiver *a = arg;
	struct pool *p = a->p;

	/* p->layout_records stays until pool_layout_archive_wait: pool_layout_forget waits */
	a->r = archive_write(p->dir, a->seq, a->head, a->head_len, p->layout_records,
			     p->layout_records_len);
	return NULL;
}

void pool_layout_archive_start(struct pool *p)
{
	struct pool_archiver *a;

	if (p->layout_frozen || !p->layout_records || p->archiver)
		return;			/* pool_record archives it, reading the store */
	a = calloc(1, sizeof(*a));
	if (!a)
		return;
	a->p = p;
	a->seq = p->layout_seq;
	if (kept_head(p, &a->head, &a->head_len) ||
	    pthread_create(&a->thread, NULL, archiver_main, a)) {
		free(a->head);
		free(a);
		return;			/* pool_record writes it itself */
	}
	p->archiver = a;
}

bool pool_layout_archive_wait(struct pool *p)
{
	struct pool_archiver *a = p->archiver;

	if (!a)
		return false;
	pthread_join(a->thread, NULL);
	p->archiver = NULL;
	if (a->r)
		log_warn("cannot archive the layout of pool '%s': %s", p->dir, strerror(-a->r));
	free(a->head);
	free(a);
	return true;
}

void pool_layout_before(struct pool *p)
{
	size_t len;
	char *text;
	int r;

	if (pool_layout_archive_wait(p))
		return;
	if (p->layout_records) {
		r = archive_kept(p);
	} else {
		text = current_text(p, p->layout_seq, command_line, &len);
		if (!text)
			return;
		r = pool_archive_write(p->dir, p->layout_seq, text, len);
		free(text);
	}
	if (r)
		log_warn("cannot archive the layout of pool '%s': %s", p->dir, strerror(-r));
}

/* A copy of @text's records, for the next change's entry; none if short of memory. */
static void keep_records(struct pool *p, const char *text, size_t len)
{
	size_t skip = header_len(text);

	p->layout_records = malloc(len - skip + 1);
	if (!p->layout_records)
		return;
	memcpy(p->layout_records, text + skip, len - skip + 1);
	p->layout_records_len = len - skip;
}

void pool_layout_after(struct pool *p)
{
	size_t len;
	char *text = current_text(p, p->layout_seq + 1, command_line, &len);

	pool_layout_forget(p);
	if (!text)
		return;
	p->layout_seq++;
	keep_records(p, text, len);
	free(p->layout_unwritten);
	p->layout_unwritten = text;
	p->layout_unwritten_len = len;
}

void pool_layout_forget(struct pool *p)
{
	pool_layout_archive_wait(p);	/* its thread reads them */
	free(p->layout_records);
	p->layout_records = NULL;
	p->layout_records_len = 0;
}

/* ---- the copies on the devices ---------------------------------------- */

/* Says, once until a copy fits again, that @len bytes of layout did not. */
static void say_overflow(struct pool *p, size_t len)
{
	if (atomic_load(&p->layout_stale))
		return;
	atomic_store(&p->layout_stale, true);
	log_warn("the layout of pool '%s' (%zu bytes) does not fit a device's metadata area "
		 "(%u bytes) even deflated: the devices keep copy %" PRIu64 ", the last that "
		 "fitted, marked stale (status: layout_copies); the archive keeps every one",
		 p->dir, len, (unsigned int)LAYOUT_STORED_MAX, p->layout_fitted);
}

/*
 * Layout @seq, which the devices cannot keep, into the archive under its
 * own number (the next change would archive it only then), unless there.
 */
static void archive_overflowed(struct pool *p, uint64_t seq, const char *text, size_t len)
{
	char path[PATH_MAX + 32];
	struct stat st;
	int r;

	snprintf(path, sizeof(path), "%s/archive/%08" PRIu64 ".layout", p->dir, seq);
	if (!lstat(path, &st))
		return;
	r = pool_archive_write(p->dir, seq, text, len);
	if (r)
		log_warn("cannot archive the layout of pool '%s': %s", p->dir, strerror(-r));
}

/*
 * Copy @seq, deflated once, on every open device, each in the slot that
 * does not hold its last good copy; a layout too big leaves the marker
 * that says the copies are stale, and goes to the archive at once.
 */
static void write_copies(struct pool *p, uint64_t seq, const char *text, size_t len)
{
	struct layout_copy c;
	int r = layout_copy_make(&p->uuid, seq, text, len, &c);

	if (r && r != -EFBIG) {
		log_warn("cannot make the layout copy of pool '%s': %s", p->dir, strerror(-r));
		return;
	}
	if (c.overflow) {
		say_overflow(p, len);
		archive_overflowed(p, seq, text, len);
	} else {
		p->layout_fitted = seq;
		atomic_store(&p->layout_copy_bytes, c.stored);
		atomic_store(&p->layout_stale, false);
	}
	atomic_store(&p->layout_text_bytes, len);
	for (size_t i = 0; i < p->nr_devs; i++) {
		struct pool_device *d = p->devs[i];

		if (!d->dev)
			continue;
		r = layout_area_write(d->dev, d->layout_slot, &c);
		if (r)
			log_warn("cannot write the layout copy on '%s': %s", d->rec.path,
				 strerror(-r));
		else if (!c.overflow)
			d->layout_slot ^= 1;
	}
	layout_copy_release(&c);
}

/* Writes layout @seq on every open device, under the device lock. */
static void write_locked(struct pool *p, const char *text, size_t len, uint64_t seq)
{
	bool mine = atomic_load(&p->dev_lock_tid) == gettid();

	if (!mine) {
		pthread_mutex_lock(&p->dev_lock);
		atomic_store(&p->dev_lock_tid, gettid());
	}
	/* A later change may have been written first by another thread. */
	if (seq > p->layout_written) {
		write_copies(p, seq, text, len);
		p->layout_written = seq;
	}
	if (!mine) {
		atomic_store(&p->dev_lock_tid, 0);
		pthread_mutex_unlock(&p->dev_lock);
	}
}

struct pool_copier {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	char *text;			/* the newest layout not yet written, or NULL */
	size_t len;
	uint64_t seq;
	bool stopping;
};

/*
 * The copier: writes the newest layout handed to it, one at a time; a
 * layout replaced before it was taken is never written.  It waits for the
 * device lock as a device add or remove does, so a device that hangs
 * holds up the copies, and nothing else.
 */
static void *copier_main(void *arg)
{
	struct pool *p = arg;
	struct pool_copier *c = p->copier;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		char *text = c->text;
		size_t len = c->len;
		uint64_t seq = c->seq;

		if (!text && c->stopping)
			break;
		if (!text) {
			pthread_cond_wait(&c->wake, &c->lock);
			continue;
		}
		c->text = NULL;
		pthread_mutex_unlock(&c->lock);
		write_locked(p, text, len, seq);
		free(text);
		archive_prune(p);
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int pool_layout_copier_start(struct pool *p)
{
	struct pool_copier *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->wake, NULL);
	p->copier = c;
	r = -pthread_create(&c->thread, NULL, copier_main, p);
	if (r) {
		p->copier = NULL;
		pthread_cond_destroy(&c->wake);
		pthread_mutex_destroy(&c->lock);
		free(c);
	}
	return r;
}

void pool_layout_copier_stop(struct pool *p)
{
	struct pool_copier *c = p->copier;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stopping = true;
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	p->copier = NULL;
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

void pool_layout_flush(struct pool *p, char *text, size_t len, uint64_t seq)
{
	struct pool_copier *c = p->copier;

	if (p->layout_frozen) {
		free(text);
		return;
	}
	if (!c) {
		write_locked(p, text, len, seq);
		free(text);
		archive_prune(p);
		return;
	}
	pthread_mutex_lock(&c->lock);
	if (!c->text || seq > c->seq) {
		free(c->text);
		c->text = text;
		c->len = len;
		c->seq = seq;
		text = NULL;
	}
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->lock);
	free(text);
}

/* Whether pool.db has volume @id (pool.c's lookup is above this file). */
static bool in_pool(const struct pool *p, int64_t id)
{
	for (size_t i = 0; i < p->nr_vols; i++)
		if (p->vols[i] && p->vols[i]->rec.id == id)
			return true;
	return false;
}

/*
 * Keeps layout copy @s, newer than pool.db's, in the archive: the pool
 * numbers past it and writes its own over it.  Said at warning.
 */
static void keep_newer_copy(struct pool *p, const struct layout_slot *s, const char *path)
{
	char file[PATH_MAX + 32], gone[512] = "", why[128];
	struct layout newer;
	struct stat st;
	int r = 0;

	/* thin volumes of the newer layout that pool.db lacks: their maps are gone */
	if (!layout_parse(s->text, s->len, &newer, why, sizeof(why))) {
		for (size_t i = 0; i < newer.img.nr_volumes; i++) {
			const struct volume_rec *v = &newer.img.volumes[i];
			size_t n = strlen(gone);

			if (strcmp(v->kind, "thin") || in_pool(p, v->id) ||
			    n + strlen(v->name) + 8 >= sizeof(gone))
				continue;
			snprintf(gone + n, sizeof(gone) - n, "%s'%s'", n ? ", " : "; the maps of "
				 "thin volumes it has and pool.db has not are lost, their blocks free "
				 "to be written over: ", v->name);
		}
		layout_release(&newer);
	}
	snprintf(file, sizeof(file), "%s/archive/%08" PRIu64 ".layout", p->dir, s->seq);
	if (lstat(file, &st))
		r = pool_archive_write(p->dir, s->seq, s->text, s->len);
	log_warn("pool.db holds layout %" PRIu64 ", older than copy %" PRIu64 " on '%s' "
		 "(was pool.db put back from a copy?): %s%s; 'mapperctl restore-layout' puts its "
		 "linear and switch volumes back%s", p->layout_seq, s->seq, path,
		 r ? "cannot keep it in the archive: " : "the devices' layout is kept in ",
		 r ? strerror(-r) : file, gone);
}

/* pool.db's layout numbered @seq, in the store and on every device. */
static void renumber(struct pool *p, uint64_t seq)
{
	const struct pool_meta_ops *m = p->meta->ops;
	size_t len;
	char *text;
	int r = m->begin(p->meta);

	if (!r)
		r = m->layout_seq_set(p->meta, seq);
	if (!r)
		r = m->commit(p->meta);
	if (r) {
		m->rollback(p->meta);	/* a read-only pool: the copies wait */
		return;
	}
	p->layout_seq = seq;
	text = current_text(p, seq, NULL, &len);
	if (text)
		pool_layout_flush(p, text, len, seq);
}

/*
 * What a device's area says of the pool, at open: where its next copy
 * goes, the newest copy that fitted, and whether it holds the marker of
 * pool.db's own layout (too big when it was written: nothing to rewrite).
 */
static bool note_area(struct pool *p, struct pool_device *d, const struct layout_area *a)
{
	const struct layout_slot *s = layout_area_newest(a), *over = layout_area_overflow(a);

	d->layout_slot = s ? layout_area_newest_slot(a) ^ 1 : 0;
	if (s && uuid_equal(&s->pool, &p->uuid) && s->seq > p->layout_fitted) {
		p->layout_fitted = s->seq;
		atomic_store(&p->layout_copy_bytes, s->stored);
	}
	return over && uuid_equal(&over->pool, &p->uuid) && over->seq == p->layout_seq;
}

/*
 * At open: every device's copies against pool.db's layout (its number and
 * its records).  A device whose newest copy is pool.db's needs nothing,
 * nor one that holds the marker that pool.db's layout did not fit (said
 * at warning: the copies are stale); an older one is rewritten (said at
 * warning), as are devices with none (a pool from before, one just
 * recovered); a copy newer than pool.db is kept in the archive before
 * anything is written over it.  Each area is read once.
 */
void pool_layout_open(struct pool *p)
{
	struct layout_area *areas;
	const struct layout_slot *newest = NULL;
	const char *newest_path = NULL;
	bool stale = false, overflowed = false;
	size_t len;
	char *text;

	if (p->layout_frozen)
		return;
	areas = calloc(p->nr_devs + 1, sizeof(*areas));
	text = current_text(p, p->layout_seq, NULL, &len);
	for (size_t i = 0; areas && text && i < p->nr_devs; i++) {
		const struct layout_slot *s;

		if (!p->devs[i]->dev || layout_area_read(p->devs[i]->dev, &areas[i]))
			continue;
		if (note_area(p, p->devs[i], &areas[i])) {
			overflowed = true;
			continue;
		}
		s = layout_area_newest(&areas[i]);
		if (s && !uuid_equal(&s->pool, &p->uuid))
			s = NULL;
		if (s && s->seq < p->layout_seq)
			log_warn("device '%s' carried layout copy %" PRIu64 ", older than pool.db's %"
				 PRIu64 ": rewritten", p->devs[i]->rec.path, s->seq, p->layout_seq);
		stale |= !s || s->seq != p->layout_seq ||
			 strcmp(records_of(s->text), records_of(text));
		if (s && (!newest || s->seq > newest->seq)) {
			newest = s;
			newest_path = p->devs[i]->rec.path;
		}
	}
	if (text)
		atomic_store(&p->layout_text_bytes, len);
	if (overflowed && !stale)
		say_overflow(p, len);
	/* 0: a pool.db from before layouts were numbered, not an old copy */
	if (newest && newest->seq > p->layout_seq && p->layout_seq)
		keep_newer_copy(p, newest, newest_path);
	if (stale)
		renumber(p, (newest && newest->seq > p->layout_seq ? newest->seq : p->layout_seq) + 1);
	for (size_t i = 0; areas && i < p->nr_devs; i++)
		layout_area_release(&areas[i]);
	free(areas);
	free(text);
}
