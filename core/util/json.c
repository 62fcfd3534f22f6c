#include "json.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "size.h"

/*
 * j->depth indexes the innermost open container; 0 is the top level,
 * which holds one value.  nr[], indent[] and array[] describe each level.
 */

void json_init(struct json *j, FILE *f, enum json_style style)
{
	*j = (struct json){ .f = f, .style = style };
}

static void json_quote(struct json *j, const char *s)
{
	fputc('"', j->f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':  fputs("\\\"", j->f); break;
		case '\\': fputs("\\\\", j->f); break;
		case '\n': fputs("\\n", j->f); break;
		case '\r': fputs("\\r", j->f); break;
		case '\t': fputs("\\t", j->f); break;
		case '\b': fputs("\\b", j->f); break;
		case '\f': fputs("\\f", j->f); break;
		default:
			if (*p < 0x20)
				fprintf(j->f, "\\u%04x", *p);
			else
				fputc(*p, j->f);
		}
	}
	fputc('"', j->f);
}

/* JSON: separator, newline and indent, key. */
static void json_member(struct json *j, const char *key)
{
	if (j->depth && j->nr[j->depth]++)
		fputc(',', j->f);
	if (j->style == JSON_PRETTY && j->depth)
		fprintf(j->f, "\n%*s", 2 * j->depth, "");
	if (key) {
		json_quote(j, key);
		fputs(j->style == JSON_PRETTY ? ": " : ":", j->f);
	}
}

/* JSON_TEXT: the start of a member's line, "  key:" or "  - ". */
static void text_member(struct json *j, const char *key)
{
	unsigned int col = j->indent[j->depth];

	if (j->header_open) {
		fputc('\n', j->f);
		j->header_open = 0;
	}
	j->nr[j->depth]++;
	if (j->array[j->depth])
		fprintf(j->f, "%*s- ", col, "");
	else if (j->dash_pending)
		fprintf(j->f, "%*s- ", col - 2, "");
	else
		fprintf(j->f, "%*s", col, "");
	j->dash_pending = 0;
	if (key)
		fprintf(j->f, "%s:", key);
}

static void begin(struct json *j, const char *key, int array)
{
	unsigned int parent = j->depth;
	int element = !key && parent && j->array[parent];

	assert(parent + 1 < JSON_DEPTH_MAX);
	if (j->style != JSON_TEXT) {
		json_member(j, key);
		fputc(array ? '[' : '{', j->f);
	} else if (key) {
		/* "key:" now, the members on the following lines */
		text_member(j, key);
		j->header_open = 1;
	} else if (element) {
		/* its first member goes after the array's "- " */
		j->nr[parent]++;
		j->dash_pending = 1;
	}
	j->depth++;
	j->nr[j->depth] = 0;
	j->array[j->depth] = (unsigned char)array;
	j->indent[j->depth] = parent ? j->indent[parent] + 2 : 0;
}

static void end(struct json *j, int array)
{
	unsigned int n = j->nr[j->depth];

	assert(j->depth > 0);
	if (j->style == JSON_TEXT) {
		/* an empty container still gets a line */
		if (j->dash_pending)
			fprintf(j->f, "%s%*s- none\n", j->header_open ? "\n" : "",
				j->indent[j->depth] - 2, "");
		else if (j->header_open)
			fputs(" none\n", j->f);
		j->header_open = 0;
		j->dash_pending = 0;
		j->depth--;
		return;
	}
	j->depth--;
	if (j->style == JSON_PRETTY && n)
		fprintf(j->f, "\n%*s", 2 * j->depth, "");
	fputc(array ? ']' : '}', j->f);
	if (!j->depth)
		fputc('\n', j->f);
}

void json_object_begin(struct json *j, const char *key)
{
	begin(j, key, 0);
}

void json_object_end(struct json *j)
{
	end(j, 0);
}

void json_array_begin(struct json *j, const char *key)
{
	begin(j, key, 1);
}

void json_array_end(struct json *j)
{
	end(j, 1);
}

/* Starts a scalar member; in JSON_TEXT, with the space after "key:". */
static void scalar(struct json *j, const char *key)
{
	if (j->style != JSON_TEXT) {
		json_member(j, key);
		return;
	}
	text_member(j, key);
	if (key)
		fputc(' ', j->f);
}

static void scalar_end(struct json *j)
{
	if (j->style == JSON_TEXT || !j->depth)
		fputc('\n', j->f);
}

void json_string(struct json *j, const char *key, const char *value)
{
	scalar(j, key);
	if (j->style == JSON_TEXT)
		fputs(value, j->f);
	else
		json_quote(j, value);
	scalar_end(j);
}

void json_u64(struct json *j, const char *key, uint64_t value)
{
	scalar(j, key);
	fprintf(j->f, "%" PRIu64, value);
	scalar_end(j);
}

void json_percent(struct json *j, const char *key, uint64_t part, uint64_t whole)
{
	uint64_t h = whole ? (part * 10000 + whole / 2) / whole : 0;

	scalar(j, key);
	fprintf(j->f, "%" PRIu64 ".%02" PRIu64, h / 100, h % 100);
	scalar_end(j);
}

void json_bool(struct json *j, const char *key, int value)
{
	scalar(j, key);
	if (j->style == JSON_TEXT)
		fputs(value ? "yes" : "no", j->f);
	else
		fputs(value ? "true" : "false", j->f);
	scalar_end(j);
}

void json_size(struct json *j, const char *key, uint64_t bytes)
{
	char buf[SIZE_STR_LEN];

	if (j->style == JSON_TEXT)
		json_string(j, key, format_size(bytes, buf));
	else
		json_u64(j, key, bytes);
}

void json_time(struct json *j, const char *key, int64_t seconds)
{
	time_t t = (time_t)seconds;
	char buf[32];
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, sizeof(buf), "@%lld", (long long)seconds);
	json_string(j, key, buf);
}
