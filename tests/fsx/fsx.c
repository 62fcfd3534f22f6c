/*
 * mapperfs-fsx: random operations on one file, every read checked against
 * a model of what its bytes must be.
 *
 *   mapperfs-fsx [-N OPS] [-S SEED] [-l LEN] [--good FILE] [--resume] PATH
 *
 * fsx, the file system exerciser of xfstests and LTP, finds the bugs that
 * hand-written tests do not think of: a write that lands a block off, a
 * punched range that reads back stale, a mapping that shows old bytes
 * after a pwrite.  Debian 12 does not package it, and we may not copy its
 * source, so this is the same idea written afresh for our files: PATH is
 * a volume file, of a fixed size (it neither grows nor shrinks, so there
 * is no truncate here), and the exerciser works on its first LEN bytes
 * (st_size, or -l if smaller).  A seeded PRNG (splitmix64: the run is a
 * function of -S) picks each operation, its offset and its length (up to
 * 256 KiB, half of them 4 KiB-aligned): pread, pwrite, a read and a write
 * through a shared mapping (msync(MS_SYNC) after the write), punching a
 * hole and zeroing a range (both read back as zeros), fsync or fdatasync,
 * and closing and opening the file again.  What a write writes is drawn
 * from the seed and the operation's number, so a block that missed a
 * later write shows the earlier one's bytes, not a coincidence.
 *
 * The model starts as what PATH holds (or, with --resume, as below), and
 * every read is compared with it.  On a mismatch it prints the
 * operation, the first bad byte and the last operations before it, saves
 * the model (--good) and exits 1.  --good FILE keeps the model across
 * runs: written at the end, and with --resume read first and compared
 * with all LEN bytes of PATH, so a run after a daemon restart (or on a
 * snapshot) verifies everything the previous run left before it goes on.
 *
 * Exits 0 when every read matched, 1 on a mismatch or a failed operation
 * on PATH, 2 on a usage or set-up error (one line).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_IO		(256 * 1024)	/* bytes: the longest read, write or range */
#define RING		20		/* operations shown before a mismatch */
#define USAGE		"usage: mapperfs-fsx [-N OPS] [-S SEED] [-l LEN] [--good FILE] [--resume] PATH"

enum op_kind { OP_READ, OP_WRITE, OP_MAPREAD, OP_MAPWRITE, OP_PUNCH, OP_ZERO,
	       OP_FSYNC, OP_FDATASYNC, OP_REOPEN, NR_OPS };

static const struct {
	const char *name;		/* in the op history */
	const char *plural;		/* in the last line */
	unsigned int weight;		/* chances in 100 */
} kinds[NR_OPS] = {
	[OP_READ]     = { "read",     "reads",          20 },
	[OP_WRITE]    = { "write",    "writes",         25 },
	[OP_MAPREAD]  = { "mapread",  "mapped reads",   10 },
	[OP_MAPWRITE] = { "mapwrite", "mapped writes",  10 },
	[OP_PUNCH]    = { "punch",    "punched holes",  10 },
	[OP_ZERO]     = { "zero",     "zeroed ranges",  10 },
	[OP_FSYNC]    = { "fsync",    "fsyncs",          5 },
	[OP_FDATASYNC] = { "fdatasync", "fdatasyncs",    5 },
	[OP_REOPEN]   = { "reopen",   "reopens",         5 },
};

struct op_rec {
	uint64_t n;			/* 1-based; 0: the slot is empty */
	enum op_kind kind;
	uint64_t off, len;		/* bytes */
};

struct fsx {
	const char *path, *good;
	int fd;
	uint64_t len;			/* bytes exercised, from offset 0 */
	uint8_t *model;			/* len bytes: what PATH must hold */
	uint8_t *buf;			/* MAX_IO bytes */
	uint64_t seed, rng;		/* -S, and the op stream's state */
	uint64_t n;			/* operations done */
	uint64_t count[NR_OPS];
	bool unsupported[NR_OPS];	/* EOPNOTSUPP once: never chosen again */
	struct op_rec ring[RING];
};

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	fputs("mapperfs-fsx: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void save_model(const struct fsx *f)
{
	int fd = open(f->good, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	uint64_t done = 0;
	ssize_t r = 0;

	if (fd < 0)
		die("cannot create %s: %s", f->good, strerror(errno));
	while (done < f->len && (r = write(fd, f->model + done, f->len - done)) > 0)
		done += (uint64_t)r;
	if (r < 0 || close(fd))
		die("cannot write %s: %s", f->good, strerror(errno));
}

/* The file under test failed: what, the history, the model; exit 1. */
static void __attribute__((noreturn, format(printf, 2, 3))) fail(struct fsx *f, const char *fmt, ...)
{
	const struct op_rec *o;
	va_list ap;
	unsigned int i;

	fprintf(stderr, "mapperfs-fsx: FAIL at op %" PRIu64 " (seed %" PRIu64 "): ", f->n, f->seed);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	for (i = 1; i <= RING; i++) {
		o = &f->ring[(f->n + i) % RING];
		if (o->n && o->kind >= OP_FSYNC)
			fprintf(stderr, "  op %6" PRIu64 " %s\n", o->n, kinds[o->kind].name);
		else if (o->n)
			fprintf(stderr, "  op %6" PRIu64 " %-8s off 0x%09" PRIx64 " len 0x%05" PRIx64 "\n",
				o->n, kinds[o->kind].name, o->off, o->len);
	}
	if (f->good) {
		save_model(f);
		fprintf(stderr, "mapperfs-fsx: the model is in %s\n", f->good);
	}
	exit(1);
}

static void check(struct fsx *f, const uint8_t *got, uint64_t off, uint64_t len, const char *what)
{
	const uint8_t *want = f->model + off;
	uint64_t i;

	if (!memcmp(got, want, len))
		return;
	for (i = 0; got[i] == want[i]; i++)
		;
	fail(f, "%s of 0x%" PRIx64 " bytes at 0x%" PRIx64 ": byte at offset 0x%" PRIx64
	     " is 0x%02x, expected 0x%02x", what, len, off, off + i, got[i], want[i]);
}

static void do_pread(struct fsx *f, uint8_t *to, uint64_t off, uint64_t len)
{
	ssize_t r = pread(f->fd, to, len, (off_t)off);

	if (r < 0)
		fail(f, "pread of 0x%" PRIx64 " bytes at 0x%" PRIx64 ": %s", len, off, strerror(errno));
	if ((uint64_t)r != len)
		fail(f, "short pread: 0x%zx of 0x%" PRIx64 " bytes at 0x%" PRIx64, (size_t)r, len, off);
}

/* The bytes op n writes: a function of the seed and n alone. */
static void fill(const struct fsx *f, uint8_t *to, uint64_t len)
{
	uint64_t s = f->seed ^ (f->n * 0xd1342543de82ef95ULL), x;
	uint64_t i;

	for (i = 0; i < len; i += sizeof(x)) {
		x = splitmix64(&s);
		memcpy(to + i, &x, len - i < sizeof(x) ? len - i : sizeof(x));
	}
}

/* Maps the pages that hold [off, off + len); *base points at off. */
static void *map(struct fsx *f, uint64_t off, uint64_t len, uint8_t **base, size_t *map_len)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), start = off & ~(page - 1);
	void *p;

	*map_len = off + len - start;
	p = mmap(NULL, *map_len, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, (off_t)start);
	if (p == MAP_FAILED)
		fail(f, "mmap of 0x%zx bytes at 0x%" PRIx64 ": %s", *map_len, start, strerror(errno));
	*base = (uint8_t *)p + (off - start);
	return p;
}

static void op_io(struct fsx *f, enum op_kind k, uint64_t off, uint64_t len)
{
	uint8_t *base;
	size_t map_len;
	ssize_t r;
	void *p;

	switch (k) {
	case OP_READ:
		do_pread(f, f->buf, off, len);
		check(f, f->buf, off, len, "pread");
		return;
	case OP_MAPREAD:
		p = map(f, off, len, &base, &map_len);
		memcpy(f->buf, base, len);
		munmap(p, map_len);
		check(f, f->buf, off, len, "mapped read");
		return;
	case OP_WRITE:
		fill(f, f->buf, len);
		r = pwrite(f->fd, f->buf, len, (off_t)off);
		if (r < 0)
			fail(f, "pwrite of 0x%" PRIx64 " bytes at 0x%" PRIx64 ": %s", len, off, strerror(errno));
		if ((uint64_t)r != len)
			fail(f, "short pwrite: 0x%zx of 0x%" PRIx64 " bytes at 0x%" PRIx64, (size_t)r, len, off);
		break;
	default:		/* OP_MAPWRITE */
		fill(f, f->buf, len);
		p = map(f, off, len, &base, &map_len);
		memcpy(base, f->buf, len);
		if (msync(p, map_len, MS_SYNC))
			fail(f, "msync of 0x%zx bytes at 0x%" PRIx64 ": %s", map_len, off, strerror(errno));
		munmap(p, map_len);
		break;
	}
	memcpy(f->model + off, f->buf, len);
}

static void op_fallocate(struct fsx *f, enum op_kind k, uint64_t off, uint64_t len)
{
	int mode = (k == OP_PUNCH ? FALLOC_FL_PUNCH_HOLE : FALLOC_FL_ZERO_RANGE) | FALLOC_FL_KEEP_SIZE;

	if (fallocate(f->fd, mode, (off_t)off, (off_t)len) == 0) {
		memset(f->model + off, 0, len);
	} else if (errno == EOPNOTSUPP) {
		printf("mapperfs-fsx: %s: fallocate(%s) is not supported: not chosen again\n",
		       f->path, k == OP_PUNCH ? "PUNCH_HOLE" : "ZERO_RANGE");
		f->unsupported[k] = true;
	} else {
		fail(f, "fallocate(%s) of 0x%" PRIx64 " bytes at 0x%" PRIx64 ": %s",
		     kinds[k].name, len, off, strerror(errno));
	}
}

static void op_file(struct fsx *f, enum op_kind k)
{
	if (k != OP_REOPEN) {
		if ((k == OP_FSYNC ? fsync(f->fd) : fdatasync(f->fd)) < 0)
			fail(f, "%s: %s", kinds[k].name, strerror(errno));
		return;
	}
	if (close(f->fd) < 0)
		fail(f, "close: %s", strerror(errno));
	f->fd = open(f->path, O_RDWR);
	if (f->fd < 0)
		fail(f, "open again: %s", strerror(errno));
}

static enum op_kind pick_kind(struct fsx *f)
{
	unsigned int k, total = 0, at;

	for (k = 0; k < NR_OPS; k++)
		total += f->unsupported[k] ? 0 : kinds[k].weight;
	at = (unsigned int)(splitmix64(&f->rng) % total);
	for (k = 0; at >= kinds[k].weight || f->unsupported[k]; k++)
		at -= f->unsupported[k] ? 0 : kinds[k].weight;
	return (enum op_kind)k;
}

static void step(struct fsx *f)
{
	enum op_kind k = pick_kind(f);
	uint64_t off = splitmix64(&f->rng) % f->len;
	uint64_t len = 1 + splitmix64(&f->rng) % MAX_IO;
	struct op_rec *o;

	if (splitmix64(&f->rng) & 1) {
		off &= ~4095ULL;
		len = (len + 4095) & ~4095ULL;
	}
	if (len > f->len - off)
		len = f->len - off;
	if (k >= OP_FSYNC)
		off = len = 0;
	f->n++;
	o = &f->ring[f->n % RING];
	*o = (struct op_rec){ f->n, k, off, len };
	if (k <= OP_MAPWRITE)
		op_io(f, k, off, len);
	else if (k <= OP_ZERO)
		op_fallocate(f, k, off, len);
	else
		op_file(f, k);
	f->count[k] += !f->unsupported[k];	/* not the one that found it so */
}

/* Reads all LEN bytes of PATH: into the model, or (verify) checked with it. */
static void read_path(struct fsx *f, bool verify)
{
	uint64_t off, n;

	for (off = 0; off < f->len; off += n) {
		n = f->len - off < MAX_IO ? f->len - off : MAX_IO;
		do_pread(f, verify ? f->buf : f->model + off, off, n);
		if (verify)
			check(f, f->buf, off, n, "the --resume check: pread");
	}
}

/* --resume: the model is the --good file, and all of PATH must match it. */
static void resume(struct fsx *f)
{
	int fd = open(f->good, O_RDONLY);
	struct stat st;

	if (fd < 0 || fstat(fd, &st))
		die("cannot open %s: %s", f->good, strerror(errno));
	if ((uint64_t)st.st_size != f->len)
		die("%s holds %jd bytes, but %s is exercised over %" PRIu64,
		    f->good, (intmax_t)st.st_size, f->path, f->len);
	if (pread(fd, f->model, f->len, 0) != (ssize_t)f->len)
		die("cannot read all of %s", f->good);
	close(fd);
	read_path(f, true);
	printf("mapperfs-fsx: %s: all %" PRIu64 " bytes match %s\n", f->path, f->len, f->good);
}

static uint64_t number(const char *s, const char *what)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		die("invalid %s '%s'", what, s);
	switch (*end) {
	case 'K': v <<= 10; end++; break;
	case 'M': v <<= 20; end++; break;
	case 'G': v <<= 30; end++; break;
	}
	if (*end)
		die("invalid %s '%s'", what, s);
	return v;
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "good", required_argument, NULL, 'g' },
		{ "resume", no_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	struct fsx f = { .seed = 1 };
	uint64_t ops = 1000, limit = UINT64_MAX;
	bool do_resume = false;
	struct stat st;
	int c, k;

	opterr = 0;			/* one line: ours */
	while ((c = getopt_long(argc, argv, "N:S:l:", longs, NULL)) != -1) {
		switch (c) {
		case 'N': ops = number(optarg, "-N"); break;
		case 'S': f.seed = number(optarg, "-S"); break;
		case 'l': limit = number(optarg, "-l"); break;
		case 'g': f.good = optarg; break;
		case 'r': do_resume = true; break;
		default: die("bad option '%s'; " USAGE, argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		die(USAGE);
	if (do_resume && !f.good)
		die("--resume needs --good FILE: the model to resume from");
	f.path = argv[optind];
	f.fd = open(f.path, O_RDWR);
	if (f.fd < 0 || fstat(f.fd, &st))
		die("cannot open %s: %s", f.path, strerror(errno));
	f.len = (uint64_t)st.st_size < limit ? (uint64_t)st.st_size : limit;
	if (!f.len)
		die("%s is empty: nothing to exercise", f.path);
	f.model = calloc(1, f.len);
	f.buf = malloc(MAX_IO);
	if (!f.model || !f.buf)
		die("cannot allocate a model of %" PRIu64 " bytes", f.len);
	f.rng = f.seed;
	if (do_resume)
		resume(&f);
	else
		read_path(&f, false);
	while (f.n < ops)
		step(&f);
	if (close(f.fd) < 0)
		fail(&f, "close: %s", strerror(errno));
	if (f.good)
		save_model(&f);
	printf("mapperfs-fsx: %" PRIu64 " ops (", f.n);
	for (k = 0; k < NR_OPS; k++)
		printf("%s%" PRIu64 " %s", k ? ", " : "", f.count[k], kinds[k].plural);
	printf("), seed %" PRIu64 ", all reads matched\n", f.seed);
	free(f.model);
	free(f.buf);
	return 0;
}
