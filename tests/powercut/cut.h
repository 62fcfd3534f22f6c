/*
 * tests/powercut/cut.h: the files a power cut leaves, built from a write
 * log (core/io/writelog.h) and a copy of the files from before it started.
 *
 * What a cut at position P may leave of one file, as a disk with a
 * volatile write cache and a journaling file system may:
 *   - every write, zeroing and truncation whose record precedes the issue
 *     point of the file's last flush that completed before P (durable);
 *   - plus any subset of the later ones that were issued by P (including
 *     those still in flight at P), in any order, each whole or torn at
 *     512-byte sectors of the file;
 *   - creating and unlinking a file are durable at once (journaled
 *     metadata); the SQLite -shm file is left out (SQLite rebuilds it).
 * Which subset is chosen is seeded: the same log, cut and seed give the
 * same files.  Policies, picked from the seed: nothing pending lands;
 * everything pending lands in order (what a process crash leaves); or a
 * random subset in random order with a third of it torn.
 */
#ifndef POWERCUT_CUT_H
#define POWERCUT_CUT_H

#include <stddef.h>
#include <stdint.h>

#include "wlog.h"

struct cut_file {
	char *rel;			/* path below the root */
	uint64_t *pos;			/* its records, in log order */
	size_t nr, cap;
};

struct cut_files {
	const struct wlog *log;
	struct cut_file *v;
	size_t nr;
};

/* Which pending records land: picked from the seed, or given. */
enum cut_policy {
	CUT_FROM_SEED = -1,
	CUT_NOTHING_LANDS,
	CUT_ALL_LAND,			/* in log order, whole: what a process crash leaves */
	CUT_SOME_LAND,			/* a random subset, in random order, a third torn */
};

/* What one cut did, for its report. */
struct cut_stats {
	const char *policy;
	uint64_t durable;		/* records applied as durable */
	uint64_t pending;		/* records that might have landed */
	uint64_t landed, torn;		/* of those, applied; applied torn */
};

/*
 * Groups the records of files below @root by file.  Fails (-EBADMSG, with
 * a message on stderr) if the log has a hole (a recorder died mid-record)
 * or a write to a file outside @root.
 */
int cut_files_load(const struct wlog *w, const char *root, struct cut_files *out);
void cut_files_release(struct cut_files *f);

/*
 * Writes into @out_dir every file as the cut at @pos with @seed leaves
 * it, starting from its copy in @base_dir (absent there: it starts
 * empty).  0 or -errno.
 */
int cut_build(const struct cut_files *f, const char *base_dir, const char *out_dir,
	      uint64_t pos, uint64_t seed, enum cut_policy policy, struct cut_stats *st);

#endif
