/*
 * tools/report_field.h: the fields of a report (list, device list), as
 * lvs has them: each a name people type (-o, --sort, --select), a column
 * heading, a one-line description (-o help), a type, and how to read it
 * from one row.  The commands define the tables (report_volume.c,
 * report_device.c); report.h prints them and select.h filters by them,
 * so neither knows what a row is.
 */
#ifndef MAPPERFS_REPORT_FIELD_H
#define MAPPERFS_REPORT_FIELD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "size.h"
#include "tags.h"

enum field_type {
	FIELD_STRING,
	FIELD_SIZE,			/* bytes */
	FIELD_NUMBER,			/* a count or an id */
	FIELD_PERCENT,			/* hundredths of a percent */
	FIELD_BOOL,
	FIELD_TIME,			/* seconds since the epoch */
	FIELD_TAGS,			/* the row's tags */
};

/* One field of one row, as its field's get() reads it. */
struct field_value {
	bool none;			/* the row has no such value (shown empty) */
	const char *s;			/* FIELD_STRING; never NULL */
	int64_t n;			/* SIZE, NUMBER, PERCENT, BOOL (0/1), TIME */
	const struct tags *tags;	/* FIELD_TAGS */
	/*
	 * Printed after the value in a table, as "VALUE: DETAIL" (a failed
	 * object's reason in its state), and nowhere else; NULL: none.
	 */
	const char *detail;
	/*
	 * A SIZE in human units: how its last decimal is rounded (free space
	 * down and space used up, so that neither reads as the whole).
	 */
	enum size_rounding rounding;
	char buf[64];			/* room for a string get() makes (a uuid) */
};

struct report_field {
	const char *name;		/* "data_percent" */
	const char *heading;		/* "DATA%" */
	const char *help;		/* one line, for -o help */
	enum field_type type;
	unsigned int min_width;		/* of its column in a table */
	/* Fills @out (zeroed, s = "") from @row. */
	void (*get)(const void *row, struct field_value *out);
	/* lvs's or pvs's name for it ("lv_size"), taken as well; NULL: none. */
	const char *lvm_name;
};

/* The field named @name (or, by lvs, lvm_name) in @fields[0..nr), or NULL. */
const struct report_field *report_field_find(const struct report_field *fields, size_t nr,
					     const char *name, size_t len);

/* Reads field @f of @row into @out. */
void report_field_get(const struct report_field *f, const void *row, struct field_value *out);

#endif
