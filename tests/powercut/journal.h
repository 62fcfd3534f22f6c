/*
 * tests/powercut/journal.h: what the workload did, and when, in write log
 * positions.
 *
 * The driver appends one line per operation once it returned: its kind,
 * the log's length just before it was issued (q) and just after it
 * returned (a), its result (0 or an errno), and its arguments.  An
 * operation that returned at a is acknowledged for every cut at a or
 * later; one issued at q cannot have left a trace in a cut at q or
 * earlier.  Lines of one volume are in the order its operations were
 * made; the driver's side lane interleaves its own volume's lines with
 * the others, so positions are not monotonic across volumes.
 */
#ifndef POWERCUT_JOURNAL_H
#define POWERCUT_JOURNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JOURNAL_NAME_MAX	32

enum op_kind {
	OP_CREATE_POOL,			/* name, size */
	OP_CREATE_LINEAR,		/* name, size */
	OP_CREATE_SWITCH,		/* name, size, region_size, table, dump */
	OP_CREATE_THIN,			/* name, size, origin_size */
	OP_WRITE,			/* name, off, len, id */
	OP_WRITE_DSYNC,			/* the same with RWF_DSYNC: durable at its return */
	OP_FSYNC,			/* name */
	OP_DISCARD,			/* name, off, len */
	OP_SNAPSHOT,			/* name (the new one), from */
	OP_REMOVE,			/* name */
	OP_EXTEND,			/* name, size (the new one) */
	OP_SWITCH_MAP,			/* name, table, dump (after it) */
	OP_RESTART,			/* the daemon stopped cleanly and started */
	OP_MOVE,			/* name: a move of it started (no data changes) */
	OP_KINDS
};

struct op {
	enum op_kind kind;
	uint64_t q, a;			/* log positions: issued after q, returned before a */
	int rc;				/* 0, or the errno it failed with */
	char name[JOURNAL_NAME_MAX];
	char from[JOURNAL_NAME_MAX];	/* snapshot: its origin volume */
	uint64_t off, len;		/* bytes */
	uint64_t id;			/* write: the id its sectors carry */
	uint64_t size;			/* bytes */
	uint64_t origin_size;		/* bytes of the thin volume's external origin */
	uint64_t region_size;		/* bytes */
	char *table;			/* one digit per region: its path; else NULL */
	char *dump;			/* `switch-map --dump`, tokens joined by '_' */
};

struct journal {
	struct op *v;
	size_t nr, cap;
};

/* One line for @op.  0 or -errno. */
int journal_append(FILE *f, const struct op *op);

/* Reads a journal file.  0, -EBADMSG (a line it cannot parse), -errno. */
int journal_load(const char *path, struct journal *out);
void journal_release(struct journal *j);

const char *op_kind_name(enum op_kind k);

#endif
