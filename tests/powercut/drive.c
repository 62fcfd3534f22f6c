/*
 * powercut-drive: runs a seeded workload against a recording daemon and
 * journals what it did (journal.h).
 *
 *   powercut-drive BIN POOL MNT LOG ORIGIN JOURNAL SEED OPS [SCRIPT]
 *
 * BIN holds mapperfs and mapperctl; POOL is a pool with raw devices d0
 * and d1 and nothing else; the daemon is started on MNT with its write
 * log in LOG (MAPPERFS_WRITELOG; MAPPERFS_WRITELOG_BREAK passes through),
 * and stopped at the end.  ORIGIN is written as the external origin
 * image of a thin volume.  Everything goes through the public interfaces:
 * volume files on the mount, and mapperctl commands.
 *
 * The workload: a thin pool with a thin volume and one over the external
 * origin, a linear, a mirrored (two legs, one per device) and a switch
 * volume; then OPS random operations:
 * first writes, overwrites and copy-on-write after snapshots (tagged
 * sectors, sector.h; one in ten with RWF_DSYNC, the FUA of files),
 * fsyncs, discards, snapshot creation and removal, thin, linear and pool
 * extends, switch-map, moves of the linear volume and of the thin pool's
 * data between the devices (copied at 1 MiB/s, so writes and cuts land
 * in the copy), and a clean
 * daemon restart or two.  The daemon keeps one leaf of the thin map
 * loaded (-o cache_size=2K), so leaves are unloaded and loaded again all
 * through; the last line of the output says how many were unloaded.  One thread,
 * one operation at a time, so the journal's order is the order the
 * daemon saw; except for a second thread, the side lane,
 * that meanwhile writes, discards and fsyncs a thin volume of its own in
 * the same pool (tb, 33 MiB so that its map has two leaves, written in a
 * window at either end), which the main lane only snapshots: so the pool's
 * commits, copy-on-writes, frees, snapshots and removals race with its
 * provisioning and its writes to shared blocks, as they do in use, and
 * each volume's journal lines are still in the order its operations were
 * made.
 *
 * With SCRIPT, the operations after the set-up are read from that file
 * instead, one a line ('#' starts a comment; sizes in bytes):
 *   write VOL OFF LEN | write-dsync VOL OFF LEN | discard VOL OFF LEN
 *   fsync VOL
 *   snapshot FROM NAME | remove NAME | extend VOL|tp BYTES_MORE
 *   switch-map REGION:PATH | restart | move DEVICE VOL
 * The regression cases in tests/powercut/cases/ are such scripts.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/falloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "journal.h"
#include "sector.h"
#include "writelog.h"

#define MAX_VOLS	16
#define MAX_SNAPSHOTS	4
#define REGIONS		16		/* of the switch volume */
#define REGION_SIZE	(64u << 10)
#define KiB		((uint64_t)1024)
#define MiB		(1024 * KiB)
#define ORIGIN_SIZE	(512 * KiB)
#define THIN_MAX	(2 * MiB)
#define LINEAR_MAX	(3 * MiB)
#define POOL_MAX	(8 * MiB)
#define WRITE_MAX	(128 * KiB)
#define SIDE_SIZE	(33 * MiB)	/* tb: two leaves of the thin map (512 blocks each) */
#define WINDOW		(1 * MiB)	/* ... written in two windows, one per leaf */

enum vol_kind { VOL_LINEAR, VOL_SWITCH, VOL_THIN };

struct vol {
	char name[JOURNAL_NAME_MAX];
	enum vol_kind kind;
	int fd;				/* open on the mount, or -1 */
	uint64_t size;			/* bytes */
	bool snapshot;			/* may be removed */
	bool side;			/* the side lane's: the main lane leaves it alone */
	bool alive;
};

/* What one thread needs to make operations. */
struct lane {
	uint64_t rng;
	void *buf;			/* WRITE_MAX bytes */
};

struct driver {
	const char *bin, *pool, *mnt, *log, *origin;
	FILE *journal;
	pthread_mutex_t journal_lock;
	struct lane main_lane, side_lane;
	pid_t daemon;
	struct vol vols[MAX_VOLS];
	int nr_vols;
	_Atomic uint64_t next_id;	/* the next write's id */
	pthread_t side;
	pthread_mutex_t side_lock;	/* held by the side lane per operation */
	atomic_bool done;
	char table[REGIONS + 1];	/* the switch volume's regions: path digits */
	uint64_t pool_size;		/* bytes */
	int nr_snapshots, snapshots_made, restarts;
	uint64_t evictions;		/* leaves the budget unloaded, all daemons */
};

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "powercut-drive: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static uint64_t lane_rnd(struct lane *l, uint64_t n)
{
	uint64_t z = (l->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (z ^ (z >> 31)) % n;
}

static uint64_t rnd(struct driver *d, uint64_t n)
{
	return lane_rnd(&d->main_lane, n);
}

/* The write log's length: every cut at this position or later follows. */
static uint64_t position(struct driver *d)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/log", d->log);
	if (stat(path, &st) < 0)
		die("cannot stat the write log '%s': %s", path, strerror(errno));
	return (uint64_t)st.st_size / sizeof(struct writelog_rec);
}

/* Runs a program; its stdout into @out (NUL-terminated) if given.  Exit status. */
static int run(char *out, size_t out_len, char *const argv[])
{
	int fds[2], status;
	size_t got = 0;
	pid_t pid;

	if (out && pipe2(fds, O_CLOEXEC) < 0)
		die("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		if (out)
			dup2(fds[1], STDOUT_FILENO);
		else
			dup2(STDERR_FILENO, STDOUT_FILENO);
		execvp(argv[0], argv);
		fprintf(stderr, "powercut-drive: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (out) {
		ssize_t n;

		close(fds[1]);
		while (got + 1 < out_len && (n = read(fds[0], out + got, out_len - got - 1)) > 0)
			got += (size_t)n;
		out[got] = 0;
		close(fds[0]);
	}
	if (waitpid(pid, &status, 0) < 0)
		die("waitpid: %s", strerror(errno));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* mapperctl --pool POOL ARGS...; stdout to @out if given. */
static int ctl(struct driver *d, char *out, size_t out_len, ...)
{
	char prog[PATH_MAX], *argv[16];
	int n = 0;
	va_list ap;

	snprintf(prog, sizeof(prog), "%s/mapperctl", d->bin);
	argv[n++] = prog;
	argv[n++] = "--pool";
	argv[n++] = (char *)d->pool;
	va_start(ap, out_len);
	while (n < 15 && (argv[n] = va_arg(ap, char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	return run(out, out_len, argv);
}

static void wait_exit(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (fd < 0) {
		if (errno == ESRCH)
			return;
		die("pidfd_open: %s", strerror(errno));
	}
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	close(fd);
}

static void open_vols(struct driver *d)
{
	for (int i = 0; i < d->nr_vols; i++) {
		struct vol *v = &d->vols[i];
		char path[PATH_MAX];

		if (!v->alive || v->fd >= 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", d->mnt, v->name);
		v->fd = open(path, O_RDWR | O_CLOEXEC);
		if (v->fd < 0)
			die("cannot open '%s': %s", path, strerror(errno));
	}
}

static void close_vols(struct driver *d)
{
	for (int i = 0; i < d->nr_vols; i++) {
		if (d->vols[i].fd >= 0)
			close(d->vols[i].fd);
		d->vols[i].fd = -1;
	}
}

static void daemon_start(struct driver *d)
{
	char prog[PATH_MAX], pidfile[PATH_MAX];
	char *argv[] = { prog, "--pool", (char *)d->pool, (char *)d->mnt, "-o", "sync_rate=1",
			 "-o", "cache_size=2K", NULL };
	FILE *f;

	snprintf(prog, sizeof(prog), "%s/mapperfs", d->bin);
	setenv("MAPPERFS_WRITELOG", d->log, 1);
	if (run(NULL, 0, argv))
		die("mapperfs did not start on '%s'", d->pool);
	unsetenv("MAPPERFS_WRITELOG");
	snprintf(pidfile, sizeof(pidfile), "%s/mapperfs.pid", d->pool);
	f = fopen(pidfile, "re");
	if (!f || fscanf(f, "%d", &d->daemon) != 1)
		die("no pid in '%s'", pidfile);
	fclose(f);
	open_vols(d);
}

/* Adds the running daemon's count of unloaded leaves (status) to d->evictions. */
static void count_evictions(struct driver *d)
{
	static const char key[] = "\"cache_evictions\":";
	char out[65536], *at;

	if (ctl(d, out, sizeof(out), "status", "tp", "--json", NULL))
		return;		/* no thin pool yet */
	at = strstr(out, key);
	if (at)
		d->evictions += strtoull(at + sizeof(key) - 1, NULL, 10);
}

static void daemon_stop(struct driver *d)
{
	char *argv[] = { "fusermount3", "-u", (char *)d->mnt, NULL };

	count_evictions(d);
	close_vols(d);
	if (run(NULL, 0, argv))
		die("cannot unmount '%s'", d->mnt);
	wait_exit(d->daemon);
}

static struct vol *add_vol(struct driver *d, const char *name, enum vol_kind kind,
			   uint64_t size)
{
	struct vol *v = &d->vols[d->nr_vols++];

	snprintf(v->name, sizeof(v->name), "%s", name);
	v->kind = kind;
	v->size = size;
	v->fd = -1;
	v->alive = true;
	return v;
}

static void record(struct driver *d, struct op *op)
{
	pthread_mutex_lock(&d->journal_lock);
	if (journal_append(d->journal, op))
		die("cannot write the journal: %s", strerror(errno));
	pthread_mutex_unlock(&d->journal_lock);
}

/* `switch-map sw --dump`, tokens joined by '_'. */
static char *switch_dump(struct driver *d)
{
	char out[4096];

	if (ctl(d, out, sizeof(out), "switch-map", "sw", "--dump", NULL))
		die("switch-map --dump failed");
	for (char *p = out; *p; p++)
		if (*p == ' ' || *p == '\n')
			*p = '_';
	while (*out && out[strlen(out) - 1] == '_')
		out[strlen(out) - 1] = 0;
	return strdup(out);
}

static char *size_arg(char *buf, uint64_t bytes)
{
	sprintf(buf, "%" PRIu64 "K", bytes / KiB);
	return buf;
}

static void setup(struct driver *d)
{
	struct op op = { .kind = OP_CREATE_POOL, .size = 4 * MiB };
	char sz[32];

	snprintf(op.name, sizeof(op.name), "tp");
	op.q = position(d);
	op.rc = ctl(d, NULL, 0, "create", "thin-pool", "tp", "--size", size_arg(sz, op.size),
		    "--on", "d0", NULL);
	op.a = position(d);
	record(d, &op);
	d->pool_size = op.size;

	op = (struct op){ .kind = OP_CREATE_LINEAR, .size = 1 * MiB };
	snprintf(op.name, sizeof(op.name), "lin");
	op.q = position(d);
	op.rc = ctl(d, NULL, 0, "create", "linear", "lin", "--size", "1M", "--on", "d1", NULL);
	op.a = position(d);
	record(d, &op);
	add_vol(d, "lin", VOL_LINEAR, op.size);

	op = (struct op){ .kind = OP_CREATE_LINEAR, .size = 1 * MiB };
	snprintf(op.name, sizeof(op.name), "mir");
	op.q = position(d);
	op.rc = ctl(d, NULL, 0, "create", "linear", "mir", "--size", "1M", "--mirrors", "1", NULL);
	op.a = position(d);
	record(d, &op);
	add_vol(d, "mir", VOL_LINEAR, op.size);

	op = (struct op){ .kind = OP_CREATE_SWITCH, .size = REGIONS * REGION_SIZE,
			  .region_size = REGION_SIZE };
	snprintf(op.name, sizeof(op.name), "sw");
	op.q = position(d);
	op.rc = ctl(d, NULL, 0, "create", "switch", "sw", "--size", size_arg(sz, op.size),
		    "--region-size", "64K", "--path", "d0", "--path", "d1", NULL);
	op.a = position(d);
	for (int r = 0; r < REGIONS; r++)
		d->table[r] = (char)('0' + r % 2);	/* regions alternate, as dm-switch */
	op.table = d->table;
	op.dump = switch_dump(d);
	record(d, &op);
	free(op.dump);
	add_vol(d, "sw", VOL_SWITCH, op.size);

	op = (struct op){ .kind = OP_CREATE_THIN, .size = 1 * MiB };
	snprintf(op.name, sizeof(op.name), "t0");
	op.q = position(d);
	op.rc = ctl(d, NULL, 0, "create", "thin", "t0", "--pool", "tp", "--size", "1M", NULL);
	op.a = position(d);
	record(d, &op);
	add_vol(d, "t0", VOL_THIN, op.size);

	op = (struct op){ .kind = OP_CREATE_THIN, .size = 1 * MiB, .origin_size = ORIGIN_SIZE };
	snprintf(op.name, sizeof(op.name), "to");
	op.q = position(d);
	op.rc = ctl(d, NULL, 0, "create", "thin", "to", "--pool", "tp", "--size", "1M",
		    "--origin", d->origin, NULL);
	op.a = position(d);
	record(d, &op);
	add_vol(d, "to", VOL_THIN, op.size);
	open_vols(d);
}

/* The external origin: tagged sectors, id 1, at their own offsets. */
static void write_origin(const char *path)
{
	void *buf = malloc(ORIGIN_SIZE);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (!buf || fd < 0)
		die("cannot create the origin '%s': %s", path, strerror(errno));
	sector_fill(buf, ORIGIN_SIZE, SECTOR_ORIGIN_ID, 0);
	if (pwrite(fd, buf, ORIGIN_SIZE, 0) != (ssize_t)ORIGIN_SIZE || fsync(fd))
		die("cannot write the origin '%s': %s", path, strerror(errno));
	close(fd);
	free(buf);
}

/* A random live volume of the main lane's (@side: or the side lane's). */
static struct vol *pick(struct driver *d, bool thin_only, bool side)
{
	for (;;) {
		struct vol *v = &d->vols[rnd(d, (uint64_t)d->nr_vols)];

		if (v->alive && (side || !v->side) && (!thin_only || v->kind == VOL_THIN))
			return v;
	}
}

static struct vol *pick_vol(struct driver *d, bool thin_only)
{
	return pick(d, thin_only, false);
}

static struct vol *vol_named(struct driver *d, const char *name)
{
	for (int i = 0; i < d->nr_vols; i++)
		if (!strcmp(d->vols[i].name, name))
			return &d->vols[i];
	return NULL;
}

/* A write; with @dsync, RWF_DSYNC: the kernel has the daemon flush it before it returns. */
static void write_at(struct driver *d, struct lane *l, struct vol *v, uint64_t off,
		     uint64_t len, bool dsync)
{
	struct op op = { .kind = dsync ? OP_WRITE_DSYNC : OP_WRITE,
			 .id = atomic_fetch_add(&d->next_id, 1), .off = off, .len = len };
	struct iovec iov;
	ssize_t n;

	if (op.off >= v->size || op.len > v->size - op.off || op.len > WRITE_MAX ||
	    (op.off | op.len) % SECTOR)
		die("write %s %" PRIu64 " %" PRIu64 ": out of the volume or not in sectors",
		    v->name, off, len);
	snprintf(op.name, sizeof(op.name), "%s", v->name);
	sector_fill(l->buf, op.len, op.id, op.off);
	iov = (struct iovec){ l->buf, op.len };
	op.q = position(d);
	n = pwritev2(v->fd, &iov, 1, (off_t)op.off, dsync ? RWF_DSYNC : 0);
	op.a = position(d);
	op.rc = n == (ssize_t)op.len ? 0 : n < 0 ? errno : EIO;
	record(d, &op);
}

/*
 * Where random operations on @v go: [*base, *base + *span).  A volume of
 * SIDE_SIZE (tb and its snapshots) is used in two windows, one at its
 * start and one at its end, so that it has two leaves and stays small.
 */
static void window(struct lane *l, const struct vol *v, uint64_t *base, uint64_t *span)
{
	*base = 0;
	*span = v->size;
	if (v->size >= SIDE_SIZE) {
		*base = lane_rnd(l, 2) ? v->size - WINDOW : 0;
		*span = WINDOW;
	}
}

static void random_write(struct driver *d, struct lane *l, struct vol *v)
{
	uint64_t off, len, base, span;

	window(l, v, &base, &span);
	if (lane_rnd(l, 10) < 7) {
		off = lane_rnd(l, span / (4 * KiB)) * 4 * KiB;
		len = (1 + lane_rnd(l, WRITE_MAX / (4 * KiB))) * 4 * KiB;
	} else {
		off = lane_rnd(l, span / SECTOR) * SECTOR;
		len = (1 + lane_rnd(l, 16)) * SECTOR;
	}
	write_at(d, l, v, base + off, len < span - off ? len : span - off,
		 lane_rnd(l, 10) == 0);
}

static void do_write(struct driver *d)
{
	random_write(d, &d->main_lane, pick_vol(d, false));
}

static void fsync_vol(struct driver *d, struct vol *v)
{
	struct op op = { .kind = OP_FSYNC };

	snprintf(op.name, sizeof(op.name), "%s", v->name);
	op.q = position(d);
	op.rc = fsync(v->fd) ? errno : 0;
	op.a = position(d);
	record(d, &op);
}

static void do_fsync(struct driver *d)
{
	fsync_vol(d, pick_vol(d, false));
}

static void discard_at(struct driver *d, struct vol *v, uint64_t off, uint64_t len, int mode)
{
	struct op op = { .kind = OP_DISCARD, .off = off, .len = len };

	if (op.off >= v->size || op.len > v->size - op.off || (op.off | op.len) % SECTOR)
		die("discard %s %" PRIu64 " %" PRIu64 ": out of the volume or not in sectors",
		    v->name, off, len);
	snprintf(op.name, sizeof(op.name), "%s", v->name);
	op.q = position(d);
	op.rc = fallocate(v->fd, mode, (off_t)op.off, (off_t)op.len) ? errno : 0;
	op.a = position(d);
	record(d, &op);
}

static void random_discard(struct driver *d, struct lane *l, struct vol *v)
{
	int mode = FALLOC_FL_KEEP_SIZE |
		   (lane_rnd(l, 4) ? FALLOC_FL_PUNCH_HOLE : FALLOC_FL_ZERO_RANGE);
	uint64_t base, span, off, len;

	window(l, v, &base, &span);
	off = lane_rnd(l, span / (4 * KiB)) * 4 * KiB;
	len = (1 + lane_rnd(l, 48)) * 4 * KiB;
	discard_at(d, v, base + off, len < span - off ? len : span - off, mode);
}

static void do_discard(struct driver *d)
{
	random_discard(d, &d->main_lane, pick_vol(d, false));
}

static void snapshot_as(struct driver *d, struct vol *from, const char *name)
{
	struct op op = { .kind = OP_SNAPSHOT };
	struct vol *v;

	if (d->nr_snapshots == MAX_SNAPSHOTS || d->nr_vols == MAX_VOLS)
		return;
	d->snapshots_made++;
	snprintf(op.name, sizeof(op.name), "%s", name);
	snprintf(op.from, sizeof(op.from), "%s", from->name);
	op.size = from->size;
	op.q = position(d);
	op.rc = ctl(d, NULL, 0, "snapshot", "--active", from->name, op.name, NULL);
	op.a = position(d);
	record(d, &op);
	if (op.rc)
		return;
	v = add_vol(d, op.name, VOL_THIN, from->size);
	v->snapshot = true;
	d->nr_snapshots++;
	open_vols(d);
}

static void do_snapshot(struct driver *d)
{
	char name[JOURNAL_NAME_MAX];

	snprintf(name, sizeof(name), "s%d", d->snapshots_made + 1);
	snapshot_as(d, pick(d, true, true), name);	/* tb too, while it is written */
}

static void remove_vol(struct driver *d, struct vol *v)
{
	struct op op = { .kind = OP_REMOVE };

	if (!v->snapshot)
		die("remove %s: the script may remove snapshots only", v->name);
	close(v->fd);
	v->fd = -1;
	snprintf(op.name, sizeof(op.name), "%s", v->name);
	op.q = position(d);
	op.rc = ctl(d, NULL, 0, "remove", v->name, NULL);
	op.a = position(d);
	record(d, &op);
	if (op.rc) {
		open_vols(d);
		return;
	}
	v->alive = false;
	d->nr_snapshots--;
}

static void do_remove(struct driver *d)
{
	struct vol *v;

	if (!d->nr_snapshots)
		return;
	do
		v = pick_vol(d, true);
	while (!v->snapshot);
	remove_vol(d, v);
}

/* extend NAME by @by bytes, up to @max; @v is NULL for the pool. */
static void do_extend(struct driver *d, struct vol *v, uint64_t by, uint64_t max)
{
	struct op op = { .kind = OP_EXTEND };
	uint64_t *size = v ? &v->size : &d->pool_size;
	char sz[32];

	if (*size + by > max)
		return;
	snprintf(op.name, sizeof(op.name), "%s", v ? v->name : "tp");
	op.size = *size + by;
	op.q = position(d);
	op.rc = ctl(d, NULL, 0, "extend", op.name, "--size", size_arg(sz, op.size), NULL);
	op.a = position(d);
	record(d, &op);
	if (!op.rc)
		*size = op.size;
}

/* Maps regions[i] to paths[i], as `switch-map sw r:p ...`. */
static void switch_map(struct driver *d, const unsigned int *regions,
		       const unsigned int *paths, int n)
{
	char args[3][16], next[REGIONS + 1];
	struct op op = { .kind = OP_SWITCH_MAP };

	memcpy(next, d->table, sizeof(next));
	for (int i = 0; i < n; i++) {
		if (regions[i] >= REGIONS || paths[i] > 1)
			die("switch-map %x:%x: no such region or path", regions[i], paths[i]);
		snprintf(args[i], sizeof(args[i]), "%x:%x", regions[i], paths[i]);
		next[regions[i]] = (char)('0' + paths[i]);
	}
	snprintf(op.name, sizeof(op.name), "sw");
	op.q = position(d);
	op.rc = ctl(d, NULL, 0, "switch-map", "sw", args[0], n > 1 ? args[1] : NULL,
		    n > 2 ? args[2] : NULL, NULL);
	op.a = position(d);
	if (!op.rc)
		memcpy(d->table, next, sizeof(next));
	op.table = d->table;
	op.dump = switch_dump(d);
	record(d, &op);
	free(op.dump);
}

static void do_switch_map(struct driver *d)
{
	unsigned int regions[3], paths[3];
	int n = 1 + (int)rnd(d, 3);

	for (int i = 0; i < n; i++) {
		regions[i] = (unsigned int)rnd(d, REGIONS);
		paths[i] = (unsigned int)rnd(d, 2);
	}
	switch_map(d, regions, paths, n);
}

/*
 * Starts moving volume @name (a linear volume, or the thin pool's data)
 * off device @dev (the daemon copies in the background).
 */
static void move_off(struct driver *d, const char *dev, const char *name)
{
	struct op op = { .kind = OP_MOVE };

	snprintf(op.name, sizeof(op.name), "%s", name);
	op.q = position(d);
	op.rc = ctl(d, NULL, 0, "move", dev, "--volume", name, NULL);
	op.a = position(d);
	record(d, &op);
}

static void restart(struct driver *d)
{
	struct op op = { .kind = OP_RESTART };

	pthread_mutex_lock(&d->side_lock);
	op.q = position(d);
	daemon_stop(d);
	daemon_start(d);
	op.a = position(d);
	pthread_mutex_unlock(&d->side_lock);
	record(d, &op);
}

static void do_restart(struct driver *d)
{
	if (d->restarts == 2)
		return;
	d->restarts++;
	restart(d);
}

static void step(struct driver *d)
{
	uint64_t dice = rnd(d, 100);

	if (dice < 45)
		do_write(d);
	else if (dice < 60)
		do_fsync(d);
	else if (dice < 67)
		do_discard(d);
	else if (dice < 73)
		do_snapshot(d);
	else if (dice < 77)
		do_remove(d);
	else if (dice < 80)
		do_extend(d, pick_vol(d, true), 64 * KiB * (1 + rnd(d, 4)), THIN_MAX);
	else if (dice < 83)
		do_extend(d, vol_named(d, "lin"), MiB, LINEAR_MAX);
	else if (dice < 86)
		do_extend(d, NULL, MiB, POOL_MAX);
	else if (dice < 92)
		do_switch_map(d);
	else if (dice < 93)
		do_restart(d);
	else if (dice < 94)
		move_off(d, rnd(d, 2) ? "d1" : "d0", "lin");
	else if (dice < 95)
		move_off(d, rnd(d, 2) ? "d1" : "d0", "tp");
	else
		do_write(d);
}

/* The side lane: tb's own writes, discards and fsyncs, until the main lane is done. */
static void *side_main(void *arg)
{
	struct driver *d = arg;
	struct lane *l = &d->side_lane;
	struct vol *v = vol_named(d, "tb");

	while (!atomic_load(&d->done)) {
		uint64_t dice = lane_rnd(l, 100);

		pthread_mutex_lock(&d->side_lock);
		if (dice < 65)
			random_write(d, l, v);
		else if (dice < 85)
			fsync_vol(d, v);
		else
			random_discard(d, l, v);
		pthread_mutex_unlock(&d->side_lock);
	}
	return NULL;
}

static void side_start(struct driver *d)
{
	struct op op = { .kind = OP_CREATE_THIN, .size = SIDE_SIZE };
	struct vol *v;
	char sz[32];

	snprintf(op.name, sizeof(op.name), "tb");
	op.q = position(d);
	op.rc = ctl(d, NULL, 0, "create", "thin", "tb", "--pool", "tp", "--size",
		    size_arg(sz, op.size), NULL);
	op.a = position(d);
	record(d, &op);
	v = add_vol(d, "tb", VOL_THIN, op.size);
	v->side = true;
	open_vols(d);
	if (pthread_create(&d->side, NULL, side_main, d))
		die("cannot start the side lane");
}

static void side_stop(struct driver *d)
{
	atomic_store(&d->done, true);
	pthread_join(d->side, NULL);
}

static struct vol *script_vol(struct driver *d, const char *name, int line)
{
	struct vol *v = vol_named(d, name);

	if (!v || !v->alive)
		die("script line %d: no volume '%s'", line, name);
	return v;
}

/* One line of a script (see the top of this file). */
static void script_step(struct driver *d, char *text, int line)
{
	char *w[4] = { 0 };
	int n = 0;

	text[strcspn(text, "#\n")] = 0;
	for (char *save, *t = strtok_r(text, " \t", &save); t && n < 4;
	     t = strtok_r(NULL, " \t", &save))
		w[n++] = t;
	if (!n)
		return;
	if ((!strcmp(w[0], "write") || !strcmp(w[0], "write-dsync")) && n == 4)
		write_at(d, &d->main_lane, script_vol(d, w[1], line), strtoull(w[2], NULL, 0),
			 strtoull(w[3], NULL, 0), !strcmp(w[0], "write-dsync"));
	else if (!strcmp(w[0], "discard") && n == 4)
		discard_at(d, script_vol(d, w[1], line), strtoull(w[2], NULL, 0),
			   strtoull(w[3], NULL, 0), FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE);
	else if (!strcmp(w[0], "move") && n == 3)
		move_off(d, w[1], !strcmp(w[2], "tp") ? "tp" : script_vol(d, w[2], line)->name);
	else if (!strcmp(w[0], "fsync") && n == 2)
		fsync_vol(d, script_vol(d, w[1], line));
	else if (!strcmp(w[0], "snapshot") && n == 3)
		snapshot_as(d, script_vol(d, w[1], line), w[2]);
	else if (!strcmp(w[0], "remove") && n == 2)
		remove_vol(d, script_vol(d, w[1], line));
	else if (!strcmp(w[0], "extend") && n == 3 && !strcmp(w[1], "tp"))
		do_extend(d, NULL, strtoull(w[2], NULL, 0), POOL_MAX);
	else if (!strcmp(w[0], "extend") && n == 3)
		do_extend(d, script_vol(d, w[1], line), strtoull(w[2], NULL, 0), LINEAR_MAX);
	else if (!strcmp(w[0], "switch-map") && n == 2) {
		unsigned int region, path;

		if (sscanf(w[1], "%x:%x", &region, &path) != 2)
			die("script line %d: switch-map REGION:PATH (hexadecimal)", line);
		switch_map(d, &region, &path, 1);
	} else if (!strcmp(w[0], "restart") && n == 1)
		restart(d);
	else
		die("script line %d: cannot read '%s'", line, w[0]);
}

static void run_script(struct driver *d, const char *path)
{
	FILE *f = fopen(path, "re");
	char *text = NULL;
	size_t cap = 0;
	int line = 0;

	if (!f)
		die("cannot open the script '%s': %s", path, strerror(errno));
	while (getline(&text, &cap, f) > 0)
		script_step(d, text, ++line);
	free(text);
	fclose(f);
}

int main(int argc, char **argv)
{
	struct driver d = { 0 };
	unsigned long ops;

	if (argc != 9 && argc != 10) {
		fprintf(stderr, "usage: powercut-drive BIN POOL MNT LOG ORIGIN JOURNAL SEED OPS [SCRIPT]\n");
		return 2;
	}
	d.bin = argv[1];
	d.pool = argv[2];
	d.mnt = argv[3];
	d.log = argv[4];
	d.origin = argv[5];
	d.main_lane.rng = strtoull(argv[7], NULL, 0);
	d.side_lane.rng = d.main_lane.rng ^ 0x5eed5eed5eed5eedull;
	ops = strtoul(argv[8], NULL, 0);
	atomic_init(&d.next_id, SECTOR_ORIGIN_ID + 1);
	pthread_mutex_init(&d.journal_lock, NULL);
	pthread_mutex_init(&d.side_lock, NULL);
	d.journal = fopen(argv[6], "we");
	d.main_lane.buf = malloc(WRITE_MAX);
	d.side_lane.buf = malloc(WRITE_MAX);
	if (!d.journal || !d.main_lane.buf || !d.side_lane.buf)
		die("cannot create the journal '%s': %s", argv[6], strerror(errno));
	write_origin(d.origin);
	daemon_start(&d);
	setup(&d);
	if (argc == 10)
		run_script(&d, argv[9]);
	if (ops)
		side_start(&d);
	for (unsigned long i = 0; i < ops; i++)
		step(&d);
	if (ops)
		side_stop(&d);
	daemon_stop(&d);
	printf("powercut-drive: the memory budget unloaded %llu leaves\n",
	       (unsigned long long)d.evictions);
	fclose(d.journal);
	free(d.main_lane.buf);
	free(d.side_lane.buf);
	return 0;
}
