/*
 * tools/select.c: --select expressions (select.h), parsed by recursive
 * descent into a tree whose leaves are comparisons of one field with a
 * value already read by the field's type, so matching a row compares
 * numbers or strings and parses nothing.
 */
#include "select.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "size.h"

#define DEPTH_MAX	64		/* of parentheses and '!': the stack is a daemon thread's */

enum node_kind {
	NODE_OR,
	NODE_AND,
	NODE_NOT,
	NODE_TAG,			/* @tag: s */
	NODE_CMP,			/* field op value */
};

enum cmp_op {
	OP_EQ,
	OP_NE,
	OP_LT,
	OP_LE,
	OP_GT,
	OP_GE,
	OP_MATCH,			/* =~ */
	OP_NOMATCH,			/* !~ */
};

/* A node of the tree; the whole tree is "a select". */
struct select {
	enum node_kind kind;
	struct select *a, *b;		/* OR, AND: both; NOT: a */
	const struct report_field *field;	/* CMP: compared; TAG: the tags field */
	enum cmp_op op;
	int64_t n;			/* CMP on a field that is not a string */
	char *s;			/* CMP on a string, or TAG's tag */
	regex_t re;			/* OP_MATCH, OP_NOMATCH */
	bool has_re;
};

struct parser {
	const char *p;			/* the next character */
	const struct report_field *fields;
	size_t nr;
	unsigned int depth;
	char *why;
};

static int fail(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct parser *ps, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ps->why, SELECT_ERROR_LEN, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Where the parse is, for messages: "at 'x > 1'" or "at the end". */
static int fail_at(struct parser *ps, const char *what)
{
	if (!*ps->p)
		return fail(ps, "%s expected at the end", what);
	return fail(ps, "%s expected at '%.32s'", what, ps->p);
}

static void skip_space(struct parser *ps)
{
	while (isspace((unsigned char)*ps->p))
		ps->p++;
}

/* Consumes @tok if it comes next. */
static bool take(struct parser *ps, const char *tok)
{
	size_t n = strlen(tok);

	skip_space(ps);
	if (strncmp(ps->p, tok, n))
		return false;
	ps->p += n;
	return true;
}

static struct select *node_new(struct parser *ps, enum node_kind kind)
{
	struct select *n = calloc(1, sizeof(*n));

	if (!n)
		fail(ps, "out of memory");
	else
		n->kind = kind;
	return n;
}

void select_free(struct select *s)
{
	if (!s)
		return;
	select_free(s->a);
	select_free(s->b);
	if (s->has_re)
		regfree(&s->re);
	free(s->s);
	free(s);
}

static bool word_char(char c)
{
	return isalnum((unsigned char)c) || (c && strchr("_+.-:/%", c));
}

/* A value: a quoted string or a word; *out malloc'ed. */
static int parse_value(struct parser *ps, char **out)
{
	const char *start;
	size_t len;

	skip_space(ps);
	if (*ps->p == '\'' || *ps->p == '"') {
		char quote = *ps->p++;

		start = ps->p;
		while (*ps->p && *ps->p != quote)
			ps->p++;
		if (!*ps->p)
			return fail(ps, "unterminated string at '%.32s'", start - 1);
		len = (size_t)(ps->p++ - start);
	} else {
		start = ps->p;
		while (word_char(*ps->p))
			ps->p++;
		len = (size_t)(ps->p - start);
		if (!len)
			return fail_at(ps, "a value");
	}
	*out = strndup(start, len);
	return *out ? 0 : fail(ps, "out of memory");
}

/* "12", "12.5", "12.34" or with a '%' after: hundredths of a percent. */
static int parse_percent(const char *s, int64_t *out)
{
	unsigned long long whole, frac = 0;
	int n = 0, digits = 0;

	if (sscanf(s, "%llu%n", &whole, &n) != 1 || !isdigit((unsigned char)s[0]) ||
	    whole > 100000)
		return -EINVAL;
	s += n;
	if (*s == '.') {
		while (isdigit((unsigned char)*++s) && digits < 2) {
			frac = frac * 10 + (unsigned long long)(*s - '0');
			digits++;
		}
		if (!digits || isdigit((unsigned char)*s))
			return -EINVAL;
		if (digits == 1)
			frac *= 10;
	}
	if (*s == '%')
		s++;
	if (*s)
		return -EINVAL;
	*out = (int64_t)(whole * 100 + frac);
	return 0;
}

/* Seconds since the epoch, or a date "YYYY-MM-DD" (its midnight, UTC). */
static int parse_time(const char *s, int64_t *out)
{
	struct tm tm = { 0 };
	char *end;

	if (isdigit((unsigned char)s[0]) && !strchr(s, '-')) {
		errno = 0;
		*out = strtoll(s, &end, 10);
		return errno || *end ? -EINVAL : 0;
	}
	end = strptime(s, "%Y-%m-%d", &tm);
	if (!end || *end)
		return -EINVAL;
	*out = (int64_t)timegm(&tm);
	return 0;
}

static int parse_bool(const char *s, int64_t *out)
{
	if (!strcmp(s, "1") || !strcasecmp(s, "yes") || !strcasecmp(s, "true"))
		*out = 1;
	else if (!strcmp(s, "0") || !strcasecmp(s, "no") || !strcasecmp(s, "false"))
		*out = 0;
	else
		return -EINVAL;
	return 0;
}

static int parse_number(const char *s, int64_t *out)
{
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

static const char *type_name(enum field_type t)
{
	static const char *const names[] = {
		[FIELD_STRING] = "string", [FIELD_SIZE] = "size", [FIELD_NUMBER] = "number",
		[FIELD_PERCENT] = "percentage", [FIELD_BOOL] = "yes/no", [FIELD_TIME] = "time",
		[FIELD_TAGS] = "tag list",
	};
	return names[t];
}

/* Reads @text as field @n->field's type into @n. */
static int set_value(struct parser *ps, struct select *n, char *text)
{
	const struct report_field *f = n->field;
	uint64_t bytes;
	int r = 0;

	switch (f->type) {
	case FIELD_STRING:
		n->s = text;
		return 0;
	case FIELD_SIZE:
		r = parse_size(text, &bytes);
		n->n = (int64_t)bytes;
		break;
	case FIELD_NUMBER:
		r = parse_number(text, &n->n);
		break;
	case FIELD_PERCENT:
		r = parse_percent(text, &n->n);
		break;
	case FIELD_BOOL:
		r = parse_bool(text, &n->n);
		break;
	case FIELD_TIME:
		r = parse_time(text, &n->n);
		break;
	case FIELD_TAGS:
		r = -EINVAL;
		break;
	}
	if (f->type == FIELD_TAGS)
		r = fail(ps, "field '%s' is a tag list: test a tag with @TAG", f->name);
	else if (r)
		r = fail(ps, "invalid %s '%s' for field '%s'", type_name(f->type), text, f->name);
	free(text);
	return r;
}

static int parse_op(struct parser *ps, enum cmp_op *op)
{
	/* Longest first: "<=" before "<", "==" before "=". */
	static const struct { const char *tok; enum cmp_op op; } ops[] = {
		{ "==", OP_EQ }, { "!=", OP_NE }, { "<=", OP_LE }, { ">=", OP_GE },
		{ "=~", OP_MATCH }, { "!~", OP_NOMATCH }, { "=", OP_EQ }, { "<", OP_LT },
		{ ">", OP_GT },
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (take(ps, ops[i].tok)) {
			*op = ops[i].op;
			return 0;
		}
	}
	return fail_at(ps, "a comparison (==, !=, <, <=, >, >=, =~)");
}

/* FIELD OP VALUE */
static int parse_comparison(struct parser *ps, struct select **out)
{
	const char *name;
	struct select *n;
	char *text;
	int r;

	skip_space(ps);
	name = ps->p;
	while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
		ps->p++;
	if (ps->p == name)
		return fail_at(ps, "a field, '@TAG', '!' or '('");
	n = node_new(ps, NODE_CMP);
	if (!n)
		return -ENOMEM;
	n->field = report_field_find(ps->fields, ps->nr, name, (size_t)(ps->p - name));
	if (!n->field) {
		r = fail(ps, "unknown field '%.*s' (-o help lists them)", (int)(ps->p - name), name);
		goto err;
	}
	r = parse_op(ps, &n->op);
	if (!r && (n->op == OP_MATCH || n->op == OP_NOMATCH) && n->field->type != FIELD_STRING)
		r = fail(ps, "'=~' and '!~' take a string field: '%s' is a %s", n->field->name,
			 type_name(n->field->type));
	if (!r)
		r = parse_value(ps, &text);
	if (!r)
		r = set_value(ps, n, text);
	if (r)
		goto err;
	if (n->op == OP_MATCH || n->op == OP_NOMATCH) {
		int rc = regcomp(&n->re, n->s, REG_EXTENDED | REG_NOSUB);

		if (rc) {
			char msg[128];

			regerror(rc, &n->re, msg, sizeof(msg));
			r = fail(ps, "invalid regular expression '%s': %s", n->s, msg);
			goto err;
		}
		n->has_re = true;
	}
	*out = n;
	return 0;
err:
	select_free(n);
	return r;
}

static int parse_or(struct parser *ps, struct select **out);

static int parse_tag(struct parser *ps, struct select **out)
{
	const char *start = ps->p;
	struct select *n;

	while (*ps->p && (isalnum((unsigned char)*ps->p) || strchr("_+.-", *ps->p)))
		ps->p++;
	if (ps->p == start)
		return fail_at(ps, "a tag after '@'");
	n = node_new(ps, NODE_TAG);
	if (!n)
		return -ENOMEM;
	n->s = strndup(start, (size_t)(ps->p - start));
	n->field = report_field_find(ps->fields, ps->nr, "tags", 4);
	*out = n;
	if (!n->s)
		return fail(ps, "out of memory");
	return n->field ? 0 : fail(ps, "these rows carry no tags");
}

static int parse_unary(struct parser *ps, struct select **out)
{
	struct select *n;
	int r;

	if (++ps->depth > DEPTH_MAX)
		return fail(ps, "expression nested too deeply");
	if (take(ps, "!")) {
		n = node_new(ps, NODE_NOT);
		r = n ? parse_unary(ps, &n->a) : -ENOMEM;
	} else if (take(ps, "(")) {
		n = NULL;
		r = parse_or(ps, &n);
		if (!r && !take(ps, ")"))
			r = fail_at(ps, "')'");
	} else if (take(ps, "@")) {
		n = NULL;
		r = parse_tag(ps, &n);
	} else {
		n = NULL;
		r = parse_comparison(ps, &n);
	}
	ps->depth--;
	if (r) {
		select_free(n);
		return r;
	}
	*out = n;
	return 0;
}

/* One rule of a binary operator: @next ( @tok @next )* */
static int parse_chain(struct parser *ps, struct select **out, const char *tok,
		       enum node_kind kind, int (*next)(struct parser *, struct select **))
{
	struct select *left = NULL, *n;
	int r = next(ps, &left);

	while (!r && take(ps, tok)) {
		n = node_new(ps, kind);
		if (!n) {
			r = -ENOMEM;
			break;
		}
		n->a = left;
		left = n;
		r = next(ps, &n->b);
	}
	if (r) {
		select_free(left);
		return r;
	}
	*out = left;
	return 0;
}

static int parse_and(struct parser *ps, struct select **out)
{
	return parse_chain(ps, out, "&&", NODE_AND, parse_unary);
}

static int parse_or(struct parser *ps, struct select **out)
{
	return parse_chain(ps, out, "||", NODE_OR, parse_and);
}

int select_parse(const char *expr, const struct report_field *fields, size_t nr,
		 struct select **out, char why[SELECT_ERROR_LEN])
{
	struct parser ps = { .p = expr, .fields = fields, .nr = nr, .why = why };
	struct select *s = NULL;
	int r;

	r = parse_or(&ps, &s);
	skip_space(&ps);
	if (!r && *ps.p)
		r = fail(&ps, "unexpected '%.32s'", ps.p);
	if (r) {
		select_free(s);
		return r == -ENOMEM ? -ENOMEM : -EINVAL;
	}
	*out = s;
	return 0;
}

static bool compare(const struct select *s, const struct field_value *v)
{
	int c;

	if (v->none)
		return false;
	if (s->has_re)
		return !regexec(&s->re, v->s, 0, NULL, 0) == (s->op == OP_MATCH);
	if (s->field->type == FIELD_STRING)
		c = strcmp(v->s, s->s);
	else
		c = v->n < s->n ? -1 : v->n > s->n;
	switch (s->op) {
	case OP_EQ:
		return c == 0;
	case OP_NE:
		return c != 0;
	case OP_LT:
		return c < 0;
	case OP_LE:
		return c <= 0;
	case OP_GT:
		return c > 0;
	case OP_GE:
		return c >= 0;
	default:
		return false;
	}
}

bool select_match(const struct select *s, const void *row)
{
	struct field_value v;

	switch (s->kind) {
	case NODE_OR:
		return select_match(s->a, row) || select_match(s->b, row);
	case NODE_AND:
		return select_match(s->a, row) && select_match(s->b, row);
	case NODE_NOT:
		return !select_match(s->a, row);
	case NODE_TAG:
		report_field_get(s->field, row, &v);
		return v.tags && tags_has(v.tags, s->s);
	case NODE_CMP:
		report_field_get(s->field, row, &v);
		return compare(s, &v);
	}
	return false;
}
