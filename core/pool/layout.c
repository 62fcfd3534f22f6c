#include "layout.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "label.h"

/* ---- writing ---------------------------------------------------------- */

#define KEY_MAX		32	/* bytes of a key: "autoextend_threshold" is 20 */

static bool plain_char(unsigned char c)
{
	return isalnum(c) || strchr("_./:+-", c);
}

/*
 * The writers below put text with fputs, putc and fwrite, not fprintf: a
 * layout of 1e4 volumes is 150,000 pairs, written at every admin change,
 * and a format parsed for each pair took half the time (median 13 ms a
 * layout, 6 without).
 */
static void put_key(FILE *f, const char *key)
{
	putc(' ', f);
	fputs(key, f);
	putc('=', f);
}

static void put_string(FILE *f, const char *key, const char *s)
{
	const unsigned char *c;
	bool plain = *s;

	for (c = (const unsigned char *)s; *c && plain; c++)
		plain = plain_char(*c);
	put_key(f, key);
	if (plain) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(f, "\\%c", *c);
		else if (*c < 0x20 || *c >= 0x7f)
			fprintf(f, "\\x%02x", *c);
		else
			fputc(*c, f);
	}
	fputc('"', f);
}

/* " key=value" built backwards, then one fwrite. */
static void put_u64(FILE *f, const char *key, uint64_t v)
{
	char pair[64], *d = pair + sizeof(pair);
	size_t n = strlen(key);

	assert(n <= KEY_MAX);
	do
		*--d = (char)('0' + v % 10);
	while (v /= 10);
	*--d = '=';
	d -= n;
	memcpy(d, key, n);
	*--d = ' ';
	fwrite(d, 1, (size_t)(pair + sizeof(pair) - d), f);
}

static void put_uuid(FILE *f, const char *key, const struct uuid *u)
{
	char s[UUID_STR_LEN];

	uuid_format(u, s);
	put_key(f, key);
	fputs(s, f);
}

/* "aa*128.55.ff*3": runs of one byte value. */
static void put_table(FILE *f, const uint8_t *t, size_t len)
{
	fputs(" table=", f);
	for (size_t i = 0; i < len;) {
		size_t run = 1;

		while (i + run < len && t[i + run] == t[i])
			run++;
		fprintf(f, "%s%02x", i ? "." : "", t[i]);
		if (run > 1)
			fprintf(f, "*%zu", run);
		i += run;
	}
	if (!len)
		fputc('-', f);
}

int layout_write_header(const struct layout *l, FILE *f)
{
	fputs("# mapperfs layout: every record of the pool but the thin maps\n", f);
	fputs("layout", f);
	put_u64(f, "version", LAYOUT_VERSION);
	put_uuid(f, "pool", &l->img.uuid);
	put_u64(f, "seq", l->seq);
	put_u64(f, "time", (uint64_t)l->time);
	if (l->command)
		put_string(f, "command", l->command);
	fputc('\n', f);
	return ferror(f) ? -EIO : 0;
}

int layout_write(const struct layout *l, FILE *f)
{
	const struct pool_meta_image *m = &l->img;

	layout_write_header(l, f);
	for (size_t i = 0; i < m->nr_devices; i++) {
		const struct device_rec *d = &m->devices[i];

		fputs("device", f);
		put_u64(f, "id", (uint64_t)d->id);
		put_string(f, "name", d->name);
		put_uuid(f, "uuid", &d->uuid);
		put_u64(f, "size", d->size);
		put_string(f, "path", d->path);
		fputc('\n', f);
	}
	for (size_t i = 0; i < m->nr_volumes; i++) {
		const struct volume_rec *v = &m->volumes[i];

		fputs("volume", f);
		put_u64(f, "id", (uint64_t)v->id);
		put_string(f, "name", v->name);
		put_string(f, "kind", v->kind);
		put_u64(f, "size", v->size);
		put_u64(f, "created", (uint64_t)v->created);
		put_u64(f, "modified", (uint64_t)v->modified);
		put_u64(f, "read_only", v->read_only);
		put_u64(f, "active", !v->inactive);
		put_u64(f, "allow_shrink", v->allow_shrink);
		fputc('\n', f);
	}
	for (size_t i = 0; i < m->nr_extents; i++) {
		const struct extent_rec *e = &m->extents[i];

		fputs("extent", f);
		put_u64(f, "volume", (uint64_t)e->volume);
		put_u64(f, "seq", e->seq);
		put_u64(f, "device", (uint64_t)e->device);
		put_u64(f, "offset", e->dev_offset);
		put_u64(f, "length", e->length);
		fputc('\n', f);
	}
	for (size_t i = 0; i < m->nr_stripes; i++) {
		fputs("stripe", f);
		put_u64(f, "volume", (uint64_t)m->stripes[i].volume);
		put_u64(f, "stripes", m->stripes[i].stripes);
		put_u64(f, "stripe_size", m->stripes[i].stripe_size);
		fputc('\n', f);
	}
	for (size_t i = 0; i < m->nr_switches; i++) {
		const struct switch_rec *s = &m->switches[i];

		fputs("switch", f);
		put_u64(f, "volume", (uint64_t)s->volume);
		put_u64(f, "region_size", s->region_size);
		put_u64(f, "regions", s->nr_regions);
		put_u64(f, "paths", s->nr_paths);
		put_u64(f, "entry_bits", s->entry_bits);
		put_table(f, l->tables[i], l->table_lens[i]);
		fputc('\n', f);
	}
	for (size_t i = 0; i < m->nr_switch_paths; i++) {
		const struct switch_path_rec *s = &m->switch_paths[i];

		fputs("path", f);
		put_u64(f, "volume", (uint64_t)s->volume);
		put_u64(f, "idx", s->idx);
		put_u64(f, "device", (uint64_t)s->device);
		put_u64(f, "offset", s->dev_offset);
		fputc('\n', f);
	}
	for (size_t i = 0; i < m->nr_thin_pools; i++) {
		const struct thin_pool_rec *t = &m->thin_pools[i];

		fputs("thin_pool", f);
		put_u64(f, "volume", (uint64_t)t->volume);
		put_u64(f, "block_size", t->block_size);
		put_u64(f, "zero", t->zero);
		put_string(f, "when_full", t->wait ? "wait" : "error");
		put_u64(f, "wait_seconds", t->wait_seconds);
		put_u64(f, "low_water", t->low_water);
		put_u64(f, "discard_passdown", t->discard_passdown);
		put_u64(f, "autoextend_threshold", t->autoextend_threshold);
		put_u64(f, "autoextend_percent", t->autoextend_percent);
		put_u64(f, "metadata_limit", t->metadata_limit);
		put_string(f, "on_event", t->on_event);
		fputc('\n', f);
	}
	for (size_t i = 0; i < m->nr_thins; i++) {
		const struct thin_rec *t = &m->thins[i];

		fputs("thin", f);
		put_u64(f, "volume", (uint64_t)t->volume);
		put_u64(f, "pool", (uint64_t)t->pool);
		put_u64(f, "snapshot_of", (uint64_t)t->snapshot_of);
		fputc('\n', f);
	}
	for (size_t i = 0; i < m->nr_origins; i++) {
		const struct thin_origin_rec *o = &m->origins[i];

		fputs("origin", f);
		put_u64(f, "volume", (uint64_t)o->volume);
		put_u64(f, "origin_volume", (uint64_t)o->origin_volume);
		put_string(f, "path", o->origin_path);
		put_u64(f, "size", o->origin_size);
		put_u64(f, "mtime_ns", (uint64_t)o->origin_mtime_ns);
		fputc('\n', f);
	}
	for (size_t i = 0; i < m->nr_tags; i++) {
		const struct tag_rec *t = &m->tags[i];

		fputs("tag", f);
		put_string(f, "on", t->on == TAG_ON_DEVICE ? "device" : "volume");
		put_u64(f, "owner", (uint64_t)t->owner);
		put_string(f, "tag", t->tag);
		fputc('\n', f);
	}
	fputs("end\n", f);
	return ferror(f) ? -EIO : 0;
}

/* ---- parsing ---------------------------------------------------------- */

#define MAX_PAIRS	16

struct pair {
	char *key;
	char *value;		/* unescaped, in the line's copy */
	bool used;
};

struct parser {
	struct layout *l;
	unsigned int line;
	char *why;
	size_t why_len;
	struct pair pairs[MAX_PAIRS];
	size_t nr_pairs;
	bool header, end;
	/* capacities of the image's arrays */
	size_t cap_devices, cap_volumes, cap_extents, cap_stripes, cap_switches, cap_paths,
	       cap_thin_pools, cap_thins, cap_origins, cap_tags;
};

static int bad(struct parser *ps, const char *fmt, ...)
{
	va_list ap;
	int n = ps->line ? snprintf(ps->why, ps->why_len, "line %u: ", ps->line) : 0;

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < ps->why_len)
		vsnprintf(ps->why + n, ps->why_len - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Unescapes the quoted string at *s (after its '"') in place. */
static int unquote(struct parser *ps, char **s, char **value)
{
	char *in = *s, *out = *s;

	*value = out;
	for (;;) {
		if (!*in)
			return bad(ps, "unterminated quoted value");
		if (*in == '"')
			break;
		if (*in != '\\') {
			*out++ = *in++;
			continue;
		}
		in++;
		if (*in == '"' || *in == '\\') {
			*out++ = *in++;
		} else if (*in == 'x' && hex_digit(in[1]) >= 0 && hex_digit(in[2]) >= 0) {
			*out++ = (char)(hex_digit(in[1]) << 4 | hex_digit(in[2]));
			in += 3;
		} else {
			return bad(ps, "bad escape in a quoted value");
		}
	}
	*out = 0;
	*s = in + 1;
	return 0;
}

/* Splits @line (a copy, modified) into its keyword and pairs. */
static int split(struct parser *ps, char *line, char **keyword)
{
	char *s = line;

	ps->nr_pairs = 0;
	*keyword = s;
	while (*s && *s != ' ')
		s++;
	while (*s) {
		struct pair *p;
		int r;

		*s++ = 0;
		if (!*s)
			break;
		if (ps->nr_pairs == MAX_PAIRS)
			return bad(ps, "too many values");
		p = &ps->pairs[ps->nr_pairs++];
		p->used = false;
		p->key = s;
		while (*s && *s != '=' && *s != ' ')
			s++;
		if (*s != '=')
			return bad(ps, "'%.*s' is not key=value", (int)(s - p->key), p->key);
		*s++ = 0;
		if (*s == '"') {
			s++;
			r = unquote(ps, &s, &p->value);
			if (r)
				return r;
			if (*s && *s != ' ')
				return bad(ps, "a quoted value runs into the next");
		} else {
			p->value = s;
			while (*s && *s != ' ')
				s++;
		}
	}
	return 0;
}

static struct pair *find(struct parser *ps, const char *key)
{
	for (size_t i = 0; i < ps->nr_pairs; i++)
		if (!strcmp(ps->pairs[i].key, key)) {
			ps->pairs[i].used = true;
			return &ps->pairs[i];
		}
	return NULL;
}

static int get_string(struct parser *ps, const char *key, char *out, size_t len)
{
	struct pair *p = find(ps, key);

	if (!p)
		return bad(ps, "missing %s=", key);
	if (strlen(p->value) >= len)
		return bad(ps, "%s= is too long", key);
	strcpy(out, p->value);
	return 0;
}

static int get_u64(struct parser *ps, const char *key, uint64_t max, uint64_t *out)
{
	struct pair *p = find(ps, key);
	char *end;

	if (!p)
		return bad(ps, "missing %s=", key);
	errno = 0;
	*out = strtoull(p->value, &end, 10);
	if (!isdigit((unsigned char)p->value[0]) || *end || errno || *out > max)
		return bad(ps, "bad %s='%s'", key, p->value);
	return 0;
}

static int get_id(struct parser *ps, const char *key, int64_t *out)
{
	uint64_t v;
	int r = get_u64(ps, key, INT64_MAX, &v);

	*out = (int64_t)v;
	return r;
}

static int get_u32(struct parser *ps, const char *key, uint32_t max, uint32_t *out)
{
	uint64_t v;
	int r = get_u64(ps, key, max, &v);

	*out = (uint32_t)v;
	return r;
}

static int get_bool(struct parser *ps, const char *key, bool *out)
{
	uint64_t v;
	int r = get_u64(ps, key, 1, &v);

	*out = v;
	return r;
}

static int get_uuid(struct parser *ps, const char *key, struct uuid *out)
{
	struct pair *p = find(ps, key);

	if (!p)
		return bad(ps, "missing %s=", key);
	if (uuid_parse(p->value, out))
		return bad(ps, "bad %s='%s'", key, p->value);
	return 0;
}

/* The next free element of an image array; NULL on -ENOMEM. */
static void *grow(void **v, size_t *nr, size_t *cap, size_t size)
{
	if (*nr == *cap) {
		size_t n = *cap ? *cap * 2 : 16;
		void *g = realloc(*v, n * size);

		if (!g)
			return NULL;
		*v = g;
		*cap = n;
	}
	memset((char *)*v + *nr * size, 0, size);
	return (char *)*v + (*nr)++ * size;
}

#define ADD(ps, arr, nr, cap) \
	grow((void **)&(ps)->l->img.arr, &(ps)->l->img.nr, &(ps)->cap, sizeof(*(ps)->l->img.arr))

static int parse_header(struct parser *ps)
{
	struct layout *l = ps->l;
	struct pair *cmd;
	uint64_t version, time;
	int r;

	if (ps->header)
		return bad(ps, "a second layout line");
	r = get_u64(ps, "version", UINT64_MAX, &version);
	if (!r && version != LAYOUT_VERSION)
		return bad(ps, "layout version %" PRIu64 " (this mapperfs reads %d)", version,
			   LAYOUT_VERSION);
	if (!r)
		r = get_uuid(ps, "pool", &l->img.uuid);
	if (!r)
		r = get_u64(ps, "seq", UINT64_MAX, &l->seq);
	if (!r)
		r = get_u64(ps, "time", INT64_MAX, &time);
	if (r)
		return r;
	l->time = (int64_t)time;
	cmd = find(ps, "command");
	if (cmd && !(l->command = strdup(cmd->value)))
		return -ENOMEM;
	ps->header = true;
	return 0;
}

static int parse_device(struct parser *ps)
{
	struct device_rec *d = ADD(ps, devices, nr_devices, cap_devices);
	int r;

	if (!d)
		return -ENOMEM;
	r = get_id(ps, "id", &d->id);
	if (!r)
		r = get_string(ps, "name", d->name, sizeof(d->name));
	if (!r)
		r = get_uuid(ps, "uuid", &d->uuid);
	if (!r)
		r = get_u64(ps, "size", UINT64_MAX, &d->size);
	if (!r)
		r = get_string(ps, "path", d->path, sizeof(d->path));
	return r;
}

static int parse_volume(struct parser *ps)
{
	struct volume_rec *v = ADD(ps, volumes, nr_volumes, cap_volumes);
	bool active = true;
	int r;

	if (!v)
		return -ENOMEM;
	r = get_id(ps, "id", &v->id);
	if (!r)
		r = get_string(ps, "name", v->name, sizeof(v->name));
	if (!r)
		r = get_string(ps, "kind", v->kind, sizeof(v->kind));
	if (!r)
		r = get_u64(ps, "size", UINT64_MAX, &v->size);
	if (!r)
		r = get_id(ps, "created", &v->created);
	if (!r)
		r = get_id(ps, "modified", &v->modified);
	if (!r)
		r = get_bool(ps, "read_only", &v->read_only);
	if (!r)
		r = get_bool(ps, "active", &active);
	v->inactive = !active;
	/* A layout written before version 10 of the schema has none. */
	if (!r && find(ps, "allow_shrink"))
		r = get_bool(ps, "allow_shrink", &v->allow_shrink);
	return r;
}

static int parse_extent(struct parser *ps)
{
	struct extent_rec *e = ADD(ps, extents, nr_extents, cap_extents);
	int r;

	if (!e)
		return -ENOMEM;
	r = get_id(ps, "volume", &e->volume);
	if (!r)
		r = get_u32(ps, "seq", UINT32_MAX, &e->seq);
	if (!r)
		r = get_id(ps, "device", &e->device);
	if (!r)
		r = get_u64(ps, "offset", UINT64_MAX, &e->dev_offset);
	if (!r)
		r = get_u64(ps, "length", UINT64_MAX, &e->length);
	return r;
}

static int parse_stripe(struct parser *ps)
{
	struct stripe_rec *s = ADD(ps, stripes, nr_stripes, cap_stripes);
	int r;

	if (!s)
		return -ENOMEM;
	r = get_id(ps, "volume", &s->volume);
	if (!r)
		r = get_u32(ps, "stripes", 128, &s->stripes);
	if (!r)
		r = get_u32(ps, "stripe_size", UINT32_MAX, &s->stripe_size);
	if (!r && (s->stripes < 2 || s->stripe_size < 4096 ||
		   (s->stripe_size & (s->stripe_size - 1))))
		r = bad(ps, "bad stripes=%u stripe_size=%u", s->stripes, s->stripe_size);
	return r;
}

/* "aa*128.55" into *out (malloc'ed), at most @max bytes. */
static int parse_table(struct parser *ps, const char *s, size_t max, uint8_t **out,
		       size_t *len)
{
	size_t n = 0;
	uint8_t *t;

	*out = NULL;
	*len = 0;
	if (!strcmp(s, "-"))
		return 0;
	t = malloc(max ? max : 1);
	if (!t)
		return -ENOMEM;
	while (*s) {
		int hi = hex_digit(s[0]), lo = hi < 0 ? -1 : hex_digit(s[1]);
		unsigned long long run = 1;
		char *end;

		if (lo < 0)
			goto bad_table;
		s += 2;
		if (*s == '*') {
			errno = 0;
			run = strtoull(s + 1, &end, 10);
			if (end == s + 1 || errno || !run)
				goto bad_table;
			s = end;
		}
		if (run > max - n)
			goto bad_table;
		memset(t + n, hi << 4 | lo, run);
		n += run;
		if (*s == '.' && s[1])
			s++;
		else if (*s)
			goto bad_table;
	}
	*out = t;
	*len = n;
	return 0;
bad_table:
	free(t);
	return bad(ps, "bad or oversized table=");
}

static int parse_switch(struct parser *ps)
{
	struct layout *l = ps->l;
	size_t i = l->img.nr_switches;
	struct switch_rec *s;
	struct pair *table;
	uint64_t bytes;
	void *g;
	int r;

	/* tables grow with switches: same index */
	g = realloc(l->tables, (i + 1) * sizeof(*l->tables));
	if (!g)
		return -ENOMEM;
	l->tables = g;
	l->tables[i] = NULL;
	g = realloc(l->table_lens, (i + 1) * sizeof(*l->table_lens));
	if (!g)
		return -ENOMEM;
	l->table_lens = g;
	l->table_lens[i] = 0;
	s = ADD(ps, switches, nr_switches, cap_switches);
	if (!s)
		return -ENOMEM;
	r = get_id(ps, "volume", &s->volume);
	if (!r)
		r = get_u64(ps, "region_size", UINT64_MAX, &s->region_size);
	if (!r)
		r = get_u64(ps, "regions", UINT64_MAX / 8, &s->nr_regions);
	if (!r)
		r = get_u32(ps, "paths", 256, &s->nr_paths);
	if (!r)
		r = get_u32(ps, "entry_bits", 8, &s->entry_bits);
	if (r)
		return r;
	table = find(ps, "table");
	if (!table)
		return bad(ps, "missing table=");
	/* at most one byte per region: entry_bits <= 8 */
	bytes = s->nr_regions;
	return parse_table(ps, table->value, bytes, &l->tables[i], &l->table_lens[i]);
}

static int parse_path(struct parser *ps)
{
	struct switch_path_rec *s = ADD(ps, switch_paths, nr_switch_paths, cap_paths);
	int r;

	if (!s)
		return -ENOMEM;
	r = get_id(ps, "volume", &s->volume);
	if (!r)
		r = get_u32(ps, "idx", 255, &s->idx);
	if (!r)
		r = get_id(ps, "device", &s->device);
	if (!r)
		r = get_u64(ps, "offset", UINT64_MAX, &s->dev_offset);
	return r;
}

static int parse_thin_pool(struct parser *ps)
{
	struct thin_pool_rec *t = ADD(ps, thin_pools, nr_thin_pools, cap_thin_pools);
	char when[8];
	int r;

	if (!t)
		return -ENOMEM;
	r = get_id(ps, "volume", &t->volume);
	if (!r)
		r = get_u32(ps, "block_size", UINT32_MAX, &t->block_size);
	if (!r)
		r = get_bool(ps, "zero", &t->zero);
	if (!r)
		r = get_string(ps, "when_full", when, sizeof(when));
	if (!r && strcmp(when, "wait") && strcmp(when, "error"))
		r = bad(ps, "bad when_full='%s'", when);
	t->wait = !strcmp(when, "wait");
	if (!r)
		r = get_u32(ps, "wait_seconds", UINT32_MAX, &t->wait_seconds);
	if (!r)
		r = get_u32(ps, "low_water", 100, &t->low_water);
	if (!r)
		r = get_bool(ps, "discard_passdown", &t->discard_passdown);
	if (!r)
		r = get_u32(ps, "autoextend_threshold", 100, &t->autoextend_threshold);
	if (!r)
		r = get_u32(ps, "autoextend_percent", UINT32_MAX, &t->autoextend_percent);
	if (!r)
		r = get_u64(ps, "metadata_limit", UINT64_MAX, &t->metadata_limit);
	if (!r)
		r = get_string(ps, "on_event", t->on_event, sizeof(t->on_event));
	return r;
}

static int parse_thin(struct parser *ps)
{
	struct thin_rec *t = ADD(ps, thins, nr_thins, cap_thins);
	int r;

	if (!t)
		return -ENOMEM;
	r = get_id(ps, "volume", &t->volume);
	if (!r)
		r = get_id(ps, "pool", &t->pool);
	if (!r)
		r = get_id(ps, "snapshot_of", &t->snapshot_of);
	return r;
}

static int parse_origin(struct parser *ps)
{
	struct thin_origin_rec *o = ADD(ps, origins, nr_origins, cap_origins);
	int r;

	if (!o)
		return -ENOMEM;
	r = get_id(ps, "volume", &o->volume);
	if (!r)
		r = get_id(ps, "origin_volume", &o->origin_volume);
	if (!r)
		r = get_string(ps, "path", o->origin_path, sizeof(o->origin_path));
	if (!r)
		r = get_u64(ps, "size", UINT64_MAX, &o->origin_size);
	if (!r)
		r = get_id(ps, "mtime_ns", &o->origin_mtime_ns);
	return r;
}

static int parse_tag(struct parser *ps)
{
	struct tag_rec *t = ADD(ps, tags, nr_tags, cap_tags);
	char on[8];
	int r;

	if (!t)
		return -ENOMEM;
	r = get_string(ps, "on", on, sizeof(on));
	if (!r && strcmp(on, "volume") && strcmp(on, "device"))
		r = bad(ps, "bad on='%s'", on);
	t->on = !strcmp(on, "device") ? TAG_ON_DEVICE : TAG_ON_VOLUME;
	if (!r)
		r = get_id(ps, "owner", &t->owner);
	if (!r)
		r = get_string(ps, "tag", t->tag, sizeof(t->tag));
	if (!r && !tag_valid(t->tag))
		r = bad(ps, "bad tag='%s'", t->tag);
	return r;
}

static const struct {
	const char *keyword;
	int (*parse)(struct parser *ps);
} records[] = {
	{ "layout", parse_header },
	{ "device", parse_device },
	{ "volume", parse_volume },
	{ "extent", parse_extent },
	{ "stripe", parse_stripe },
	{ "switch", parse_switch },
	{ "path", parse_path },
	{ "thin_pool", parse_thin_pool },
	{ "thin", parse_thin },
	{ "origin", parse_origin },
	{ "tag", parse_tag },
};

static int parse_line(struct parser *ps, char *line)
{
	char *keyword;
	int r;

	if (!*line || *line == '#')
		return 0;
	if (ps->end)
		return bad(ps, "a record after 'end'");
	if (!ps->header && strncmp(line, "layout ", 7))
		return bad(ps, "not a mapperfs layout (whose first record is a 'layout' line)");
	r = split(ps, line, &keyword);
	if (r)
		return r;
	if (!strcmp(keyword, "end")) {
		ps->end = true;
		return ps->nr_pairs ? bad(ps, "'end' takes no values") : 0;
	}
	for (size_t i = 0; i < sizeof(records) / sizeof(records[0]); i++) {
		if (strcmp(keyword, records[i].keyword))
			continue;
		r = records[i].parse(ps);
		if (r)
			return r;
		for (size_t k = 0; k < ps->nr_pairs; k++)
			if (!ps->pairs[k].used)
				return bad(ps, "unknown key '%s' in '%s'", ps->pairs[k].key,
					   keyword);
		return 0;
	}
	return bad(ps, "unknown record '%s'", keyword);
}

/* ---- the references --------------------------------------------------- */

static const struct device_rec *device_of(const struct pool_meta_image *m, int64_t id)
{
	for (size_t i = 0; i < m->nr_devices; i++)
		if (m->devices[i].id == id)
			return &m->devices[i];
	return NULL;
}

const struct volume_rec *layout_volume(const struct pool_meta_image *m, int64_t id)
{
	for (size_t i = 0; i < m->nr_volumes; i++)
		if (m->volumes[i].id == id)
			return &m->volumes[i];
	return NULL;
}

static int check_kind(struct parser *ps, const char *what, int64_t id, const char *kind)
{
	const struct volume_rec *v = layout_volume(&ps->l->img, id);

	if (!v)
		return bad(ps, "%s names volume %" PRId64 ", which the layout lacks", what, id);
	if (kind && strcmp(v->kind, kind))
		return bad(ps, "%s names volume '%s', a %s, not a %s", what, v->name, v->kind,
			   kind);
	return 0;
}

static int check_refs(struct parser *ps)
{
	const struct pool_meta_image *m = &ps->l->img;
	int r = 0;

	ps->line = 0;
	for (size_t i = 0; i < m->nr_devices; i++)
		for (size_t k = 0; k < i; k++)
			if (m->devices[k].id == m->devices[i].id ||
			    !strcmp(m->devices[k].name, m->devices[i].name))
				return bad(ps, "device '%s' twice", m->devices[i].name);
	for (size_t i = 0; i < m->nr_volumes; i++)
		for (size_t k = 0; k < i; k++)
			if (m->volumes[k].id == m->volumes[i].id ||
			    !strcmp(m->volumes[k].name, m->volumes[i].name))
				return bad(ps, "volume '%s' twice", m->volumes[i].name);
	for (size_t i = 0; i < m->nr_extents && !r; i++) {
		const struct extent_rec *e = &m->extents[i];
		const struct device_rec *d = device_of(m, e->device);

		r = check_kind(ps, "an extent", e->volume, NULL);
		if (!r && !d)
			r = bad(ps, "an extent names device %" PRId64 ", which the layout lacks",
				e->device);
		if (!r && (e->dev_offset < DEVICE_DATA_OFFSET || e->length > d->size ||
			   e->dev_offset > d->size - e->length))
			r = bad(ps, "an extent of volume %" PRId64 " lies outside device '%s'",
				e->volume, d->name);
	}
	for (size_t i = 0; i < m->nr_stripes && !r; i++)
		r = check_kind(ps, "a stripe", m->stripes[i].volume, "linear");
	for (size_t i = 0; i < m->nr_switches && !r; i++)
		r = check_kind(ps, "a switch", m->switches[i].volume, "switch");
	for (size_t i = 0; i < m->nr_switch_paths && !r; i++) {
		r = check_kind(ps, "a path", m->switch_paths[i].volume, "switch");
		if (!r && !device_of(m, m->switch_paths[i].device))
			r = bad(ps, "a path names device %" PRId64 ", which the layout lacks",
				m->switch_paths[i].device);
	}
	for (size_t i = 0; i < m->nr_thin_pools && !r; i++)
		r = check_kind(ps, "a thin_pool", m->thin_pools[i].volume, "thin-pool");
	for (size_t i = 0; i < m->nr_thins && !r; i++) {
		r = check_kind(ps, "a thin", m->thins[i].volume, "thin");
		if (!r)
			r = check_kind(ps, "a thin's pool", m->thins[i].pool, "thin-pool");
	}
	for (size_t i = 0; i < m->nr_origins && !r; i++)
		r = check_kind(ps, "an origin", m->origins[i].volume, "thin");
	for (size_t i = 0; i < m->nr_tags && !r; i++) {
		if (m->tags[i].on == TAG_ON_VOLUME)
			r = check_kind(ps, "a tag", m->tags[i].owner, NULL);
		else if (!device_of(m, m->tags[i].owner))
			r = bad(ps, "a tag names device %" PRId64 ", which the layout lacks",
				m->tags[i].owner);
	}
	return r;
}

int layout_parse(const char *text, size_t len, struct layout *out, char *why,
		 size_t why_len)
{
	struct parser ps = { .l = out, .why = why, .why_len = why_len };
	char *copy = malloc(len + 1), *line, *next;
	int r = 0;

	memset(out, 0, sizeof(*out));
	if (!copy)
		return -ENOMEM;
	memcpy(copy, text, len);
	copy[len] = 0;
	if (strlen(copy) != len) {
		r = bad(&ps, "a NUL byte in the text");
		goto out;
	}
	for (line = copy; line && !r; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		ps.line++;
		r = parse_line(&ps, line);
	}
	if (!r && !ps.header)
		r = bad(&ps, "no layout line: not a mapperfs layout");
	else if (!r && !ps.end)
		r = bad(&ps, "no 'end' line: the layout is cut short");
	if (!r)
		r = check_refs(&ps);
out:
	free(copy);
	if (r)
		layout_release(out);
	return r;
}

void layout_release(struct layout *l)
{
	for (size_t i = 0; i < l->img.nr_switches; i++)
		free(l->tables[i]);
	free(l->tables);
	free(l->table_lens);
	free(l->command);
	pool_meta_image_release(&l->img);
	memset(l, 0, sizeof(*l));
}
