/*
 * tools/report.c: lvs's report options (report.h): the columns, the
 * order, the selection, and the table or JSON they make.
 *
 * Rows stay the command's own (pool_volume_info, pool_device_info); a
 * field reads one value of a row, so filtering, sorting and printing go
 * by fields alone.  A table is built in two passes: the cells are
 * formatted once, then printed padded to each column's widest.
 */
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "size.h"

#define CELL_LEN	1024		/* bytes of a cell's text at most; longer is cut */

void report_init(struct report *r, const struct report_field *fields, size_t nr,
		 const char *defaults)
{
	*r = (struct report){ .fields = fields, .nr_fields = nr, .defaults = defaults };
}

void report_release(struct report *r)
{
	free(r->columns);
	free(r->cols);
	free(r->keys);
	select_free(r->select);
	*r = (struct report){ 0 };
}

/* Appends -o @arg to the columns asked for so far, lvs's way. */
static int add_columns(struct report *r, const char *arg)
{
	size_t had = r->columns ? strlen(r->columns) : 0;
	char *c = realloc(r->columns, had + strlen(arg) + 2);

	if (!c)
		return -ENOMEM;
	if (had)
		c[had++] = ',';
	strcpy(c + had, arg);
	r->columns = c;
	return 1;
}

int report_option(struct report *r, int c, const char *arg)
{
	switch (c) {
	case 'j':
		r->json = true;
		return 1;
	case 'o':
		return add_columns(r, arg);
	case 'S':
		r->select_expr = arg;
		return 1;
	case 'O':
		r->sort = arg;
		return 1;
	case 'u':
		r->units_arg = arg;
		return 1;
	case 'N':
		r->nosuffix = true;
		return 1;
	case 'H':
		r->noheadings = true;
		return 1;
	case 's':
		r->separator = arg;
		return 1;
	}
	return 0;
}

static int fail(char why[REPORT_ERROR_LEN], const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(char why[REPORT_ERROR_LEN], const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, REPORT_ERROR_LEN, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/*
 * Adds the fields of the list @list ("name,size") to r->cols; a '+'
 * before one is the mark of a later -o +FIELD, whose field it adds.
 */
static int add_cols(struct report *r, const char *list, char why[REPORT_ERROR_LEN])
{
	for (const char *p = list; *p; p += *p == ',') {
		const struct report_field *f, **cols;
		size_t len;

		p += *p == '+';
		len = strcspn(p, ",");
		f = report_field_find(r->fields, r->nr_fields, p, len);

		if (!f)
			return fail(why, "unknown field '%.*s' in -o (-o help lists them)",
				    (int)len, p);
		cols = realloc(r->cols, (r->nr_cols + 1) * sizeof(*cols));
		if (!cols)
			return -ENOMEM;
		cols[r->nr_cols++] = f;
		r->cols = cols;
		p += len;
	}
	return 0;
}

static int prepare_columns(struct report *r, char why[REPORT_ERROR_LEN])
{
	const char *list = r->columns ? r->columns : r->defaults;
	int rc;

	if (!strcmp(list, "help")) {
		r->help = true;
		return 0;
	}
	if (list[0] == '+') {
		rc = add_cols(r, r->defaults, why);
		if (rc)
			return rc;
		list++;
	}
	if (!*list)
		return fail(why, "-o names no field");
	return add_cols(r, list, why);
}

static int prepare_sort(struct report *r, char why[REPORT_ERROR_LEN])
{
	if (!r->sort)
		return 0;
	for (const char *p = r->sort; *p; p += *p == ',') {
		bool desc = *p == '-';
		size_t len;
		const struct report_field *f;
		struct report_key *keys;

		p += desc || *p == '+';
		len = strcspn(p, ",");
		f = report_field_find(r->fields, r->nr_fields, p, len);
		if (!f)
			return fail(why, "unknown field '%.*s' in --sort (-o help lists them)",
				    (int)len, p);
		keys = realloc(r->keys, (r->nr_keys + 1) * sizeof(*keys));
		if (!keys)
			return -ENOMEM;
		keys[r->nr_keys++] = (struct report_key){ .field = f, .descending = desc };
		r->keys = keys;
		p += len;
	}
	return r->nr_keys ? 0 : fail(why, "--sort names no field");
}

static int prepare_units(struct report *r, char why[REPORT_ERROR_LEN])
{
	const char *u = r->units_arg;

	if (!u)
		r->units = r->nosuffix ? 'h' : 0;
	else if (strlen(u) == 1 && strchr("bkmgth", u[0]))
		r->units = u[0];
	else
		return fail(why, "unknown --units '%s': b, k, m, g, t or h", u);
	return 0;
}

int report_prepare(struct report *r, char why[REPORT_ERROR_LEN])
{
	char sel_why[SELECT_ERROR_LEN];
	int rc;

	r->own_json = r->json && !r->columns && !r->sort && !r->select_expr;
	rc = prepare_columns(r, why);
	if (!rc)
		rc = prepare_sort(r, why);
	if (!rc)
		rc = prepare_units(r, why);
	if (rc || !r->select_expr)
		return rc;
	rc = select_parse(r->select_expr, r->fields, r->nr_fields, &r->select, sel_why);
	if (rc == -EINVAL)
		snprintf(why, REPORT_ERROR_LEN, "invalid --select '%.64s': %s", r->select_expr,
			 sel_why);
	return rc;
}

void report_help(const struct report *r, FILE *f)
{
	int w = 0;

	for (size_t i = 0; i < r->nr_fields; i++)
		if ((int)strlen(r->fields[i].name) > w)
			w = (int)strlen(r->fields[i].name);
	for (size_t i = 0; i < r->nr_fields; i++) {
		const struct report_field *fi = &r->fields[i];

		fprintf(f, "%-*s  %s", w, fi->name, fi->help);
		if (fi->lvm_name)
			fprintf(f, " (LVM: %s)", fi->lvm_name);
		fputc('\n', f);
	}
}

/* ---- order ------------------------------------------------------------ */

struct order {
	const struct report *r;
	const char *rows;
	size_t row_size;
};

static int compare_values(const struct report_field *f, const struct field_value *a,
			  const struct field_value *b)
{
	if (a->none || b->none)
		return (int)b->none - (int)a->none;	/* none first */
	if (f->type == FIELD_STRING)
		return strcmp(a->s, b->s);
	if (f->type == FIELD_TAGS) {
		size_t n = a->tags->nr < b->tags->nr ? a->tags->nr : b->tags->nr;

		for (size_t i = 0; i < n; i++) {
			int c = strcmp(a->tags->v[i], b->tags->v[i]);

			if (c)
				return c;
		}
		return (a->tags->nr > b->tags->nr) - (a->tags->nr < b->tags->nr);
	}
	return (a->n > b->n) - (a->n < b->n);
}

static int compare_rows(const void *pa, const void *pb, void *arg)
{
	const struct order *o = arg;
	size_t ia = *(const size_t *)pa, ib = *(const size_t *)pb;

	for (size_t k = 0; k < o->r->nr_keys; k++) {
		const struct report_key *key = &o->r->keys[k];
		struct field_value a, b;
		int c;

		report_field_get(key->field, o->rows + ia * o->row_size, &a);
		report_field_get(key->field, o->rows + ib * o->row_size, &b);
		c = compare_values(key->field, &a, &b);
		if (c)
			return key->descending ? -c : c;
	}
	return (ia > ib) - (ia < ib);		/* as they came: stable */
}

/* The indexes of the rows to print, in order; *out malloc'ed. */
static int rows_chosen(const struct report *r, const void *rows, size_t nr, size_t row_size,
		       size_t **out, size_t *nr_out)
{
	struct order o = { .r = r, .rows = rows, .row_size = row_size };
	size_t *idx = malloc((nr + 1) * sizeof(*idx)), n = 0;

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < nr; i++)
		if (!r->select || select_match(r->select, o.rows + i * row_size))
			idx[n++] = i;
	qsort_r(idx, n, sizeof(*idx), compare_rows, &o);
	*out = idx;
	*nr_out = n;
	return 0;
}

/* ---- cells ------------------------------------------------------------ */

static void format_units(const struct report *r, uint64_t bytes, char *buf, size_t len)
{
	static const char units[] = "kmgtpe";
	unsigned int shift = 0;
	char unit = r->units;

	if (unit == 'h') {
		unit = 'b';
		for (unsigned int i = 0; i < sizeof(units) - 1 && bytes >> (10 * (i + 1)); i++)
			unit = units[i];
	}
	if (unit == 'b') {
		snprintf(buf, len, "%" PRIu64 "%s", bytes, r->nosuffix ? "" : "B");
		return;
	}
	shift = 10 * (unsigned int)(strchr(units, unit) - units + 1);
	snprintf(buf, len, "%.2f%s", (double)bytes / (double)(UINT64_C(1) << shift),
		 r->nosuffix ? "" : (char[]){ unit, 0 });
}

static void format_tags(const struct tags *t, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = 0;
	for (size_t i = 0; i < t->nr && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? "," : "", t->v[i]);
}

/* The text of @v in a table. */
static void format_cell(const struct report *r, const struct report_field *f,
			const struct field_value *v, char *buf, size_t len)
{
	char size[SIZE_STR_LEN];
	time_t t = (time_t)v->n;
	struct tm tm;

	buf[0] = 0;
	if (v->none)
		return;
	switch (f->type) {
	case FIELD_STRING:
		snprintf(buf, len, "%s%s%s", v->s, v->detail ? ": " : "",
			 v->detail ? v->detail : "");
		break;
	case FIELD_SIZE:
		if (r->units)
			format_units(r, (uint64_t)v->n, buf, len);
		else
			snprintf(buf, len, "%s", format_size_rounded((uint64_t)v->n, v->rounding, size));
		break;
	case FIELD_NUMBER:
		snprintf(buf, len, "%" PRId64, v->n);
		break;
	case FIELD_PERCENT:
		snprintf(buf, len, "%" PRId64 ".%02" PRId64, v->n / 100, v->n % 100);
		break;
	case FIELD_BOOL:
		snprintf(buf, len, "%s", v->n ? "yes" : "no");
		break;
	case FIELD_TIME:
		if (localtime_r(&t, &tm))
			strftime(buf, len, "%Y-%m-%d %H:%M", &tm);
		break;
	case FIELD_TAGS:
		format_tags(v->tags, buf, len);
		break;
	}
}

static bool right_aligned(const struct report_field *f)
{
	return f->type == FIELD_SIZE || f->type == FIELD_NUMBER || f->type == FIELD_PERCENT;
}

static void print_line(const struct report *r, FILE *f, char **cells, const int *width)
{
	for (size_t c = 0; c < r->nr_cols; c++) {
		bool last = c + 1 == r->nr_cols;

		if (c)
			fputs(r->separator ? r->separator : "  ", f);
		if (r->separator || (last && !right_aligned(r->cols[c])))
			fputs(cells[c], f);
		else
			fprintf(f, right_aligned(r->cols[c]) ? "%*s" : "%-*s", width[c], cells[c]);
	}
	fputc('\n', f);
}

static int print_table(const struct report *r, FILE *f, const char *rows, size_t row_size,
		       const size_t *idx, size_t n)
{
	char **cells = calloc((n + 1) * r->nr_cols, sizeof(*cells));
	int *width = calloc(r->nr_cols, sizeof(*width));
	int rc = cells && width ? 0 : -ENOMEM;

	for (size_t c = 0; !rc && c < r->nr_cols; c++) {
		cells[c] = (char *)r->cols[c]->heading;
		width[c] = (int)strlen(cells[c]);
		if (width[c] < (int)r->cols[c]->min_width)
			width[c] = (int)r->cols[c]->min_width;
	}
	for (size_t i = 0; !rc && i < n; i++) {
		for (size_t c = 0; c < r->nr_cols; c++) {
			char **cell = &cells[(i + 1) * r->nr_cols + c], text[CELL_LEN];
			struct field_value v;

			report_field_get(r->cols[c], rows + idx[i] * row_size, &v);
			format_cell(r, r->cols[c], &v, text, sizeof(text));
			/*
			 * Its own length, not CELL_LEN: the daemon prints lists
			 * too, and a `list` of 7500 volumes (10 columns of 1 KiB)
			 * left 65 MB of freed cells resident in the malloc arena
			 * of the control worker that ran it.
			 */
			*cell = strdup(text);
			if (!*cell) {
				rc = -ENOMEM;
				break;
			}
			if ((int)strlen(*cell) > width[c])
				width[c] = (int)strlen(*cell);
		}
	}
	if (!rc && n && !r->noheadings)
		print_line(r, f, cells, width);
	for (size_t i = 0; !rc && i < n; i++)
		print_line(r, f, cells + (i + 1) * r->nr_cols, width);
	for (size_t i = r->nr_cols; cells && i < (n + 1) * r->nr_cols; i++)
		free(cells[i]);
	free(cells);
	free(width);
	return rc;
}

/* ---- JSON ------------------------------------------------------------- */

static void json_value(struct json *j, const struct report_field *f, const struct field_value *v)
{
	if (v->none)
		return;
	switch (f->type) {
	case FIELD_STRING:
		json_string(j, f->name, v->s);
		break;
	case FIELD_SIZE:
	case FIELD_NUMBER:
		json_u64(j, f->name, (uint64_t)v->n);
		break;
	case FIELD_PERCENT:
		json_percent(j, f->name, (uint64_t)v->n, 10000);
		break;
	case FIELD_BOOL:
		json_bool(j, f->name, (int)v->n);
		break;
	case FIELD_TIME:
		json_time(j, f->name, v->n);
		break;
	case FIELD_TAGS:
		json_array_begin(j, f->name);
		for (size_t i = 0; i < v->tags->nr; i++)
			json_string(j, NULL, v->tags->v[i]);
		json_array_end(j);
		break;
	}
}

static void print_json(const struct report *r, FILE *f, const char *rows, size_t row_size,
		       const size_t *idx, size_t n)
{
	struct json j;

	json_init(&j, f, JSON_PRETTY);
	json_array_begin(&j, NULL);
	for (size_t i = 0; i < n; i++) {
		json_object_begin(&j, NULL);
		for (size_t c = 0; c < r->nr_cols; c++) {
			struct field_value v;

			report_field_get(r->cols[c], rows + idx[i] * row_size, &v);
			json_value(&j, r->cols[c], &v);
		}
		json_object_end(&j);
	}
	json_array_end(&j);
}

int report_print(const struct report *r, FILE *f, const void *rows, size_t nr,
		 size_t row_size)
{
	size_t *idx, n;
	int rc;

	rc = rows_chosen(r, rows, nr, row_size, &idx, &n);
	if (rc)
		return rc;
	if (r->json)
		print_json(r, f, rows, row_size, idx, n);
	else
		rc = print_table(r, f, rows, row_size, idx, n);
	free(idx);
	return rc;
}
