/*
 * tools/report.h: lvs's report options for list and device list: -o
 * FIELDS (or +FIELDS, added to the defaults; "help" lists them), --select
 * EXPR (select.h), --sort [-]FIELD,..., --units b|k|m|g|t|h, --nosuffix,
 * --noheadings, --separator STR, and --json, which prints the columns
 * chosen as a JSON array of objects, sizes in bytes.
 *
 * A command lists its fields (report_field.h) and its default columns,
 * hands every option it parses to report_option(), resolves them with
 * report_prepare(), and prints its rows with report_print().  Without any
 * of these options, the table is the command's classic one,
 * column for column: sizes as "1.00 GiB", columns two spaces apart, as
 * wide as their widest cell or their heading, numbers to the right, the
 * last column unpadded, and nothing at all when there is no row.
 */
#ifndef MAPPERFS_REPORT_H
#define MAPPERFS_REPORT_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "report_field.h"
#include "select.h"

/* The report options, for a command's long options (vals j o S O u N H s). */
#define REPORT_OPTIONS							\
	{ "json", no_argument, NULL, 'j' },				\
	{ "options", required_argument, NULL, 'o' },			\
	{ "select", required_argument, NULL, 'S' },			\
	{ "sort", required_argument, NULL, 'O' },			\
	{ "units", required_argument, NULL, 'u' },			\
	{ "nosuffix", no_argument, NULL, 'N' },				\
	{ "noheadings", no_argument, NULL, 'H' },			\
	{ "separator", required_argument, NULL, 's' }
/* lvs's short forms: -o, -O (--sort), -S (--select). */
#define REPORT_SHORT_OPTIONS	":o:O:S:"

#define REPORT_ERROR_LEN	(SELECT_ERROR_LEN + 96)	/* room for the expression too */

struct report_key {
	const struct report_field *field;
	bool descending;
};

struct report {
	const struct report_field *fields;
	size_t nr_fields;
	const char *defaults;		/* the default columns, "name,size" */
	/* As given, until report_prepare(). */
	char *columns;			/* every -o, joined by ',' */
	const char *sort, *select_expr, *units_arg;
	bool json, nosuffix, noheadings;
	const char *separator;		/* NULL: aligned columns */
	/* Resolved by report_prepare(). */
	bool help;			/* -o help: list the fields, nothing else */
	/* --json without -o, --select, --sort: the command's own objects, whole */
	bool own_json;
	const struct report_field **cols;
	size_t nr_cols;
	struct report_key *keys;
	size_t nr_keys;
	struct select *select;
	char units;			/* 0: "1.00 GiB"; else b, k, m, g, t, h */
};

void report_init(struct report *r, const struct report_field *fields, size_t nr,
		 const char *defaults);
void report_release(struct report *r);

/*
 * Takes option @c (a val of REPORT_OPTIONS) with @arg.  1 if it was one,
 * 0 if it is not a report option, -ENOMEM.
 */
int report_option(struct report *r, int c, const char *arg);

/*
 * Resolves the options against the fields.  0, -ENOMEM, or -EINVAL with
 * one line in @why naming what is wrong ("unknown field 'sise' in -o",
 * "invalid --select 'x': ...", "unknown --units 'q'").
 */
int report_prepare(struct report *r, char why[REPORT_ERROR_LEN]);

/* -o help: every field, its name and description, one a line. */
void report_help(const struct report *r, FILE *f);

/*
 * Prints the rows @rows[0..nr) (each @row_size bytes) that --select
 * keeps, in --sort's order (by their order in @rows where the keys tie),
 * as a table or JSON.  0 or -ENOMEM.
 */
int report_print(const struct report *r, FILE *f, const void *rows, size_t nr,
		 size_t row_size);

#endif
