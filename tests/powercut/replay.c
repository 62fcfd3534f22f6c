/*
 * powercut-replay: builds what a power cut leaves, from a write log.
 *
 *   powercut-replay build LOG BASE ROOT OUT POS SEED [nothing|all|some]
 *       writes into OUT every file below ROOT (a pool directory) as a cut
 *       at position POS leaves it (cut.h), starting from the copies in
 *       BASE taken before the log started; which unflushed writes land
 *       is picked from SEED, or given; one line of figures on stdout
 *   powercut-replay pick LOG COUNT SEED
 *       prints COUNT lines "POS SEED": half of the positions uniform over
 *       the log, half just before or just after a flush completes (where
 *       the commit order matters most)
 *   powercut-replay dump LOG
 *       prints every record and checks every payload's hash
 *
 * The log format is core/io/writelog.h's; docs/powercut.md explains both.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cut.h"
#include "wlog.h"

static uint64_t splitmix(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int open_log(const char *dir, struct wlog *w)
{
	int r = wlog_open(dir, w);

	if (r)
		fprintf(stderr, "powercut-replay: cannot read the write log in '%s': %s\n", dir,
			strerror(-r));
	return r;
}

static int build(char **argv)
{
	static const char *const policies[] = { "nothing", "all", "some" };
	enum cut_policy policy = CUT_FROM_SEED;
	struct cut_files files;
	struct cut_stats st;
	struct wlog w;
	uint64_t pos = strtoull(argv[4], NULL, 0), seed = strtoull(argv[5], NULL, 0);
	int r;

	for (int i = 0; argv[6] && i < 3; i++)
		if (!strcmp(argv[6], policies[i]))
			policy = (enum cut_policy)i;
	if (argv[6] && policy == CUT_FROM_SEED) {
		fprintf(stderr, "powercut-replay: unknown policy '%s' (nothing, all, some)\n", argv[6]);
		return 2;
	}
	if (open_log(argv[0], &w))
		return 1;
	r = cut_files_load(&w, argv[2], &files);
	if (!r) {
		r = cut_build(&files, argv[1], argv[3], pos, seed, policy, &st);
		cut_files_release(&files);
	}
	wlog_close(&w);
	if (r) {
		fprintf(stderr, "powercut-replay: cannot build cut %" PRIu64 ": %s\n", pos,
			strerror(-r));
		return 1;
	}
	printf("cut %" PRIu64 " of %" PRIu64 " (seed %" PRIu64 "): %s; %" PRIu64
	       " durable, %" PRIu64 " pending, %" PRIu64 " landed, %" PRIu64 " torn\n",
	       pos, w.nr, seed, st.policy, st.durable, st.pending, st.landed, st.torn);
	return 0;
}

static int pick(char **argv)
{
	uint64_t count = strtoull(argv[1], NULL, 0), seed = strtoull(argv[2], NULL, 0);
	uint64_t rng = seed, *flushes, nr_flushes = 0;
	struct wlog w;

	if (open_log(argv[0], &w))
		return 1;
	flushes = calloc(w.nr, sizeof(*flushes));
	if (!flushes)
		return 1;
	for (uint64_t p = 0; p < w.nr; p++)
		if (w.rec[p].type == WRITELOG_FLUSH)
			flushes[nr_flushes++] = p;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t pos = splitmix(&rng) % (w.nr + 1);

		if (i % 2 && nr_flushes)
			pos = flushes[splitmix(&rng) % nr_flushes] + (splitmix(&rng) & 1);
		printf("%" PRIu64 " %" PRIu64 "\n", pos, splitmix(&rng) % 1000000000);
	}
	free(flushes);
	wlog_close(&w);
	return 0;
}

static const char *type_name(uint32_t t)
{
	static const char *const names[] = { "none", "header", "file", "write", "zero",
					     "flush", "truncate", "delete" };

	return t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}

static int dump(char **argv)
{
	struct wlog w;
	char *buf = NULL;
	int bad = 0;

	if (open_log(argv[0], &w))
		return 1;
	for (uint64_t p = 0; p < w.nr; p++) {
		const struct writelog_rec *r = &w.rec[p];

		printf("%" PRIu64 " %s file=%" PRIu64 " issued=%" PRIu64 " off=%" PRIu64
		       " len=%" PRIu64, p, type_name(r->type), r->file, r->issued, r->off, r->len);
		if (r->type == WRITELOG_FILE || r->type == WRITELOG_DELETE) {
			char *name = wlog_name(&w, r);

			printf(" %s", name ? name : "?");
			free(name);
		} else if (r->type == WRITELOG_WRITE) {
			buf = realloc(buf, r->len ? r->len : 1);
			if (!buf || wlog_payload(&w, r, buf) || wlog_hash(buf, r->len) != r->hash) {
				printf(" BAD PAYLOAD");
				bad++;
			}
		}
		if (r->type != WRITELOG_HEADER && r->seq != p) {
			printf(" BAD POSITION %" PRIu64, r->seq);
			bad++;
		}
		printf("\n");
	}
	free(buf);
	wlog_close(&w);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if ((argc == 8 || argc == 9) && !strcmp(argv[1], "build"))
		return build(argv + 2);
	if (argc == 5 && !strcmp(argv[1], "pick"))
		return pick(argv + 2);
	if (argc == 3 && !strcmp(argv[1], "dump"))
		return dump(argv + 2);
	fprintf(stderr, "usage: powercut-replay build LOG BASE ROOT OUT POS SEED [nothing|all|some]\n"
			"       powercut-replay pick LOG COUNT SEED\n"
			"       powercut-replay dump LOG\n");
	return 2;
}
