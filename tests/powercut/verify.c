/*
 * powercut-verify: checks what the daemon serves from a cut image against
 * the workload's journal (model.h).
 *
 *   powercut-verify JOURNAL POS MNT LIST DUMP
 *
 * The daemon runs on the image and serves it on MNT; LIST holds what
 * `mapperctl list --json` says, one "name kind size" line per volume;
 * DUMP what `mapperctl switch-map sw --dump` says (empty if there is no
 * sw).  Every volume file is read through the mount (what it reports as a
 * hole, SEEK_HOLE, is checked as zeros unread).  Prints one
 * line per breach, then "lost L inconsistent I": L acknowledged writes
 * (or discards) that read back older, I breaches of any other kind.
 * Exits 0 if both are 0, 1 if not, 2 if it could not check.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal.h"
#include "model.h"
#include "sector.h"

#define CHUNK		(1u << 20)
#define EXAMPLES	3		/* bad sectors shown per volume */

struct listed {
	char name[JOURNAL_NAME_MAX];
	char kind[16];
	uint64_t size;
};

struct image {
	struct listed *v;
	size_t nr;
	char *dump;			/* tokens joined by '_' */
};

struct tally {
	uint64_t pos;
	unsigned long inconsistent;
	bool *lost;			/* per journal op: lost at this cut */
	unsigned long nr_lost;
};

static int load_list(const char *path, struct image *img)
{
	FILE *f = fopen(path, "re");
	struct listed l;

	if (!f)
		return -errno;
	while (fscanf(f, "%31s %15s %" SCNu64, l.name, l.kind, &l.size) == 3) {
		struct listed *v = realloc(img->v, (img->nr + 1) * sizeof(*v));

		if (!v)
			break;
		img->v = v;
		img->v[img->nr++] = l;
	}
	fclose(f);
	return 0;
}

/* The dump's tokens joined by '_', as the driver journals them. */
static int load_dump(const char *path, struct image *img)
{
	FILE *f = fopen(path, "re");
	char tok[256];
	size_t len = 0;

	if (!f)
		return -errno;
	img->dump = calloc(1, 1);
	while (img->dump && fscanf(f, "%255s", tok) == 1) {
		char *d = realloc(img->dump, len + strlen(tok) + 2);

		if (!d)
			break;
		img->dump = d;
		len += (size_t)sprintf(d + len, "%s%s", len ? "_" : "", tok);
	}
	fclose(f);
	return 0;
}

static void image_of(void *arg, const char *name, struct image_vol *out)
{
	struct image *img = arg;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < img->nr; i++) {
		if (strcmp(img->v[i].name, name))
			continue;
		out->present = true;
		snprintf(out->kind, sizeof(out->kind), "%s", img->v[i].kind);
		out->size = img->v[i].size;
		out->dump = !strcmp(out->kind, "switch") ? img->dump : NULL;
	}
}

static void report(void *arg, const char *msg)
{
	struct tally *t = arg;

	printf("cut %" PRIu64 ": %s\n", t->pos, msg);
	t->inconsistent++;
}

/* Checks sectors [first, first + nr) against @data (nr * SECTOR bytes). */
static void check_sectors(struct model *m, int v, uint64_t first, uint64_t nr,
			  const char *data, struct tally *t, unsigned long *wrong,
			  unsigned long *lost)
{
	const char *name = model_vol_name(m, v);
	char why[256];

	for (uint64_t i = 0; i < nr; i++) {
		uint64_t s = first + i;
		int op = -1;
		enum verdict vd = model_check_sector(m, v, s, data + i * SECTOR, &op, why,
						     sizeof(why));

		if (vd == SECTOR_OK)
			continue;
		if (vd == SECTOR_LOST) {
			if (!t->lost[op]) {
				t->lost[op] = true;
				t->nr_lost++;
			}
			if ((*lost)++ < EXAMPLES)
				printf("cut %" PRIu64 ": %s: sector at %" PRIu64 " lost acknowledged journal line %d; it holds %s\n",
				       t->pos, name, s * SECTOR, op + 1, why);
		} else if ((*wrong)++ < EXAMPLES) {
			printf("cut %" PRIu64 ": %s: sector at %" PRIu64 " holds %s, which it may not\n",
			       t->pos, name, s * SECTOR, why);
		}
	}
}

/*
 * Every sector of volume @v.  What the daemon reports as a hole
 * (SEEK_HOLE; thin volumes report unmapped blocks) is checked as zeros
 * without being read, so a big sparse volume costs little.
 */
static int check_data(struct model *m, int v, const char *mnt, const struct image_vol *img,
		      struct tally *t)
{
	const char *name = model_vol_name(m, v);
	unsigned long wrong = 0, lost = 0;
	char path[PATH_MAX];
	uint64_t off = 0, size;
	struct stat st;
	char *buf, *zeros;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", mnt, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		printf("cut %" PRIu64 ": %s: listed but cannot be opened: %s\n", t->pos, name,
		       strerror(errno));
		t->inconsistent++;
		if (fd >= 0)
			close(fd);
		return 0;
	}
	size = (uint64_t)st.st_size;
	if (size != img->size) {
		printf("cut %" PRIu64 ": %s: the file has %" PRIu64 " bytes, the list says %" PRIu64 "\n",
		       t->pos, name, size, img->size);
		t->inconsistent++;
	}
	buf = malloc(CHUNK);
	zeros = calloc(1, CHUNK);
	if (!buf || !zeros)
		return -ENOMEM;
	while (off < size) {
		off_t data = lseek(fd, (off_t)off, SEEK_DATA);
		uint64_t end = data < 0 ? size : (uint64_t)data;

		for (; off < end; off += CHUNK < end - off ? CHUNK : end - off)
			check_sectors(m, v, off / SECTOR,
				      (CHUNK < end - off ? CHUNK : end - off) / SECTOR, zeros, t,
				      &wrong, &lost);
		if (off >= size)
			break;
		data = lseek(fd, (off_t)off, SEEK_HOLE);
		end = data < 0 ? size : (uint64_t)data;
		while (off < end) {
			ssize_t n = pread(fd, buf, CHUNK < end - off ? CHUNK : end - off, (off_t)off);

			if (n <= 0) {
				printf("cut %" PRIu64 ": %s: reading at %" PRIu64 " failed: %s\n",
				       t->pos, name, off, n ? strerror(errno) : "early end");
				wrong++;
				off = size;
				break;
			}
			check_sectors(m, v, off / SECTOR, (uint64_t)n / SECTOR, buf, t, &wrong,
				      &lost);
			off += (uint64_t)n;
		}
	}
	if (wrong) {
		printf("cut %" PRIu64 ": %s: %lu sectors hold what they may not\n", t->pos, name,
		       wrong);
		t->inconsistent++;
	}
	free(buf);
	free(zeros);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct image img = { 0 };
	struct journal j;
	struct tally t = { 0 };
	struct model *m;
	int r;

	if (argc != 6) {
		fprintf(stderr, "usage: powercut-verify JOURNAL POS MNT LIST DUMP\n");
		return 2;
	}
	t.pos = strtoull(argv[2], NULL, 0);
	r = journal_load(argv[1], &j);
	if (!r)
		r = load_list(argv[4], &img);
	if (!r)
		r = load_dump(argv[5], &img);
	if (!r)
		r = model_build(&j, t.pos, image_of, &img, &m);
	if (r) {
		fprintf(stderr, "powercut-verify: cannot load the journal or the image: %s\n",
			strerror(-r));
		return 2;
	}
	t.lost = calloc(j.nr + 1, sizeof(*t.lost));
	for (int v = 0; t.lost && v < model_nr_vols(m); v++) {
		struct image_vol iv;
		bool data;

		image_of(&img, model_vol_name(m, v), &iv);
		model_check_admin(m, v, report, &t, &data);
		if (data && check_data(m, v, argv[3], &iv, &t))
			return 2;
	}
	printf("lost %lu inconsistent %lu\n", t.nr_lost, t.inconsistent);
	free(t.lost);
	free(img.v);
	free(img.dump);
	model_free(m);
	journal_release(&j);
	return t.nr_lost || t.inconsistent ? 1 : 0;
}
