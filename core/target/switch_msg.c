#include "switch_msg.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "switch_table.h"

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Reads a non-empty hex number at *s and moves *s past it.  0, -EINVAL if
 * there is no digit, -ERANGE if it does not fit 64 bits.
 */
static int parse_hex(const char **s, uint64_t *out)
{
	const char *p = *s;
	uint64_t v = 0;
	int d;

	if (hex_digit(*p) < 0)
		return -EINVAL;
	while ((d = hex_digit(*p)) >= 0) {
		if (v >> 60)
			return -ERANGE;
		v = v << 4 | (uint64_t)d;
		p++;
	}
	*s = p;
	*out = v;
	return 0;
}

/* Where the parse stands, for messages. */
struct msg_pos {
	size_t index;			/* of the argument, from 1 */
	const char *arg;
	char *why;
	size_t why_len;
};

__attribute__((format(printf, 2, 3)))
static int reject(const struct msg_pos *p, const char *fmt, ...)
{
	int n = snprintf(p->why, p->why_len, "argument %zu '%.40s%s': ", p->index,
			 p->arg, strlen(p->arg) > 40 ? "..." : "");
	va_list ap;

	if (n >= 0 && (size_t)n < p->why_len) {
		va_start(ap, fmt);
		vsnprintf(p->why + n, p->why_len - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* A number of an argument, and what must follow it ('\0', ':' or ','). */
static int number(const struct msg_pos *p, const char **s, char end,
		  const char *what, uint64_t *out)
{
	int r = parse_hex(s, out);

	if (r == -ERANGE)
		return reject(p, "%s does not fit 64 bits", what);
	if (r || **s != end) {
		if (!r && **s == 'x' && *out == 0)
			return reject(p, "numbers are hexadecimal without '0x'");
		return reject(p, "expected INDEX:PATH, :PATH or Rn,m (hexadecimal)");
	}
	if (end)
		(*s)++;
	return 0;
}

/* Rn,m: the last n regions, m more times. */
static int apply_repeat(struct switch_table *t, const struct msg_pos *p,
			uint64_t *region)
{
	const char *s = p->arg + 1;
	uint64_t n, m;
	int r;

	r = number(p, &s, ',', "the period", &n);
	if (!r)
		r = number(p, &s, '\0', "the count", &m);
	if (r)
		return r;
	if (!n)
		return reject(p, "repeats 0 regions");
	if (n - 1 > *region)
		return reject(p, "repeats %" PRIu64 " regions but only %" PRIu64
			      " come before it", n, *region + 1);
	if (m >= t->nr_regions - *region)
		return reject(p, "writes up to region %#" PRIx64 ", past the last (%#"
			      PRIx64 ")", *region + m, t->nr_regions - 1);
	for (uint64_t i = *region + 1; i <= *region + m; i++)
		switch_table_set(t, i, switch_table_get(t, i - n));
	*region += m;
	return 0;
}

/* INDEX:PATH or :PATH. */
static int apply_one(struct switch_table *t, const struct msg_pos *p,
		     uint64_t *region)
{
	const char *s = p->arg;
	uint64_t index, path;
	int r;

	if (*s == ':') {
		index = *region + 1;
		s++;
	} else {
		r = number(p, &s, ':', "the region", &index);
		if (r)
			return r;
	}
	r = number(p, &s, '\0', "the path", &path);
	if (r)
		return r;
	if (index >= t->nr_regions)
		return reject(p, "region %#" PRIx64 " is past the last (%#" PRIx64 ")",
			      index, t->nr_regions - 1);
	if (path >= t->nr_paths)
		return reject(p, "path %#" PRIx64 " does not exist (there are %u)",
			      path, t->nr_paths);
	switch_table_set(t, index, (unsigned int)path);
	*region = index;
	return 0;
}

int switch_msg_apply(struct switch_table *t, size_t argc, char *const *argv,
		     char *why, size_t why_len)
{
	uint64_t region = 0;

	for (size_t i = 0; i < argc; i++) {
		struct msg_pos p = { i + 1, argv[i], why, why_len };
		int r;

		if (argv[i][0] == 'R' || argv[i][0] == 'r')
			r = apply_repeat(t, &p, &region);
		else
			r = apply_one(t, &p, &region);
		if (r)
			return r;
	}
	return 0;
}

/* How many regions after @last repeat the table @n regions earlier. */
static uint64_t run_length(const struct switch_table *t, uint64_t last,
			   uint64_t n)
{
	uint64_t i = last + 1;

	while (i < t->nr_regions && switch_table_get(t, i) == switch_table_get(t, i - n))
		i++;
	return i - last - 1;
}

int switch_msg_dump(const struct switch_table *t, FILE *f)
{
	uint64_t last = 0;

	fprintf(f, "0:%x\n", switch_table_get(t, 0));
	while (last + 1 < t->nr_regions) {
		uint64_t best_n = 0, best_m = 1;

		for (uint64_t n = 1; n <= last + 1 && n <= SWITCH_MSG_PERIOD_MAX; n++) {
			uint64_t m = run_length(t, last, n);

			if (m > best_m) {
				best_n = n;
				best_m = m;
			}
			if (last + best_m + 1 == t->nr_regions)
				break;
		}
		if (best_n) {
			fprintf(f, "R%" PRIx64 ",%" PRIx64 "\n", best_n, best_m);
			last += best_m;
		} else {
			fprintf(f, ":%x\n", switch_table_get(t, last + 1));
			last++;
		}
	}
	return ferror(f) ? -EIO : 0;
}

int switch_msg_split(char *text, char ***argv, size_t *argc)
{
	size_t n = 0, cap = 0;
	char **v = NULL;
	char *tok, *save;

	for (tok = strtok_r(text, " \t\r\n", &save); tok;
	     tok = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == cap) {
			size_t new_cap = cap ? 2 * cap : 64;
			char **p = realloc(v, new_cap * sizeof(*p));

			if (!p) {
				free(v);
				return -ENOMEM;
			}
			v = p;
			cap = new_cap;
		}
		v[n++] = tok;
	}
	*argv = v;
	*argc = n;
	return 0;
}
