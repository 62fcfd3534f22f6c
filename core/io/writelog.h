/*
 * core/io/writelog.h: the write log, a recording of everything mapperfs
 * persists, for power-cut testing (tests/powercut/, docs/powercut.md).
 *
 * With MAPPERFS_WRITELOG=DIR in its environment, a process records every
 * write, zeroing, truncation and flush (fdatasync, fsync) it makes to a
 * raw device (core/io/device.c, core/io/engine.c) or to the pool database
 * (meta/store_vfs.c, a SQLite VFS over the default one) in one global
 * order, with the data.  A replay tool then builds the files as a power
 * cut at any point of that order could leave them.  Without the variable
 * nothing is recorded, and the hooks cost one test of a field that is 0.
 *
 * Positions.  One atomic counter orders everything.  Each record takes
 * the next position when the operation it describes has completed, and
 * is stored at that index of DIR/log (64-byte records), so the log's
 * length is always "every record so far": a test that stats DIR/log after
 * an fsync returned holds a position every later cut must honour.  An
 * operation also notes the counter's value when it was issued (a load,
 * not a new position): a write with issued <= P may be in flight, hence
 * partly on disk, at a cut at P; a flush covers exactly the writes whose
 * records precede its issue point.  Payloads go to DIR/data; a record
 * holds their offset and an FNV-1a hash.  A file is named once by a FILE
 * record (its path as payload) whose position is the file's id from then
 * on, so ids stay unique when a restarted daemon appends to the same log.
 *
 * Recording failures (the log's disk is full) abort the process: a test
 * must never go on with a log that misses a write.
 */
#ifndef MAPPERFS_WRITELOG_H
#define MAPPERFS_WRITELOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WRITELOG_MAGIC		0x31474f4c5753464dull	/* "MFSWLOG1", little-endian */

enum writelog_type {
	WRITELOG_NONE,			/* a position whose record is not written yet */
	WRITELOG_HEADER,		/* position 0: off = WRITELOG_MAGIC */
	WRITELOG_FILE,			/* names a file: payload = its path */
	WRITELOG_WRITE,			/* [off, off + len) = payload */
	WRITELOG_ZERO,			/* [off, off + len) reads zeros (punch, zero range) */
	WRITELOG_FLUSH,			/* durable: this file's records before @issued */
	WRITELOG_TRUNCATE,		/* size = off */
	WRITELOG_DELETE,		/* unlinked: payload = its path; file = 0 */
};

struct writelog_rec {
	uint32_t type;			/* enum writelog_type */
	uint32_t reserved;
	uint64_t file;			/* position of the FILE record naming it */
	uint64_t issued;		/* the counter when the operation was issued */
	uint64_t off;			/* bytes */
	uint64_t len;			/* bytes of payload or range */
	uint64_t data;			/* payload offset in DIR/data */
	uint64_t hash;			/* FNV-1a 64 of the payload */
	uint64_t seq;			/* this record's position (its index) */
};

/*
 * Deliberate bugs for proving that the power-cut suite catches them
 * (MAPPERFS_WRITELOG_BREAK=name[,name]).  Honoured only while recording.
 */
enum writelog_break {
	WRITELOG_BREAK_COMMIT_BEFORE_FLUSH = (1 << 0),	/* thin: COMMIT, then fdatasync data */
	WRITELOG_BREAK_REUSE_BEFORE_COMMIT = (1 << 1),	/* thin: a freed block is reused first, at once */
};

struct writelog;
extern struct writelog *_Atomic writelog_active;	/* NULL: not recording */

/* Is this process recording?  One relaxed load. */
static inline bool writelog_on(void)
{
	return atomic_load_explicit(&writelog_active, memory_order_relaxed) != NULL;
}

/*
 * Starts recording into @dir (created 0700 if absent; an existing log is
 * appended to).  @dir must be this user's or root's and writable by its
 * owner only, and is opened through no link (-EPERM, -ELOOP); DIR/log and
 * DIR/data must be regular files of their own (core/util/regfile.h: -ELOOP,
 * -EINVAL, -EMLINK).  @breaks: enum writelog_break bits.  Not
 * thread-safe: call before any I/O.  0 or -errno.
 */
int writelog_start(const char *dir, unsigned int breaks);
/* Stops recording and closes the log.  No I/O may be in flight. */
void writelog_stop(void);

/*
 * Starts recording if MAPPERFS_WRITELOG names a directory, with the bugs
 * MAPPERFS_WRITELOG_BREAK names; once per process, later calls only
 * answer.  Aborts if the variable is set and recording cannot start.
 * Returns whether the process records.
 */
bool writelog_from_env(void);

/*
 * Names @path in the log (writelog_from_env first).  Returns the file's
 * id, or 0 when not recording.  Blocks (a write).
 */
uint64_t writelog_file(const char *path);

/* The issue point of an operation about to start.  0 when not recording. */
uint64_t writelog_now(void);

/*
 * Records a completed operation on file @file (an id from writelog_file,
 * not 0), issued at @issued (writelog_now before it started).  Blocks
 * (writes to the log); the caller records before it reports completion.
 */
void writelog_write(uint64_t file, uint64_t issued, uint64_t off,
		    const void *buf, uint64_t len);
void writelog_zero(uint64_t file, uint64_t issued, uint64_t off, uint64_t len);
void writelog_flush(uint64_t file, uint64_t issued);
void writelog_truncate(uint64_t file, uint64_t issued, uint64_t size);
/* @path was unlinked. */
void writelog_delete(const char *path);

/* Is deliberate bug @b switched on?  False unless recording. */
bool writelog_broken(enum writelog_break b);

#endif
